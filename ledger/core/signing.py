"""The ledger's Ed25519 key: it signs checkpoints of the chain head and stamp receipts.

The private key lives in a file outside the database (PKCS#8 PEM, mode 0600), created by ``init`` beside the
receipt key. Anyone holding the public key — ``compliance-ledger keys public`` or ``GET /keys/public``, as PEM
or JWK — can check a signature offline, without the database and without being able to sign.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger.core.errors import InvalidInput, NotInitialised

ALG = "Ed25519"
MAX_KEY_FILE_BYTES = 16_384


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """Decode unpadded base64url; anything else raises ``ValueError``."""
    if not isinstance(text, str) or not text.isascii():
        raise ValueError("not base64url text")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:
        raise ValueError(str(exc)) from exc


@dataclass(frozen=True)
class PublicKey:
    """A ledger's public key: checks signatures, cannot make them."""

    key: Ed25519PublicKey

    @property
    def raw(self) -> bytes:
        return self.key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    @property
    def key_id(self) -> str:
        """A short public fingerprint: the first 16 hex digits of SHA-256 over the raw public key."""
        return hashlib.sha256(self.raw).hexdigest()[:16]

    @property
    def pem(self) -> str:
        return self.key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode("ascii")

    @property
    def jwk(self) -> dict[str, str]:
        """RFC 8037 JSON Web Key."""
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(self.raw), "kid": self.key_id, "use": "sig", "alg": "EdDSA"}

    def verify(self, signature: bytes, message: bytes) -> bool:
        try:
            self.key.verify(signature, message)
        except InvalidSignature:
            return False
        return True

    @classmethod
    def from_raw(cls, raw: bytes) -> PublicKey:
        return cls(Ed25519PublicKey.from_public_bytes(raw))

    @classmethod
    def from_text(cls, text: str, source: str = "the public key") -> PublicKey:
        """Read a public key given as PEM or as a JWK (JSON); a private key file is accepted too."""
        hint = "give the PEM or JWK printed by `compliance-ledger keys public` (or served at GET /keys/public)"
        stripped = text.strip()
        try:
            if stripped.startswith("{"):
                jwk = json.loads(stripped)
                if not isinstance(jwk, dict) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
                    raise ValueError("not an Ed25519 JWK")
                return cls(Ed25519PublicKey.from_public_bytes(unb64url(str(jwk.get("x", "")))))
            data = stripped.encode("ascii")
            if b"PRIVATE KEY" in data:
                return SigningKey.from_pem(data, source).public
            loaded = serialization.load_pem_public_key(data)
        except (ValueError, UnicodeError, TypeError) as exc:
            raise InvalidInput(f"{source} is not an Ed25519 public key ({exc})", hint) from exc
        if not isinstance(loaded, Ed25519PublicKey):
            raise InvalidInput(f"{source} is not an Ed25519 public key", hint)
        return cls(loaded)

    @classmethod
    def load(cls, path: Path) -> PublicKey:
        path = path.expanduser()
        try:
            with path.open("rb") as fh:
                data = fh.read(MAX_KEY_FILE_BYTES + 1)
        except OSError as exc:
            raise InvalidInput(f"cannot read {path}: {exc.strerror}", "give a readable public key file") from exc
        if len(data) > MAX_KEY_FILE_BYTES:
            raise InvalidInput(f"{path} is too large to be a key", "give the PEM or JWK of the ledger's public key")
        return cls.from_text(data.decode("utf-8", errors="replace"), str(path))


@dataclass(frozen=True)
class SigningKey:
    """The ledger's private signing key."""

    key: Ed25519PrivateKey

    @property
    def public(self) -> PublicKey:
        return PublicKey(self.key.public_key())

    @property
    def key_id(self) -> str:
        return self.public.key_id

    def sign(self, message: bytes) -> bytes:
        return self.key.sign(message)

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, data: bytes, source: str = "the signing key") -> SigningKey:
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise NotInitialised(f"{source} is not a PEM private key ({exc})", "restore it from backup") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise NotInitialised(f"{source} is not an Ed25519 key", "restore the ledger's signing key from backup")
        return cls(key)

    def to_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def load_signing_key(path: Path) -> SigningKey:
    """Read the signing key; a missing or malformed file is :class:`NotInitialised`."""
    path = path.expanduser()
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise NotInitialised(f"signing key {path} does not exist", "run `compliance-ledger init`") from exc
    except OSError as exc:
        raise NotInitialised(f"cannot read signing key {path}: {exc.strerror}", "check the file's permissions") from exc
    return SigningKey.from_pem(data, f"signing key {path}")


def create_signing_key(path: Path) -> tuple[SigningKey, bool]:
    """Load the key at ``path``, creating it (mode 0600) if absent. Returns ``(key, created)``."""
    path = path.expanduser()
    if path.exists():
        return load_signing_key(path), False
    path.parent.mkdir(parents=True, exist_ok=True)
    key = SigningKey.generate()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return load_signing_key(path), False
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.to_pem())
    return key, True


def public_key_document(key: PublicKey) -> dict[str, Any]:
    """What ``GET /keys/public`` and ``keys public --json`` show."""
    return {"key_id": key.key_id, "alg": ALG, "pem": key.pem, "jwk": key.jwk}
