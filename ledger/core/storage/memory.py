"""The in-memory event store :class:`MemoryStore`: the store contract (:mod:`.contract`) kept in Python lists
under one lock, for tests and tools that need a ledger and not a database (as eventsourcing's ``popo.py`` stands
beside its ``persistence.py``).

Rows are chained with the SQL store's functions (:func:`ledger.core.chain.chain_rows`), so the same events at the
same times get the same hashes, and the tree is the same RFC 6962 tree (:class:`~.tree.Tree`, Go sumdb's stored
hashes). The read models keep their tables in SQL beside it (:class:`~.side_tables.SideTables`: one in-memory
SQLite connection).
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as _dt
import threading
from collections.abc import Callable, Iterator, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from ledger.core import clock as _clock
from ledger.core.canonical import format_ts, parse_ts
from ledger.core.chain import GENESIS_HASH, ChainReport, StoredRecord, chain_rows, verify_chain
from ledger.core.errors import ConcurrencyError
from ledger.core.events import DomainEvent, RecordedEvent
from ledger.core.limits import Timeouts
from ledger.core.mapper import _meta, decode, encode_all, encode_meta
from ledger.core.sealed import VERSION as SEALED
from ledger.core.sealed import NewKey
from ledger.core.storage import leases
from ledger.core.storage.authenticator import RowKey
from ledger.core.storage.proofs import TreeProofs
from ledger.core.storage.reads import StreamState
from ledger.core.storage.schema import APPEND_LOCK, DATA_KEYS_DDL
from ledger.core.storage.side_tables import LOG_INDEX, SideTables
from ledger.core.storage.store import Probe
from ledger.core.storage.tree import EMPTY, Tree
from ledger.core.tlog import merkle

if TYPE_CHECKING:
    from ledger.core.data_keys import DataKeys


# The read models' catch-up probes are single SQL statements over ``events`` (position, type): the side tables
# carry that much of the log, written in the append, and nothing else of it.
class MemoryStore(TreeProofs):
    """The store contract in memory: gapless 1-based positions, per-stream versions, all-or-nothing appends that
    leave no trace on a :class:`ConcurrencyError`, the SQL store's hash chain and tree, ``recorded_at`` that never
    goes backwards, one lock for every read and write of the log.

    Beyond the contract a memory store has no row authenticators (nothing can write behind its back), no
    triggers and nothing to upgrade: :meth:`pending_upgrade` is always ``(0, 0)``."""

    def __init__(self, clock: _clock.Clock = _clock.now, *, row_key: RowKey | None = None) -> None:
        """``row_key`` is only named by the ledger's ``RowKeyBound`` event (no row carries an authenticator)."""
        self._clock = clock
        self.row_key = row_key
        self.cipher: DataKeys | None = None  # set by the kernel: free text sealed on append, opened on read
        # One lock for the log and its side tables: an append writes both, a catch-up reads the log in a write
        # transaction of the side tables, and two locks taken in both orders would deadlock.
        self._lock = threading.RLock()
        self.side = SideTables(self._lock)
        self._leases: dict[int, threading.Lock] = {}
        self._lease_guard = threading.Lock()
        self._records: list[StoredRecord] = []
        self._streams: dict[str, list[int]] = {}  # stream -> positions, in version order
        self._at: list[str] = []  # recorded_at of each position (never decreasing: bisect for "as of")
        self._tree: Tree = EMPTY
        self._hashes: list[bytes] = []  # the tree's stored hashes, in Go sumdb's layout
        self.create_schema()

    # --- the read models' tables --------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        return self.side.engine

    @property
    def dialect(self) -> str:
        return self.side.dialect

    def sql(self, text: str) -> str:
        return text

    def read_cursor(self) -> contextlib.AbstractContextManager[Any]:
        return self.side.read_cursor()

    def write_transaction(self, lock: int = APPEND_LOCK) -> contextlib.AbstractContextManager[Any]:
        return self.side.write_transaction(lock)

    def lease(
        self, key: int, *, wait: bool = False, hold: float | None = None, patience: float | None = None
    ) -> contextlib.AbstractContextManager[bool]:
        """A lease of this process (no other process shares a memory store)."""
        with self._lease_guard:
            lock = self._leases.setdefault(key, threading.Lock())
        return leases.in_process(lock, wait=wait, timeout=Timeouts().lock if patience is None else patience)

    # --- appends ------------------------------------------------------------------------------------------

    def append(
        self, stream: str, expected_version: int, events: Sequence[DomainEvent], meta: dict[str, Any]
    ) -> list[RecordedEvent]:
        """Append ``events`` to ``stream`` if it is still at ``expected_version``; all or nothing."""
        if not events:
            return []
        # refuses what the SQL store refuses before it writes; free text sealed under the stream's data key
        keys: list[NewKey] = []  # data keys made for this append: written with its rows, or not at all
        encoded, sealed = encode_all(events, stream, self.cipher, keys, fresh=expected_version == 0)
        if sealed:
            meta = {**meta, "enc": SEALED}
        meta_json = encode_meta(meta)
        with self._lock:
            actual = len(self._streams.get(stream, ()))
            if actual != expected_version:
                raise ConcurrencyError(stream, expected_version, actual)
            position, prev_hash = self._head()
            recorded_at = max(format_ts(self._clock()), self._at[-1] if self._at else "")
            rows = chain_rows(
                position=position,
                version=actual,
                stream=stream,
                recorded_at=recorded_at,
                prev_hash=prev_hash,
                meta_json=meta_json,
                encoded=encoded,
            )
            tree, blob = self._tree.extend([r[9] for r in rows])
            with self.side.write_transaction() as cur:  # first: if it fails, the log is untouched
                cur.executemany("INSERT INTO events (position, type) VALUES (?, ?)", [(r[0], r[3]) for r in rows])
                if keys and self.cipher is not None:
                    self.cipher.write(cur, keys)
            self._records.extend(StoredRecord(*r) for r in rows)
            self._streams.setdefault(stream, []).extend(r[0] for r in rows)
            self._at.extend(recorded_at for _ in rows)
            self._hashes.extend(blob[k : k + 32] for k in range(0, len(blob), 32))
            self._tree = tree
        if keys and self.cipher is not None:
            self.cipher.adopt(keys)
        at = parse_ts(recorded_at)
        frozen = MappingProxyType(dict(meta))
        return [RecordedEvent(r[0], stream, r[2], at, frozen, e, r[9]) for r, e in zip(rows, events, strict=True)]

    # --- reads --------------------------------------------------------------------------------------------

    def _head(self) -> tuple[int, str]:
        return (len(self._records), self._records[-1].hash) if self._records else (0, GENESIS_HASH)

    def head(self) -> tuple[int, str]:
        with self._lock:
            return self._head()

    def load_stream(self, stream: str, after_version: int = 0) -> StreamState:
        with self._lock:
            positions = self._streams.get(stream, [])[max(after_version, 0) :]
            records = [self._records[p - 1] for p in positions]
        events = [decode(r, self.cipher) for r in records]
        return StreamState(stream, events[-1].version if events else after_version, events)

    def get(self, position: int) -> StoredRecord | None:
        with self._lock:
            return self._records[position - 1] if 1 <= position <= len(self._records) else None

    def record_of(self, stream: str, version: int) -> StoredRecord | None:
        with self._lock:
            positions = self._streams.get(stream, [])
            return self._records[positions[version - 1] - 1] if 1 <= version <= len(positions) else None

    def records_at(self, positions: Sequence[int]) -> dict[int, StoredRecord]:
        with self._lock:
            head = len(self._records)
            return {int(p): self._records[int(p) - 1] for p in positions if 1 <= int(p) <= head}

    def position_as_of(self, as_of: _dt.datetime) -> int:
        with self._lock:
            return bisect.bisect_right(self._at, format_ts(as_of))

    def iter_records(
        self,
        after: int = 0,
        until: int | None = None,
        *,
        stream: str | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
        batch_size: int = 5000,
    ) -> Iterator[StoredRecord]:
        """Records in position order, a page of ``batch_size`` at a time under the lock (as the SQL store pages by
        position: an append between pages is seen by the next page)."""
        wanted = set(types) if types else None
        after = max(after, 0)
        while True:
            with self._lock:
                end = len(self._records) if until is None else min(until, len(self._records))
                if stream is not None:
                    positions = self._streams.get(stream, [])
                    start = bisect.bisect_right(positions, after)
                    candidates = (self._records[p - 1] for p in positions[start:] if p <= end)
                else:
                    candidates = (self._records[p] for p in range(after, end))
                page: list[StoredRecord] = []
                for rec in candidates:
                    if wanted is not None and rec.type not in wanted:
                        continue
                    if agent is not None and _meta(rec.meta_json).get("agent") != agent:
                        continue
                    page.append(rec)
                    if len(page) == batch_size:
                        break
            yield from page
            if len(page) < batch_size:
                return
            after = page[-1].position

    def iter_events(
        self,
        after: int = 0,
        until: int | None = None,
        *,
        stream: str | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
        batch_size: int = 5000,
    ) -> Iterator[RecordedEvent]:
        for rec in self.iter_records(after, until, stream=stream, types=types, agent=agent, batch_size=batch_size):
            yield decode(rec, self.cipher)

    def chain_hashes(self, until: int, batch_size: int = 20_000) -> Iterator[tuple[int, str]]:
        for rec in self.iter_records(0, until, batch_size=batch_size):
            yield rec.position, rec.hash

    def verify(
        self, progress: Callable[[int], None] | None = None, batch_size: int = 5000, *, tree: bool = True
    ) -> ChainReport:
        """Recompute the chain up to the head it reads first (events appended meanwhile are not part of the
        check) and (``tree``) the tree of those events from their chain hashes, compared with the kept one."""
        head, _ = self.head()
        with self._lock:
            records = self._records[:head]
            kept = list(self._hashes[: merkle.stored_hash_count(head)])

        def counted() -> Iterator[StoredRecord]:
            for i, rec in enumerate(records, 1):
                if progress and i % 1000 == 0:
                    progress(i)
                yield rec

        report = verify_chain(counted())
        if progress:
            progress(report.checked)
        if not report.ok or not tree:
            return report
        _, blob = EMPTY.extend([r.hash for r in records])
        if blob != b"".join(kept):
            return ChainReport(False, report.checked, report.head_position, None, "the tree is not the chain's")
        return report

    # --- the tree -----------------------------------------------------------------------------------------

    def tree_size(self) -> int:
        with self._lock:
            return self._tree.size

    def tree_hashes(self, indexes: Sequence[int]) -> list[bytes]:
        with self._lock:
            return [self._hashes[int(i)] for i in indexes]

    def _chain_hash_at(self, position: int) -> str | None:
        rec = self.get(position)
        return rec.hash if rec is not None else None

    def rebuild_tree(self, progress: Callable[[int], None] | None = None) -> int:
        with self._lock:
            tree, blob = EMPTY.extend([r.hash for r in self._records])
            self._tree, self._hashes = tree, [blob[k : k + 32] for k in range(0, len(blob), 32)]
        if progress is not None:
            progress(tree.size)
        return tree.size

    # --- opening, health, closing -------------------------------------------------------------------------

    def create_schema(self) -> None:
        """The side tables' copy of the log's (position, type), for the read models' probes, and the data keys'
        table (idempotent)."""
        with self.side.write_transaction() as cur:
            cur.execute(LOG_INDEX)
            for ddl in DATA_KEYS_DDL["sqlite"]:
                cur.execute(ddl)

    def is_initialised(self) -> bool:
        return True

    def pending_upgrade(self) -> tuple[int, int]:
        return 0, 0

    def authenticate_existing(
        self,
        stream: str,
        vouch: Callable[[StreamState, int], Sequence[DomainEvent]],
        meta: dict[str, Any],
        progress: Callable[[int], None] | None = None,
    ) -> int:
        return 0  # a memory log was never without authenticators: nothing to vouch for

    def build_tree(self, progress: Callable[[int], None] | None = None) -> int:
        return 0  # the tree grows in every append

    def probe(self) -> Probe:
        return Probe(head_position=self.head()[0], busy=False)

    def _probe_engine(self) -> Engine:
        return self.side.engine

    def dispose(self) -> None:
        self.side.dispose()
