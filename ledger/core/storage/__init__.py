"""The event store: one append-only, hash-chained ``events`` table on SQLite or PostgreSQL.

SQLAlchemy Core defines the schema; reads and the append hot path use the driver connection taken from the
engine's pool (BEGIN IMMEDIATE on SQLite, a transaction-level advisory lock on PostgreSQL), because a single
hash chain needs a total order anyway and it keeps positions gapless. Writers of several processes on one SQLite
file queue on a fair lock file beside it (``<db>.writelock``) rather than in SQLite's sleeping busy handler, and
concurrent appends of one process share one transaction (group commit). Driver errors are translated here into
the ledger's own errors.

One concept a module: :mod:`.schema` (the table, its triggers, lock keys and SQL texts), :mod:`.engine` (engines and
their URLs), :mod:`.driver_errors`, :mod:`.fair_lock` (SQLite's cross-process write lock), :mod:`.connection` (write
transactions and read cursors), :mod:`.leases` (work one node at a time does), :mod:`.rate_buckets` (the
cluster-wide rate limit's counters), :mod:`.group_commit` (appends; :mod:`.pending`, one queued append),
:mod:`.reads` (reads and paging), :mod:`.authenticator` (the row authenticators), :mod:`.tree` (the transparency-log
tree: sizes, roots, proofs, growth), :mod:`.verify` (the full check of chain, authenticators and tree),
:mod:`.upgrade` (authenticating a ledger from before authenticators), :mod:`.migration` (the schema's version and
the migration lock), :mod:`.nodes` (the nodes that served, as they announced themselves) and :mod:`.store` (the
:class:`SqlEventStore` they make). :mod:`.contract` states what the ledger asks of a store (:class:`EventStore`,
:class:`LedgerStore`), and :mod:`.memory` is its second implementation, :class:`MemoryStore` (its read models'
tables in :mod:`.side_tables`); :mod:`.proofs` holds the tree's roots and proofs, written once for both.
"""

from ledger.core.storage import leases, rate_buckets
from ledger.core.storage.authenticator import RowKey
from ledger.core.storage.contract import EventStore, LedgerStore, ReadModelTables
from ledger.core.storage.driver_errors import classify_driver_error, translate_errors
from ledger.core.storage.engine import SQLITE_CACHE_KIB, make_engine, normalise_url
from ledger.core.storage.fair_lock import _write_lock_path
from ledger.core.storage.memory import MemoryStore
from ledger.core.storage.pending import MAX_GROUP
from ledger.core.storage.reads import StreamState
from ledger.core.storage.schema import (
    APPEND_LOCK,
    CHECKPOINT_LEASE,
    CONSOLIDATE_LEASE,
    EVENTS,
    INDEX_LOCK,
    SNAPSHOT_LEASE,
    SNAPSHOT_LOCK,
    TLOG_LEASE,
)
from ledger.core.storage.store import PROBE_LOCK_SECONDS, Probe, SqlEventStore

__all__ = [
    "APPEND_LOCK",
    "CHECKPOINT_LEASE",
    "CONSOLIDATE_LEASE",
    "EVENTS",
    "INDEX_LOCK",
    "MAX_GROUP",
    "PROBE_LOCK_SECONDS",
    "SNAPSHOT_LEASE",
    "SNAPSHOT_LOCK",
    "SQLITE_CACHE_KIB",
    "TLOG_LEASE",
    "EventStore",
    "LedgerStore",
    "MemoryStore",
    "Probe",
    "ReadModelTables",
    "RowKey",
    "SqlEventStore",
    "StreamState",
    "_write_lock_path",
    "classify_driver_error",
    "leases",
    "make_engine",
    "normalise_url",
    "rate_buckets",
    "translate_errors",
]
