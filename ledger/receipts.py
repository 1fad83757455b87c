"""Stamp receipts: HMAC-SHA256 signatures over a stamp event, keyed by material kept outside the events table.

A receipt reads ``clr1.<claims>.<signature>`` where ``claims`` is base64url canonical JSON of the stamp event's
position, hash, session and count plus the key's fingerprint, and ``signature`` is base64url
HMAC-SHA256(key, "clr1." + claims). A receipt is genuine only if the signature checks *and* the ledger still
holds that exact event; either failure makes it ``valid: false``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from ledger.canonical import canonical_json
from ledger.errors import InvalidInput, NotInitialised

PREFIX = "clr1"
MAX_RECEIPT_CHARS = 2048


@dataclass(frozen=True)
class ReceiptKey:
    """The secret that signs receipts, and its public fingerprint."""

    secret: bytes

    @property
    def key_id(self) -> str:
        return hashlib.sha256(b"compliance-ledger receipt key:" + self.secret).hexdigest()[:16]


def create_key(path: Path) -> tuple[ReceiptKey, bool]:
    """Load the key at ``path``, creating it (mode 0600) if absent. Returns ``(key, created)``."""
    path = path.expanduser()
    if path.exists():
        return load_key(path), False
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return load_key(path), False
    with os.fdopen(fd, "w") as fh:
        fh.write(secret.hex() + "\n")
    return ReceiptKey(secret), True


def load_key(path: Path) -> ReceiptKey:
    """Read the receipt key; a missing or malformed key file is :class:`NotInitialised`."""
    path = path.expanduser()
    try:
        text = path.read_text().strip()
        secret = bytes.fromhex(text)
    except FileNotFoundError as exc:
        raise NotInitialised(f"receipt key {path} does not exist", "run `compliance-ledger init`") from exc
    except ValueError as exc:
        raise NotInitialised(f"receipt key {path} is not a hex key", "restore it from backup") from exc
    if len(secret) < 32:
        raise NotInitialised(f"receipt key {path} is shorter than 32 bytes", "restore it from backup")
    return ReceiptKey(secret)


@dataclass(frozen=True)
class ReceiptClaims:
    """What a receipt says about the stamp event it points at."""

    position: int
    hash: str
    session_id: str
    count: int
    key_id: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(key: ReceiptKey, signed: str) -> bytes:
    return hmac.new(key.secret, signed.encode("ascii"), hashlib.sha256).digest()


def sign(key: ReceiptKey, *, position: int, hash: str, session_id: str, count: int) -> str:
    """Return the receipt for the stamp event at ``position``."""
    claims = {"c": count, "h": hash, "k": key.key_id, "p": position, "s": session_id}
    signed = f"{PREFIX}.{_b64(canonical_json(claims).encode('utf-8'))}"
    return f"{signed}.{_b64(_signature(key, signed))}"


def parse(receipt: str) -> tuple[ReceiptClaims, str, bytes]:
    """Split a receipt into its claims, the signed text and the signature; malformed input is InvalidInput."""
    hint = "send the receipt string exactly as assert_compliance returned it (clr1.<claims>.<signature>)"
    receipt = receipt.strip()
    if not receipt or len(receipt) > MAX_RECEIPT_CHARS:
        raise InvalidInput("the receipt is empty or too long", hint)
    parts = receipt.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise InvalidInput("this is not a compliance-ledger receipt", hint)
    try:
        raw = json.loads(_unb64(parts[1]))
        signature = _unb64(parts[2])
        claims = ReceiptClaims(
            position=int(raw["p"]),
            hash=str(raw["h"]),
            session_id=str(raw["s"]),
            count=int(raw["c"]),
            key_id=str(raw["k"]),
        )
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput("the receipt's claims cannot be decoded", hint) from exc
    return claims, f"{parts[0]}.{parts[1]}", signature


def signature_is_genuine(key: ReceiptKey, signed: str, signature: bytes) -> bool:
    """Constant-time check of a receipt's signature."""
    return hmac.compare_digest(_signature(key, signed), signature)
