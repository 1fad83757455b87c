"""Row authenticators: proof that the ledger itself wrote an event row.

The chain trigger checks that a new row extends the chain, not who wrote it, so anyone with INSERT rights on the
database could append a correctly chained row. Every row therefore carries an authenticator in its ``mac``
column, written with it: ``HMAC-SHA256(row key, the 32 raw bytes of the row's chain hash)``. The
row key lives outside the database: it is derived with HKDF-SHA256 (info :data:`INFO`) from the ledger's receipt
key secret, which sits beside the signing key in the ledger's home and never enters the database. The chain hash
already covers the row's position, stream, version, type, payload, metadata, time and predecessor, so the
authenticator binds all of them: every read that returns a row's columns recomputes its hash from them and checks
the authenticator over it (reads of hashes alone, for the tree, check the authenticator over the stored hash).
"""

from __future__ import annotations

import hashlib
import hmac

from ledger.core.chain import row_hash
from ledger.core.errors import IntegrityViolation

INFO = b"compliance-ledger/row-authenticator/v1"
MAC_SIZE = 32
_BLOCK = 64  # SHA-256's block size: HMAC's key pads (RFC 2104)

_HINT = (
    "something other than this ledger wrote to its database, so nothing is decided on that event and nothing is "
    "appended after it: run `compliance-ledger verify`, and restore the database from a backup taken before that "
    "position (if every event fails, the receipt key file is not this ledger's: restore LEDGER_KEY_FILE)"
)


class RowKey:
    """The key of the row authenticators (an HMAC-SHA256 key) and its public fingerprint ``key_id``.

    The pads are hashed once here and copied per row: a fresh ``hmac`` object per row costs three to five times
    more (the gate's read checks every event of a session)."""

    __slots__ = ("_inner", "_outer", "key_id")

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("a row key has 32 bytes")
        padded = key.ljust(_BLOCK, b"\0")
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in padded))
        self._outer = hashlib.sha256(bytes(b ^ 0x5C for b in padded))
        self.key_id = hashlib.sha256(b"compliance-ledger row key:" + key).hexdigest()[:16]

    @classmethod
    def derive(cls, secret: bytes) -> RowKey:
        """The row key of the ledger whose receipt key secret is ``secret`` (HKDF-SHA256, no salt, :data:`INFO`)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        return cls(HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=INFO).derive(secret))

    def __repr__(self) -> str:
        return f"RowKey(key_id={self.key_id!r})"

    def mac(self, digest: bytes) -> bytes:
        """HMAC-SHA256 of ``digest`` (a chain hash's 32 raw bytes)."""
        inner = self._inner.copy()
        inner.update(digest)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def macs(self, hashes: list[str]) -> bytes:
        """The authenticators of chain hashes given in hex, concatenated (32 bytes each)."""
        return b"".join([self.mac(bytes.fromhex(h)) for h in hashes])

    def check(self, position: int, hash_hex: str, mac: bytes | None) -> None:
        """Raise :class:`IntegrityViolation` naming ``position`` unless ``mac`` authenticates ``hash_hex``."""
        if mac is None:
            raise IntegrityViolation(f"the event at position {position} has no authenticator", _HINT, position)
        if not hmac.compare_digest(self.mac(bytes.fromhex(hash_hex)), mac):
            raise IntegrityViolation(f"the event at position {position} has a wrong authenticator", _HINT, position)

    def check_rows(self, rows: list[tuple], hash_at: int, *, content: bool = False) -> None:  # type: ignore[type-arg]
        """Check each row (position first, its hash at ``hash_at``, its authenticator last); the first bad row
        raises :class:`IntegrityViolation` naming its position. The replay path: about a microsecond a row.

        ``content``: the rows hold every hashed column in the table's order (position … prev_hash, then the hash
        at 9), and each row's hash is recomputed from them first. The authenticator vouches for the hash; only
        the recomputed hash ties the columns read to it (a row rewritten under its old hash and authenticator,
        triggers off, would otherwise be decided on). About three microseconds a row more."""
        inner, outer, compare, unhex = self._inner, self._outer, hmac.compare_digest, bytes.fromhex
        for row in rows:
            mac = row[-1]
            if content and row_hash(*row[:9]) != row[9]:
                raise IntegrityViolation(
                    f"the event at position {row[0]} does not match its hash: its columns were changed after it "
                    "was written",
                    _HINT,
                    row[0],
                )
            i = inner.copy()
            i.update(unhex(row[hash_at]))
            o = outer.copy()
            o.update(i.digest())
            if mac is None or not compare(o.digest(), mac):
                self.check(row[0], row[hash_at], mac)

    def strip(self, rows: list[tuple], hash_at: int) -> list[tuple]:  # type: ignore[type-arg]
        """:meth:`check_rows`, then the rows without their authenticator."""
        self.check_rows(rows, hash_at)
        return [row[:-1] for row in rows]
