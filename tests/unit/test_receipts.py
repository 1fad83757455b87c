"""Receipts checked offline: the public key alone says whether the ledger signed one — no database here."""

from __future__ import annotations

import datetime as _dt

import pytest

from ledger.core import signing
from ledger.sessions import receipts, stamps

KEY = signing.SigningKey.generate()
AT = _dt.datetime(2026, 5, 1, 12, 0, tzinfo=_dt.UTC)


def issued(**changes: object) -> str:
    claims: dict[str, object] = dict(
        position=42, hash="c" * 64, session_id="ses_" + "a" * 20, count=3, agent="alice", recorded_at=AT
    )
    claims.update(changes)
    return receipts.sign(KEY, **claims)  # type: ignore[arg-type]


def test_a_receipt_verifies_offline_from_the_public_key_alone() -> None:
    public = signing.PublicKey.from_text(KEY.public.pem)  # what an auditor was given, nothing more

    verdict = stamps.verify_offline(issued(), public)

    assert verdict.valid and verdict.scheme == "clr2" and not verdict.checked_against_log
    assert (verdict.position, verdict.count, verdict.agent, verdict.recorded_at) == (42, 3, "alice", AT)


@pytest.mark.parametrize(
    "receipt",
    [
        issued().replace("clr2.", "clr1.", 1),
        issued()[:-4] + "AAAA",
        receipts.sign(
            signing.SigningKey.generate(),
            position=42,
            hash="c" * 64,
            session_id="s",
            count=3,
            agent="a",
            recorded_at=AT,
        ),
        "clr2.e30.AAAA",
        "",
        "x" * 5000,
    ],
    ids=["scheme swapped", "signature altered", "another key", "empty claims", "empty", "too long"],
)
def test_what_the_ledger_did_not_sign_is_not_genuine_offline(receipt: str) -> None:
    verdict = stamps.verify_offline(receipt, KEY.public)
    assert verdict.valid is False and verdict.reason
