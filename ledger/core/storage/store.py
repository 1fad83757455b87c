"""The event store :class:`SqlEventStore`, made of its connection, its append path and its reads, with the
schema's creation and the health probe."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ledger.core import clock as _clock
from ledger.core.errors import StoreBusy
from ledger.core.limits import Timeouts
from ledger.core.storage.driver_errors import translate_errors
from ledger.core.storage.engine import make_engine
from ledger.core.storage.group_commit import MAX_GROUP, GroupCommit
from ledger.core.storage.reads import StoreReads
from ledger.core.storage.schema import _LEDGER_OID, _METADATA, _TRIGGERS, APPEND_LOCK, EVENTS

PROBE_LOCK_SECONDS = 1.0  # the longest a health probe waits for the write lock before it reports "busy"


@dataclass(frozen=True, slots=True)
class Probe:
    """What a health probe saw: the head position, and whether the write lock was held past the probe's wait."""

    head_position: int
    busy: bool


class SqlEventStore(GroupCommit, StoreReads):
    """Append-only event store with a hash chain, per-stream optimistic concurrency and gapless positions.

    Appends from threads of one process share transactions (**group commit**): the first caller to find no
    commit in progress leads, takes the write lock once and writes every append queued by then, each checked
    against its own ``expected_version`` and chained after the one before it, then commits once (one fsync),
    wakes each member of the group and hands the lead to the first append that queued meanwhile (which takes
    all that queued while this group was being written). A lost race or a refused row fails that append alone
    (a savepoint undoes its rows); a failed commit fails every append of the group, and none is recorded.
    """

    def __init__(
        self,
        engine: Engine,
        clock: _clock.Clock = _clock.now,
        timeouts: Timeouts | None = None,
        *,
        group_limit: int = MAX_GROUP,
        _fair_lock: bool = True,
    ) -> None:
        """``_fair_lock=False`` (benchmarks only) leaves SQLite writers of several processes to SQLite's busy
        handler, as before the fair lock."""
        super().__init__(engine, timeouts, fair_lock=_fair_lock)
        self._init_group_commit(clock, group_limit)
        self._probe: Engine | None = None
        self._probe_lock = threading.Lock()

    # --- schema ---------------------------------------------------------------------------------------

    def create_schema(self) -> None:
        """Create the ``events`` table, its indexes and the append-only triggers (idempotent)."""
        with translate_errors(self.dialect), self.engine.begin() as conn:
            _METADATA.create_all(conn, tables=[EVENTS])
            # Reads by type after a position (index catch-up, history) range-scan this instead of every row of
            # the type; created here too so databases made before it existed get it.
            conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_events_type_position ON events (type, position)")
            for ddl in _TRIGGERS[self.dialect]:
                conn.exec_driver_sql(ddl)

    def is_initialised(self) -> bool:
        with translate_errors(self.dialect), self.engine.connect() as conn:
            return sa.inspect(conn).has_table("events")

    # --- health ---------------------------------------------------------------------------------------

    def probe(self) -> Probe:
        """Health check on a tiny pool of its own, so appends stuck behind a held lock cannot starve it: read the
        head, then try the write lock for at most ``PROBE_LOCK_SECONDS`` (taken and released at once; nothing is
        written). ``busy`` says an append would have had to wait longer than that."""
        engine = self._probe_engine()
        with translate_errors(self.dialect):
            conn = engine.raw_connection()
            try:
                cur = conn.cursor()
                cur.execute("SELECT MAX(position) FROM events WHERE position >= 1")
                row = cur.fetchone()
                head = int(row[0]) if row and row[0] is not None else 0
                conn.rollback()
                busy = False
                try:
                    with translate_errors(self.dialect):
                        if self.dialect == "sqlite":
                            cur.execute("BEGIN IMMEDIATE")
                        else:
                            wait = max(1, min(self.timeouts.lock_ms, round(PROBE_LOCK_SECONDS * 1000)))
                            cur.execute(
                                f"SET LOCAL lock_timeout = {wait}; "
                                f"SELECT pg_advisory_xact_lock({_LEDGER_OID}, {APPEND_LOCK})"
                            )
                except StoreBusy:
                    busy = True
                finally:
                    conn.rollback()
            finally:
                conn.close()
        return Probe(head_position=head, busy=busy)

    def _probe_engine(self) -> Engine:
        with self._probe_lock:
            if self._probe is None:
                wait = min(self.timeouts.lock, PROBE_LOCK_SECONDS)
                url = self.engine.url.render_as_string(hide_password=False)
                self._probe = make_engine(url, Timeouts(lock=wait, statement=self.timeouts.statement), pool_size=2)
            return self._probe

    def dispose(self) -> None:
        """Close every pooled connection (the store's and the health probe's)."""
        self.engine.dispose()
        with self._probe_lock:
            if self._probe is not None:
                self._probe.dispose()
