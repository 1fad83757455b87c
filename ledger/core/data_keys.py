"""Free text encrypted under per-subject data keys, so that destroying a key erases the text (crypto-shredding)
while the hash chain, the row authenticators and the transparency-log tree, which hash the stored ciphertext, keep
verifying.

**What is encrypted.** Every field an event class declares ``free`` in its inventory of text
(:mod:`ledger.core.free_text`), as a whole JSON value. In the stored payload the field holds
``{"enc": "v1", "kid": <key id>, "ct": <base64 of nonce + AES-256-GCM ciphertext of the value's canonical JSON>}``
and the event's metadata carries ``"enc": "v1"``, so a plaintext event written before (whose caller-made dict
could look like that) is never read as ciphertext. The associated data binds a ciphertext to its place:
``clr-data-v1|<stream>|<type>|<subject>|<field>``.

**Subjects and keys.** The subject is the stream the event is appended to: ``block:<id>`` for a block's content and
context, ``session:<id>`` for a session's queries, focus and proofs, ``task:<id>`` for a task's notes and DNA. Each
subject has a random 256-bit data key in the ``data_keys`` table (outside ``events``, created with the schema:
version 2), wrapped with AES-256-GCM under the key-encryption key (associated data: subject and key id). The KEK is
derived with HKDF-SHA256 from the receipt key's secret, so it lives in the receipt key file beside the signing key
and never in the database. A subject's first key is made for the append that first needs it (:meth:`DataKeys.seal`
adds it to the append's list) and its row is written in that append's transaction (:meth:`DataKeys.write`, by the
store); it is cached for later appends once that committed (:meth:`DataKeys.adopt`).

**Reads.** :meth:`DataKeys.open` decrypts a payload's fields; a field whose key was destroyed (erased) becomes an
empty value of its kind (``[erased]`` for text, ``{}`` / ``[]``) and the record is marked unreadable, so folds still
run and read models skip its text. After each read of events, before decoding them, the store calls
:meth:`DataKeys.refresh`: the keys named by erasures committed since (in any process) are forgotten, never used
again.

**Destroying a key** deletes its row (SQLite: the store's connections run with ``secure_delete``, so the cell is
zeroed; the WAL is checkpointed and truncated by :meth:`DataKeys.scrub`), or on PostgreSQL deletes it and vacuums the
table (what stays possible: docs/DESIGN_NOTES.md, "Free text encrypted, and erasure").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy.engine import Engine

from ledger.core.canonical import canonical_json, format_ts
from ledger.core.clock import now
from ledger.core.sealed import ERASED_TEXT, VERSION, NewKey, is_sealed
from ledger.core.storage.driver_errors import translate_errors

__all__ = ["ERASED_TEXT", "VERSION", "DataKeys", "NewKey", "derive", "is_sealed", "keyed_id"]

KEK_INFO = b"compliance-ledger data-key KEK v1"
BLOCK_ID_INFO = b"compliance-ledger block id v1"
_NONCE = 12


def derive(secret: bytes, info: bytes) -> bytes:
    """A 32-byte key derived from the receipt key's ``secret`` (HKDF-SHA256, no salt, ``info``)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)


def keyed_id(secret: bytes, text: str) -> str:
    """HMAC-SHA256 of ``text`` under ``secret``, in hex: an id that does not confirm a guessed text."""
    return hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()


def _ad(stream: str, type_name: str, field: str) -> bytes:
    return f"clr-data-{VERSION}|{stream}|{type_name}|{stream}|{field}".encode()


_ERASURES = ("MemoryErased", "SessionErased")
"""The events that destroy data keys (their ``key_ids``): what another process's erasures are learnt from."""
_INSERT = "INSERT INTO data_keys (kid, subject, wrapped, created_at) VALUES (?, ?, ?, ?)"


class DataKeys:
    """The one key service: data keys by subject (made for the first append that needs one, their row written in
    that append's transaction), encryption of an event's free fields on append, decryption on read, and the
    destruction of a subject's keys."""

    def __init__(self, engine: Engine, receipt_secret: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.engine = engine
        self.dialect = engine.dialect.name
        self._kek = AESGCM(derive(receipt_secret, KEK_INFO))
        self.block_secret = derive(receipt_secret, BLOCK_ID_INFO)
        self._lock = threading.Lock()
        self._by_subject: dict[str, tuple[str, Any]] = {}  # subject -> (kid, AESGCM) used to encrypt
        self._by_kid: dict[str, Any] = {}  # kid -> AESGCM
        self._gone: set[str] = set()  # kids known destroyed (a committed event names only committed keys)
        self._erasures = 0  # the position of the last erasure event read (see :meth:`refresh`)

    # --- the table ----------------------------------------------------------------------------------------

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.dialect == "postgresql" else text

    def _unwrap(self, subject: str, kid: str, wrapped: bytes) -> Any:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        raw = self._kek.decrypt(bytes(wrapped[:_NONCE]), bytes(wrapped[_NONCE:]), f"{subject}|{kid}".encode())
        return AESGCM(raw)

    def make(self, subject: str) -> NewKey:
        """A new random data key for ``subject``, wrapped under the KEK; nothing is written."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        kid, raw = secrets.token_hex(16), AESGCM.generate_key(bit_length=256)
        nonce = secrets.token_bytes(_NONCE)
        wrapped = nonce + self._kek.encrypt(nonce, raw, f"{subject}|{kid}".encode())
        return NewKey(kid, subject, wrapped, format_ts(now()), AESGCM(raw))

    def write(self, cur: Any, keys: Sequence[NewKey]) -> None:
        """Insert ``keys``' rows with ``cur``, inside the transaction that appends the events sealed under them:
        an append that fails or rolls back leaves no key behind, and no committed event names a key not stored."""
        if keys:
            cur.executemany(self._sql(_INSERT), [k.row for k in keys])

    def adopt(self, keys: Sequence[NewKey]) -> None:
        """``keys`` were committed with their append: later appends of their subjects encrypt under them."""
        with self._lock:
            for k in keys:
                self._by_subject[k.subject] = (k.kid, k.aead)
                self._by_kid[k.kid] = k.aead

    def key_for(self, subject: str, made: list[NewKey] | None = None, *, fresh: bool = False) -> tuple[str, Any]:
        """The key that encrypts ``subject``'s text now: its newest stored one, else one made now and added to
        ``made`` for the caller's append to write (``made`` is None: written and committed here, on its own).
        ``fresh``: the subject's stream is new (an append at version 0), so no stored key is looked for."""
        with self._lock:
            found = self._by_subject.get(subject)
        if found is not None:
            return found
        for k in made or ():
            if k.subject == subject:
                return k.kid, k.aead
        if not fresh:
            with translate_errors(self.dialect), self.engine.connect() as conn:
                row = conn.exec_driver_sql(
                    self._sql(
                        "SELECT kid, wrapped FROM data_keys WHERE subject = ? ORDER BY created_at DESC, kid LIMIT 1"
                    ),
                    (subject,),
                ).fetchone()
            if row is not None:
                kid, aead = str(row[0]), self._unwrap(subject, str(row[0]), bytes(row[1]))
                with self._lock:
                    if kid not in self._gone:
                        self._by_subject[subject] = (kid, aead)
                        self._by_kid[kid] = aead
                        return kid, aead
        key = self.make(subject)
        if made is not None:
            made.append(key)
            return key.kid, key.aead
        with translate_errors(self.dialect), self.engine.begin() as conn:
            conn.exec_driver_sql(self._sql(_INSERT), key.row)
        self.adopt([key])
        return key.kid, key.aead

    def refresh(self, cur: Any) -> None:
        """Learn the erasures committed since the last look (by this process or another), with ``cur``: the keys
        they name are forgotten and never used again, even if this process had read them before. One index probe
        (events by type and position) when there is none; the store's reads call it after each read of events
        that returned rows, before they are decoded."""
        sql = self._sql(
            "SELECT position, stream, data FROM events WHERE type IN (?, ?) AND position > ? ORDER BY position"
        )
        cur.execute(sql, (*_ERASURES, self._erasures))
        rows = cur.fetchall()
        if not rows:
            return
        with self._lock:
            for position, stream, data in rows:
                for kid in json.loads(data).get("key_ids") or ():
                    self._gone.add(str(kid))
                    self._by_kid.pop(str(kid), None)
                found = self._by_subject.get(str(stream))
                if found is not None and found[0] in self._gone:
                    del self._by_subject[str(stream)]
                self._erasures = max(self._erasures, int(position))

    def _key(self, subject: str, kid: str) -> Any | None:
        with self._lock:
            if kid in self._gone:
                return None
            aead = self._by_kid.get(kid)
        if aead is not None:
            return aead
        with translate_errors(self.dialect), self.engine.connect() as conn:
            row = conn.exec_driver_sql(
                self._sql("SELECT wrapped FROM data_keys WHERE subject = ? AND kid = ?"), (subject, kid)
            ).fetchone()
        with self._lock:
            if row is None:
                self._gone.add(kid)
                return None
            aead = self._by_kid[kid] = self._unwrap(subject, kid, bytes(row[0]))
        return aead

    def key_ids(self, subject: str) -> list[str]:
        """The ids of ``subject``'s data keys (none when its text was never encrypted or is erased)."""
        with translate_errors(self.dialect), self.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                self._sql("SELECT kid FROM data_keys WHERE subject = ? ORDER BY kid"), (subject,)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def destroy(self, subject: str) -> list[str]:
        """Delete every data key of ``subject`` so that no copy stays in the database files; returns their ids."""
        kids = self.key_ids(subject)
        with self._lock:
            self._by_subject.pop(subject, None)
            for kid in kids:
                self._by_kid.pop(kid, None)
                self._gone.add(kid)
        with translate_errors(self.dialect):
            self._delete(subject)
        return kids

    def _delete(self, subject: str) -> None:
        if self.dialect == "sqlite":
            raw = self.engine.raw_connection()
            try:
                cur = raw.cursor()
                cur.execute("PRAGMA secure_delete=ON")  # the store's connections have it on; said here too
                cur.execute("BEGIN IMMEDIATE")
                cur.execute("DELETE FROM data_keys WHERE subject = ?", (subject,))
                raw.commit()
                cur.close()
            finally:
                raw.close()
        else:
            with self.engine.begin() as conn:
                conn.exec_driver_sql("DELETE FROM data_keys WHERE subject = %s", (subject,))
            # A plain VACUUM (not FULL: no rewrite of the table) frees the dead row and compacts its page: the
            # rows after it on the page are moved over its bytes; the row last written on its page leaves them in
            # the page's free space until a row is written there (checked on PostgreSQL 15 by reading the table's
            # file). With INDEX_CLEANUP OFF nothing was compacted, every key's bytes stayed: the indexes are scanned.
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM data_keys")

    def scrub(self, tables: tuple[str, ...] = ("memory_index", "memory_vectors", "projection_snapshots")) -> None:
        """After an erasure purged derived rows. SQLite: every connection has ``secure_delete`` on, so the deleted
        rows and the pages freed were zeroed as they went; the WAL, which still holds the pages as they were, is
        checkpointed into the file and truncated. PostgreSQL: the derived tables are vacuumed (a page not yet
        reused, the WAL and backups may still hold old bytes: documented)."""
        with translate_errors(self.dialect):
            self._scrub(tables)

    def _scrub(self, tables: tuple[str, ...]) -> None:
        if self.dialect == "sqlite":
            raw = self.engine.raw_connection()
            try:
                cur = raw.cursor()
                cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                cur.close()
            finally:
                raw.close()
            return
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for table in tables:
                if conn.exec_driver_sql("SELECT to_regclass(%s)", (table,)).scalar() is not None:
                    conn.exec_driver_sql(f"VACUUM {table}")

    # --- fields -------------------------------------------------------------------------------------------

    def seal(
        self,
        stream: str,
        type_name: str,
        payload: dict[str, Any],
        fields: Iterable[str],
        made: list[NewKey] | None = None,
        *,
        fresh: bool = False,
    ) -> bool:
        """Encrypt ``payload``'s ``fields`` in place (those that hold something); whether any was. A key made for
        it is added to ``made`` (see :meth:`key_for`)."""
        sealed = False
        aead: Any = None
        kid = ""
        for name in fields:
            value = payload.get(name)
            if value is None or value in ("", {}, []):
                continue
            if aead is None:
                kid, aead = self.key_for(stream, made, fresh=fresh)
            nonce = secrets.token_bytes(_NONCE)
            ct = aead.encrypt(nonce, canonical_json(value).encode("utf-8"), _ad(stream, type_name, name))
            payload[name] = {"enc": VERSION, "kid": kid, "ct": base64.b64encode(nonce + ct).decode("ascii")}
            sealed = True
        return sealed

    def open(self, stream: str, type_name: str, payload: dict[str, Any]) -> list[str]:
        """Decrypt ``payload``'s sealed fields in place; returns the fields that could not be (their key is
        destroyed: erased), left as they are for the caller to blank."""
        erased: list[str] = []
        for name, value in list(payload.items()):
            if not is_sealed(value):
                continue
            aead = self._key(stream, str(value["kid"]))
            if aead is None:
                erased.append(name)
                continue
            blob = base64.b64decode(value["ct"])
            plain = aead.decrypt(blob[:_NONCE], blob[_NONCE:], _ad(stream, type_name, name))
            payload[name] = json.loads(plain)
        return erased
