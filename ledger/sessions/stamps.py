"""Checking stamp receipts: the signature (offline, with the public key alone) and the event it points at."""

from __future__ import annotations

from ledger.core.canonical import parse_ts
from ledger.core.chain import StoredRecord
from ledger.core.errors import InvalidInput
from ledger.core.events import ComplianceStamped
from ledger.core.mapper import decode
from ledger.core.signing import PublicKey
from ledger.sessions import receipts
from ledger.sessions.report import StampVerification

FORGED = "the signature does not match: the receipt is forged or was altered"


def read(text: str) -> receipts.Receipt | StampVerification:
    """The parsed receipt, or the ``valid: false`` verdict for a malformed one."""
    try:
        return receipts.parse(text)
    except InvalidInput as exc:
        return StampVerification(valid=False, reason=f"not a well-formed receipt: {exc.message}")


def signature_problem(
    receipt: receipts.Receipt, *, public: PublicKey | None, hmac_key: receipts.ReceiptKey | None
) -> str | None:
    """Why the receipt's signature is not the ledger's (None when it is)."""
    claims = receipt.claims
    if claims.scheme == receipts.ED25519_SCHEME:
        if public is None:
            return "no public key to check an Ed25519 receipt with"
        if claims.key_id != public.key_id:
            return f"signed by key {claims.key_id}, not by the ledger key {public.key_id} (forged)"
        return None if receipts.ed25519_is_genuine(public, receipt) else FORGED
    if hmac_key is None:
        return (
            "an HMAC receipt (clr1) can only be checked with the ledger's secret receipt key: "
            "verify it on the ledger host, without --public-key"
        )
    if claims.key_id != hmac_key.key_id:
        return "signed by a key this ledger does not hold (forged)"
    return None if receipts.hmac_is_genuine(hmac_key, receipt) else FORGED


def verify_offline(text: str, public: PublicKey) -> StampVerification:
    """Check a receipt with the public key alone: is it the ledger's signature? (The log is not consulted.)"""
    receipt = read(text)
    if isinstance(receipt, StampVerification):
        return receipt
    claims = receipt.claims
    problem = signature_problem(receipt, public=public, hmac_key=None)
    if problem is not None:
        return StampVerification(valid=False, reason=problem, scheme=claims.scheme)
    return StampVerification(
        valid=True,
        reason=f"signed by ledger key {public.key_id} (offline: whether the log still holds the "
        "event was not checked; verify on the ledger for that)",
        scheme=claims.scheme,
        checked_against_log=False,
        position=claims.position,
        event_hash=claims.hash,
        session_id=claims.session_id,
        agent=claims.agent,
        count=claims.count,
        recorded_at=parse_ts(claims.recorded_at) if claims.recorded_at else None,
    )


def check_record(rec: StoredRecord | None, claims: receipts.ReceiptClaims) -> StampVerification:
    """Whether the log still holds exactly the stamp event a (genuinely signed) receipt names."""

    def refuse(reason: str) -> StampVerification:
        return StampVerification(
            valid=False,
            reason=reason,
            scheme=claims.scheme,
            position=claims.position,
            session_id=claims.session_id,
            count=claims.count,
        )

    if rec is None:
        return refuse("the ledger has no event at that position")
    if rec.computed_hash() != rec.hash:
        return refuse("the stamp event was altered after it was recorded")
    if rec.hash != claims.hash:
        return refuse("the event at that position is not the one signed")
    event = decode(rec)
    e = event.event
    if not isinstance(e, ComplianceStamped) or e.session_id != claims.session_id or e.count != claims.count:
        return refuse("the event at that position is not this stamp")
    if claims.agent is not None and claims.agent != event.agent:
        return refuse("the event at that position was stamped for another agent")
    return StampVerification(
        valid=True,
        reason="signed by this ledger and matching the recorded stamp event",
        scheme=claims.scheme,
        position=rec.position,
        event_hash=rec.hash,
        session_id=e.session_id,
        agent=event.agent,
        count=e.count,
        stamp=e.stamp,
        recorded_at=event.recorded_at,
    )
