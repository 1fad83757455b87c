"""Projection snapshots: a runner's states at a position, so a new process restores them and folds only the tail.

A snapshot row holds a runner's name, the **code version** of the folds that made it, the position and head
hash it was taken at, the payload (``projections.codec``: typed JSON, never ``pickle``) and an Ed25519
signature by the ledger key over all of those. It is derived data and trusted only when it proves itself:

* its code version equals this code's (any change to a fold, an event class or the codec changes the version,
  so a snapshot of other code is ignored and rebuilt, never misread);
* its signature checks against the ledger's public key (someone who can write the database but does not hold
  the key cannot plant a state that would PASS a gate);
* the event at its position is still in the log with the hash it recorded (a rewritten or truncated log makes
  every later snapshot stale).

A snapshot failing any check is skipped (logged) and the runner folds from an older one or from zero.
Writing is one INSERT in its own transaction, so a process killed while writing leaves either the whole row or
none. Several processes (``serve`` nodes on one PostgreSQL) share the rows, and write them at the configured rate
between them: the background writer of a runner works under a lease (one node at a time; a node that finds another
writing skips) and writes only when its position is :attr:`Snapshots.every` events past the newest snapshot of that
runner in the table, whoever wrote it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.core import clock as _clock
from ledger.core import signing
from ledger.core.canonical import format_ts
from ledger.core.events import RecordedEvent
from ledger.core.storage import SNAPSHOT_LEASE, SNAPSHOT_LOCK, LedgerStore, translate_errors
from projections import codec
from projections.runner import ProjectionRunner

log = logging.getLogger(__name__)

KEEP = 3
"""Snapshots kept per runner (the newest); older ones are deleted when a new one is written."""
DEFAULT_EVERY = 10_000
"""Events folded since the last snapshot after which a runner writes a new one."""
HOLD_SECONDS = 120.0
"""How long the background writer may hold the snapshot lease (encoding and signing a large state takes seconds)."""

_DDL = {
    "sqlite": """CREATE TABLE IF NOT EXISTS projection_snapshots (
        name TEXT NOT NULL, code_version TEXT NOT NULL, position INTEGER NOT NULL, head_hash TEXT NOT NULL,
        key_id TEXT NOT NULL, signature TEXT NOT NULL, created_at TEXT NOT NULL, payload BLOB NOT NULL,
        PRIMARY KEY (name, code_version, position))""",
    "postgresql": """CREATE TABLE IF NOT EXISTS projection_snapshots (
        name TEXT NOT NULL, code_version TEXT NOT NULL, position BIGINT NOT NULL, head_hash TEXT NOT NULL,
        key_id TEXT NOT NULL, signature TEXT NOT NULL, created_at TEXT NOT NULL, payload BYTEA NOT NULL,
        PRIMARY KEY (name, code_version, position))""",
}


def _code_version() -> str:
    """A digest of every source file a snapshot's meaning depends on: the folds, the events, the codec."""
    root = Path(__file__).resolve().parent.parent
    files = [
        *sorted((root / "projections").glob("*.py")),
        *sorted((root / "ledger" / "core" / "events").glob("*.py")),
        root / "ledger" / "core" / "mapper.py",
    ]
    digest = hashlib.sha256()
    for path in files:
        name = path.relative_to(root).as_posix()
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


CODE_VERSION = _code_version()


def _message(name: str, code_version: str, position: int, head_hash: str, payload: bytes) -> bytes:
    body = hashlib.sha256(payload).hexdigest()
    return f"compliance-ledger snapshot v1\n{name}\n{code_version}\n{position}\n{head_hash}\n{body}".encode()


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """One stored snapshot, as ``doctor`` and ``replay`` show it."""

    name: str
    code_version: str
    position: int
    created_at: str
    size: int
    current: bool


class Snapshots:
    """Reads and writes the ``projection_snapshots`` table of one store."""

    def __init__(
        self,
        store: LedgerStore,
        signer: signing.SigningKey | None,
        *,
        every: int = DEFAULT_EVERY,
        code_version: str = CODE_VERSION,
        clock: _clock.Clock = _clock.now,
    ) -> None:
        self.store = store
        self.signer = signer
        self.every = every
        self.code_version = code_version
        self._clock = clock
        self._ready = False
        self._writers: dict[str, threading.Thread] = {}
        self._writers_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Snapshots need the ledger key (to sign and to check them) and a positive interval."""
        return self.signer is not None and self.every > 0

    def create_schema(self) -> None:
        with translate_errors(self.store.dialect), self.store.engine.begin() as conn:
            conn.exec_driver_sql(_DDL[self.store.dialect])
        self._ready = True

    def _ensure(self) -> None:
        if not self._ready:
            self.create_schema()

    def drop(self) -> int:
        """Delete every snapshot (they are derived data); return how many there were."""
        self._ensure()
        with translate_errors(self.store.dialect), self.store.engine.begin() as conn:
            return int(conn.exec_driver_sql("DELETE FROM projection_snapshots").rowcount or 0)

    def list(self) -> list[SnapshotInfo]:
        self._ensure()
        with translate_errors(self.store.dialect), self.store.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT name, code_version, position, created_at, length(payload) FROM projection_snapshots"
                " ORDER BY name, position"
            ).fetchall()
        return [SnapshotInfo(r[0], r[1], int(r[2]), r[3], int(r[4]), r[1] == self.code_version) for r in rows]

    # --- writing --------------------------------------------------------------------------------------

    def save(self, runner: ProjectionRunner) -> bool:
        """Store ``runner``'s states at its position (signed); False when disabled or nothing was folded."""
        if not self.enabled or runner.position < 1:
            return False
        return self._write(runner.name, runner.position, runner.dump())

    def _write_due(self, name: str, position: int, state: dict[str, Any]) -> bool:
        """:meth:`_write` as the one writer of the ledger, if the newest snapshot of ``name`` (any node's) is at
        least :attr:`every` events behind ``position``; False when another node is writing one or none is due."""
        with self.store.lease(SNAPSHOT_LEASE, hold=HOLD_SECONDS) as held:
            if not held:
                return False
            newest = self.newest_position(name)
            if newest is not None and position - newest < self.every:
                return False
            return self._write(name, position, state)

    def newest_position(self, name: str) -> int | None:
        """The position of the newest snapshot of ``name`` made by this code (``None``: there is none)."""
        self._ensure()
        with self.store.read_cursor() as cur:
            cur.execute(
                self.store.sql("SELECT MAX(position) FROM projection_snapshots WHERE name = ? AND code_version = ?"),
                (name, self.code_version),
            )
            row = cur.fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def _write(self, name: str, position: int, state: dict[str, Any]) -> bool:
        assert self.signer is not None
        self._ensure()
        record = self.store.get(position)
        if record is None:
            return False
        payload = codec.dumps(state)
        message = _message(name, self.code_version, position, record.hash, payload)
        signature = signing.b64url(self.signer.sign(message))
        sql = self.store.sql
        # One transaction (on SQLite the engine autocommits each statement, so not ``engine.begin()``): a process
        # killed mid-write leaves the old rows and no new one.
        with self.store.write_transaction(SNAPSHOT_LOCK) as cur:
            cur.execute(
                sql(
                    "INSERT INTO projection_snapshots (name, code_version, position, head_hash, key_id, signature,"
                    " created_at, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
                ),
                (
                    name,
                    self.code_version,
                    position,
                    record.hash,
                    self.signer.key_id,
                    signature,
                    format_ts(self._clock()),
                    payload,
                ),
            )
            # Keep the newest few of this code version; snapshots of other code are never read again.
            cur.execute(
                sql("DELETE FROM projection_snapshots WHERE name = ? AND code_version <> ?"),
                (name, self.code_version),
            )
            cur.execute(
                sql(
                    "DELETE FROM projection_snapshots WHERE name = ? AND code_version = ? AND position NOT IN"
                    " (SELECT position FROM projection_snapshots WHERE name = ? AND code_version = ?"
                    " ORDER BY position DESC LIMIT ?)"
                ),
                (name, self.code_version, name, self.code_version, KEEP),
            )
        return True

    def maybe_save(self, runner: ProjectionRunner) -> None:
        """Save when ``runner`` folded at least :attr:`every` events since its last snapshot: in a thread of its
        own, from a copy of the state taken now, so the request that triggered it does not wait for the encoding
        and the write (one write per runner at a time, one writer across the nodes, and none when another node's
        snapshot is already that recent: :meth:`_write_due`; :meth:`wait` joins them)."""
        if not self.enabled or runner.position - (runner.snapshot_position or 0) < self.every:
            return
        with self._writers_lock:
            running = self._writers.get(runner.name)
            if running is not None and running.is_alive():
                return
            name, position, state = runner.name, runner.position, runner.dump()
            runner.snapshot_position = position
            writer = threading.Thread(
                target=self._write_quietly, args=(name, position, state), name=f"snapshot-{name}", daemon=True
            )
            self._writers[name] = writer
        writer.start()

    def _write_quietly(self, name: str, position: int, state: dict[str, Any]) -> None:
        try:
            self._write_due(name, position, state)
        except Exception:  # a snapshot is an optimisation: a failed one is logged, never raised into a request
            log.warning("could not write a %s snapshot at position %d", name, position, exc_info=True)

    def wait(self) -> None:
        """Join the snapshot writes in progress (for shutdown and tests)."""
        with self._writers_lock:
            writers = list(self._writers.values())
        for writer in writers:
            writer.join()

    def catch_up(self, runner: ProjectionRunner, source: Callable[[int], Iterable[RecordedEvent]]) -> None:
        """Bring a long-lived ``runner`` to the head: from the newest snapshot the first time, then the tail
        (``source(after)``); write a new snapshot every :attr:`every` events."""
        if runner.snapshot_position is None:
            runner.snapshot_position = self.restore(runner)
        runner.catch_up(source)
        self.maybe_save(runner)

    def replay_to(
        self, runner: ProjectionRunner, source: Callable[[int, int], Iterable[RecordedEvent]], until: int
    ) -> ProjectionRunner:
        """Fold a fresh ``runner`` to position ``until``: the newest snapshot at or before it, then the gap
        (``source(after, until)``); from zero when there is none."""
        self.restore(runner, until)
        runner.run(source(runner.position, until))
        return runner

    # --- reading --------------------------------------------------------------------------------------

    def restore(self, runner: ProjectionRunner, until: int | None = None) -> int:
        """Load into the fresh ``runner`` the newest valid snapshot at or before ``until`` (default: any);
        return its position, or 0 when none is usable (the runner is left untouched then)."""
        position = self._restore(runner, until)
        if position:  # trimmed here, once the rows read (payloads of megabytes) are freed, not inside the loop
            _return_freed_memory()
        return position

    def _restore(self, runner: ProjectionRunner, until: int | None) -> int:
        if not self.enabled or runner.position != 0:
            return 0
        self._ensure()
        sql = self.store.sql
        query = (
            "SELECT position, head_hash, key_id, signature, payload FROM projection_snapshots"
            " WHERE name = ? AND code_version = ?"
        )
        params: list[Any] = [runner.name, self.code_version]
        if until is not None:
            query += " AND position <= ?"
            params.append(until)
        with translate_errors(self.store.dialect), self.store.engine.connect() as conn:
            rows = conn.exec_driver_sql(sql(query + " ORDER BY position DESC"), tuple(params)).fetchall()
        for position, head_hash, key_id, signature, stored in rows:
            payload = bytes(stored)
            problem = self._problem(runner.name, int(position), head_hash, key_id, signature, payload)
            if problem:
                log.warning("ignoring the %s snapshot at position %s: %s", runner.name, position, problem)
                continue
            try:
                runner.restore(codec.loads(payload))
            except (codec.CodecError, KeyError, TypeError, ValueError) as exc:
                log.warning("ignoring the %s snapshot at position %s: %s", runner.name, position, exc)
                runner.reset()
                continue
            if runner.position != int(position):
                log.warning(
                    "ignoring the %s snapshot at position %s: it holds position %s",
                    runner.name,
                    position,
                    runner.position,
                )
                runner.reset()
                continue
            return runner.position
        return 0

    def _problem(self, name: str, position: int, head_hash: str, key_id: str, signature: str, payload: bytes) -> str:
        assert self.signer is not None
        public = self.signer.public
        if key_id != public.key_id:
            return f"signed by key {key_id}, not this ledger's {public.key_id}"
        try:
            raw = signing.unb64url(signature)
        except ValueError:
            return "its signature is not base64url"
        if not public.verify(raw, _message(name, self.code_version, position, head_hash, payload)):
            return "its signature does not verify"
        record = self.store.get(position)
        if record is None or record.hash != head_hash:
            return "the log no longer holds the event it was taken at"
        return ""


def _return_freed_memory() -> None:
    """Hand the heap freed after decoding a snapshot back to the OS: glibc keeps freed heap pages mapped (and
    counted in RSS) until ``malloc_trim``; the payload and its parse are many times the state they build."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # only here: the one caller, and only on Linux

    with contextlib.suppress(OSError, AttributeError):  # not glibc (musl has no malloc_trim): nothing to do
        ctypes.CDLL(None).malloc_trim(0)
