"""Stamp receipts: signatures over a stamp event, made with keys kept outside the events table.

A receipt reads ``<scheme>.<claims>.<signature>``; ``claims`` is base64url canonical JSON naming the stamp event
and ``signature`` is base64url over ``"<scheme>." + claims``:

* ``clr2`` (issued now): Ed25519 with the ledger's signing key. Anyone holding the public key can check it
  offline (``compliance-ledger verify-stamp RECEIPT --public-key FILE``); claims ``a`` agent, ``c`` count,
  ``h`` event hash, ``k`` key id, ``p`` position, ``s`` session, ``t`` when the stamp was recorded.
* ``clr1`` (issued before): HMAC-SHA256 keyed by ``receipt.key`` (:mod:`ledger.core.receipt_key`); only whoever
  holds that secret — and so could forge one — can check it. Claims ``c``, ``h``, ``k``, ``p``, ``s``. Still
  verified on the ledger host.

A receipt is genuine only if the signature checks *and* the ledger still holds that exact event; either failure
makes it ``valid: false``. Claims are parsed strictly: a number out of range or not a whole number (``1e999``,
``Infinity``, ``2**64``) makes a receipt malformed, never an error.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from ledger.core.canonical import canonical_json, format_ts
from ledger.core.errors import InvalidInput
from ledger.core.receipt_key import ReceiptKey
from ledger.core.signing import PublicKey, SigningKey, b64url, unb64url

HMAC_SCHEME = "clr1"
ED25519_SCHEME = "clr2"
PREFIX = HMAC_SCHEME  # the scheme of receipts issued before Ed25519
MAX_RECEIPT_CHARS = 2048
MAX_POSITION = 2**63 - 1
MAX_COUNT = 2**31 - 1
_HINT = "send the receipt string exactly as assert_compliance returned it (clr2.<claims>.<signature>)"
_HEX = re.compile(r"^[0-9a-f]+$")


@dataclass(frozen=True)
class ReceiptClaims:
    """What a receipt says about the stamp event it points at."""

    scheme: str
    position: int
    hash: str
    session_id: str
    count: int
    key_id: str
    agent: str | None = None  # clr2 only
    recorded_at: str | None = None  # clr2 only


@dataclass(frozen=True)
class Receipt:
    """A parsed receipt: its claims, the text its signature covers, and the signature."""

    claims: ReceiptClaims
    signed: str
    signature: bytes


def sign(
    key: SigningKey, *, position: int, hash: str, session_id: str, count: int, agent: str, recorded_at: Any
) -> str:
    """Return the Ed25519 (``clr2``) receipt for the stamp event at ``position``."""
    claims = {
        "a": agent,
        "c": count,
        "h": hash,
        "k": key.key_id,
        "p": position,
        "s": session_id,
        "t": format_ts(recorded_at),
    }
    signed = f"{ED25519_SCHEME}.{b64url(canonical_json(claims).encode('utf-8'))}"
    return f"{signed}.{b64url(key.sign(signed.encode('ascii')))}"


def sign_hmac(key: ReceiptKey, *, position: int, hash: str, session_id: str, count: int) -> str:
    """Return a ``clr1`` receipt, as issued before Ed25519 (kept to test that old receipts still verify)."""
    claims = {"c": count, "h": hash, "k": key.key_id, "p": position, "s": session_id}
    signed = f"{HMAC_SCHEME}.{b64url(canonical_json(claims).encode('utf-8'))}"
    return f"{signed}.{b64url(_hmac(key, signed))}"


def _hmac(key: ReceiptKey, signed: str) -> bytes:
    return hmac.new(key.secret, signed.encode("ascii"), hashlib.sha256).digest()


def parse(receipt: str) -> Receipt:
    """Split a receipt into its claims, the signed text and the signature; anything malformed is InvalidInput."""
    if not isinstance(receipt, str):
        raise InvalidInput("the receipt is not text", _HINT)
    receipt = receipt.strip()
    if not receipt or len(receipt) > MAX_RECEIPT_CHARS:
        raise InvalidInput("the receipt is empty or too long", _HINT)
    parts = receipt.split(".")
    if len(parts) != 3 or parts[0] not in (HMAC_SCHEME, ED25519_SCHEME):
        raise InvalidInput("this is not a compliance-ledger receipt", _HINT)
    scheme = parts[0]
    try:
        raw = json.loads(unb64url(parts[1]), parse_constant=_no_constants)
        signature = unb64url(parts[2])
        claims = _claims(scheme, raw)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidInput(f"the receipt's claims cannot be read ({exc})", _HINT) from exc
    return Receipt(claims, f"{parts[0]}.{parts[1]}", signature)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _whole(raw: dict[str, Any], name: str, low: int, high: int) -> int:
    value = raw[name]
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"claim {name!r} must be a whole number from {low} to {high}")
    return value


def _text(raw: dict[str, Any], name: str, limit: int = 128, hex_only: bool = False) -> str:
    value = raw[name]
    if not isinstance(value, str) or not 0 < len(value) <= limit or (hex_only and not _HEX.match(value)):
        raise ValueError(f"claim {name!r} is not valid")
    return value


def _claims(scheme: str, raw: Any) -> ReceiptClaims:
    if not isinstance(raw, dict):
        raise ValueError("the claims are not an object")
    expected = {"c", "h", "k", "p", "s"} | ({"a", "t"} if scheme == ED25519_SCHEME else set())
    if set(raw) != expected:
        raise ValueError(f"the claims must be exactly {sorted(expected)}")
    return ReceiptClaims(
        scheme=scheme,
        position=_whole(raw, "p", 1, MAX_POSITION),
        hash=_text(raw, "h", 64, hex_only=True),
        session_id=_text(raw, "s"),
        count=_whole(raw, "c", 0, MAX_COUNT),
        key_id=_text(raw, "k", 16, hex_only=True),
        agent=_text(raw, "a") if scheme == ED25519_SCHEME else None,
        recorded_at=_text(raw, "t", 32) if scheme == ED25519_SCHEME else None,
    )


def hmac_is_genuine(key: ReceiptKey, receipt: Receipt) -> bool:
    """Constant-time check of a ``clr1`` receipt's signature."""
    return hmac.compare_digest(_hmac(key, receipt.signed), receipt.signature)


def ed25519_is_genuine(key: PublicKey, receipt: Receipt) -> bool:
    """Check a ``clr2`` receipt's signature with the ledger's public key."""
    return key.verify(receipt.signature, receipt.signed.encode("ascii"))
