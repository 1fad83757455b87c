"""The event store :class:`SqlEventStore`, made of its connection, its append path, its reads, its tree, its
verification and its upgrade, with the schema's creation and the health probe."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ledger.core import clock as _clock
from ledger.core.errors import StoreBusy
from ledger.core.limits import Timeouts
from ledger.core.storage import rate_buckets
from ledger.core.storage.authenticator import RowKey
from ledger.core.storage.driver_errors import translate_errors
from ledger.core.storage.engine import make_engine
from ledger.core.storage.pending import MAX_GROUP
from ledger.core.storage.schema import (
    _LEDGER_OID,
    _METADATA,
    _TRIGGERS,
    APPEND_LOCK,
    DATA_KEYS_DDL,
    EVENTS,
    GUARD_UPDATE,
    LEGACY_REJECT_UPDATE,
)
from ledger.core.storage.upgrade import StoreUpgrade
from ledger.core.storage.verify import StoreVerify

PROBE_LOCK_SECONDS = 1.0  # the longest a health probe waits for the write lock before it reports "busy"


@dataclass(frozen=True, slots=True)
class Probe:
    """What a health probe saw: the head position, and whether the write lock was held past the probe's wait."""

    head_position: int
    busy: bool


class SqlEventStore(StoreUpgrade, StoreVerify):
    """Append-only event store with a hash chain, per-stream optimistic concurrency and gapless positions.

    Appends from threads of one process share transactions (**group commit**): the first caller to find no
    commit in progress leads, takes the write lock once and writes every append queued by then, each checked
    against its own ``expected_version`` and chained after the one before it, then commits once (one fsync),
    wakes each member of the group and hands the lead to the first append that queued meanwhile (which takes
    all that queued while this group was being written). A lost race or a refused row fails that append alone
    (a savepoint undoes its rows); a failed commit fails every append of the group, and none is recorded.

    Every row carries its authenticator (``mac``, :mod:`.authenticator`) and its leaf's hashes in the
    transparency-log tree (``tree``, :mod:`.tree`), written with it. Every read that feeds a
    decision or a read model checks the authenticators of the rows it returns, and an append never chains after
    a head whose authenticator does not check. The tree's API: :meth:`tree_size`, :meth:`tree_hashes`,
    :meth:`tree_root`, :meth:`prove_inclusion`, :meth:`prove_consistency`, :meth:`leaf_data`,
    :meth:`build_tree`, :meth:`rebuild_tree`.
    """

    def __init__(
        self,
        engine: Engine,
        clock: _clock.Clock = _clock.now,
        timeouts: Timeouts | None = None,
        *,
        row_key: RowKey | None,
        group_limit: int = MAX_GROUP,
        _fair_lock: bool = True,
        _tlog: bool = True,
    ) -> None:
        """``row_key`` is the key of the row authenticators (:meth:`RowKey.derive` of the receipt key's secret);
        ``row_key=None`` must be said: such a store reads without checking authenticators and cannot append.

        Benchmarks only: ``_fair_lock=False`` leaves SQLite writers of several processes to SQLite's busy
        handler, as before the fair lock; ``_tlog=False`` appends without the tree and authenticators and reads
        without checking them, as before they existed."""
        super().__init__(engine, timeouts, fair_lock=_fair_lock, row_key=row_key, tlog=_tlog)
        self._init_group_commit(clock, group_limit)
        self._probe: Engine | None = None
        self._probe_lock = threading.Lock()

    # --- schema ---------------------------------------------------------------------------------------

    def create_schema(self) -> None:
        """Create the ``events`` table (each row with its authenticator and tree hashes), its indexes and the
        append-only triggers, the data keys' table and the rate limit's counters (``rate_buckets``, PostgreSQL:
        :mod:`.rate_buckets`) (idempotent); bring a schema-2 ledger's authenticators into its rows
        (:meth:`move_into_rows`). A ledger from before authenticators gets the rows' columns from
        :meth:`authenticate_existing` alone, which authenticates its rows with them."""
        with translate_errors(self.dialect), self.engine.begin() as conn:
            _METADATA.create_all(conn, tables=[EVENTS])
            # Reads by type after a position (index catch-up, history) range-scan this instead of every row of
            # the type; created here too so databases made before it existed get it.
            conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_events_type_position ON events (type, position)")
            for ddl in _TRIGGERS[self.dialect]:
                conn.exec_driver_sql(ddl)
            for ddl in DATA_KEYS_DDL[self.dialect]:  # schema 2: the data keys of free text
                conn.exec_driver_sql(ddl)
            if self.dialect in rate_buckets.DDL:  # the cluster-wide rate limit's counters (PostgreSQL)
                conn.exec_driver_sql(rate_buckets.DDL[self.dialect])
        self.move_into_rows()
        with self.write_transaction() as cur:
            if self._has_column(cur, "mac"):
                guards = GUARD_UPDATE[self.dialect]
            else:  # no row may change until they are vouched for (PostgreSQL: events_reject_change refuses)
                guards = [LEGACY_REJECT_UPDATE] if self.dialect == "sqlite" else []
            for ddl in guards:
                cur.execute(ddl)

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
                address = self.engine.url
                if self.dialect == "postgresql":
                    # its sessions named apart (pg_stat_activity, pg_locks): the probe takes the write lock for a
                    # moment, and whoever looks for the node that holds it should not take the probe for an append
                    name = address.query.get("application_name") or "compliance-ledger"
                    name = name if isinstance(name, str) else name[-1]
                    address = address.update_query_dict({"application_name": f"{name} (health probe)"})
                url = address.render_as_string(hide_password=False)
                self._probe = make_engine(url, dataclasses.replace(self.timeouts, lock=wait), pool_size=2)
            return self._probe

    def dispose(self) -> None:
        """Close every pooled connection (the store's and the health probe's)."""
        self._drop_writer()
        self.engine.dispose()
        with self._probe_lock:
            if self._probe is not None:
                self._probe.dispose()
