"""The ledger's receipt key: a 32-byte secret in a file outside the database (mode 0600), beside the signing key.

It binds a ledger to its key files (its id is recorded when the ledger is initialised), keys the row
authenticators and the anchor challenges' line digests, and signed the ``clr1`` receipts issued before Ed25519.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from ledger.core.errors import NotInitialised


@dataclass(frozen=True)
class ReceiptKey:
    """The HMAC secret that signed ``clr1`` receipts, and its public fingerprint."""

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
