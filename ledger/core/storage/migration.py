"""The schema's version and the migration lock: creating or migrating the schema is an explicit step (``init``,
``migrate``), and a start only reads the version.

``ledger_schema`` holds one row, the version of the schema the database carries (written last by a migration, so
a migration that failed half way leaves the old version). A change to the schema (a table, an index, a trigger)
raises :data:`SCHEMA_VERSION`; what brings an older schema up to date runs under :func:`migration_lock`, which
several processes may ask for at once: one migrates, the others wait, then find the schema current and change
nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from ledger.core.errors import Conflict, NotInitialised
from ledger.core.storage.driver_errors import translate_errors
from ledger.core.storage.fair_lock import _write_lock_path, fcntl
from ledger.core.storage.schema import column_exists_sql, table_exists_sql

SCHEMA_VERSION = 3
"""The schema this program reads and writes. 1: the events, their authenticators and tree, the search index, the
snapshots and the transparency log's checkpoints (everything ``init`` created before versions were recorded).
2: the ``data_keys`` table of free text's data keys (issue 26), and the SQLite search index rebuilt with each row's
rowid the position of its block's ``MemoryRemembered`` (an erased block's row deleted by key); ``ledger_nodes``,
where each ``serve`` and ``mcp`` node announces itself (:mod:`.nodes`; ``doctor`` lists them); on PostgreSQL
``rate_buckets``, the rate limit shared by the nodes (:mod:`.rate_buckets`). ``migrate`` brings a version-1 ledger
up (the tables created, the index rebuilt from the log, the node's decision settings recorded).
3: each row's authenticator and its leaf's tree hashes in the ``events`` row (columns ``mac`` and ``tree``), where
version 2 kept them in ``event_auth`` and ``tlog_hashes``: an append writes one B-tree less twice over (issue 24's
appends with the tree at ≥ 0.9× of without). ``migrate`` moves the authenticators into the rows, drops the side
tables and builds the tree in the rows from the chain (:mod:`.upgrade`)."""

_LOG_TABLES = ("events", "data_keys")
MIGRATE_LOCK = 0x6D696772  # "migr": the second key of PostgreSQL's session-level migration lock

_DDL = {
    "sqlite": "CREATE TABLE IF NOT EXISTS ledger_schema (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "version INTEGER NOT NULL, migrated_at TEXT NOT NULL)",
    "postgresql": "CREATE TABLE IF NOT EXISTS ledger_schema (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "version INTEGER NOT NULL, migrated_at TEXT NOT NULL)",
}
# The nodes that served (version 2): one row a node, written at its start and by its heartbeat (ledger/core/storage/
# nodes.py). Not part of the log: a side table, updated in place, its old rows pruned.
_NODES_DDL = {
    dialect: "CREATE TABLE IF NOT EXISTS ledger_nodes (node TEXT PRIMARY KEY, kind TEXT NOT NULL, "
    "version TEXT NOT NULL, settings_digest TEXT NOT NULL, started_at TEXT NOT NULL, seen_at TEXT NOT NULL, "
    "stopped_at TEXT)"
    for dialect in ("sqlite", "postgresql")
}
_UPSERT = (
    "INSERT INTO ledger_schema (id, version, migrated_at) VALUES (1, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET version = excluded.version, migrated_at = excluded.migrated_at"
)


@dataclass(frozen=True, slots=True)
class SchemaState:
    """What a database holds: whether it has an ``events`` table, the recorded schema version (``None``: no
    ``ledger_schema`` table, i.e. no ledger or one from before versions were recorded) and the tables of the log a
    ledger of that version must have but lacks (dropped behind its back: then it is not current)."""

    has_events: bool
    version: int | None
    missing: tuple[str, ...] = ()

    @property
    def absent(self) -> bool:
        """No ledger here at all: creating one migrates nothing."""
        return not self.has_events and self.version is None

    @property
    def current(self) -> bool:
        return self.version == SCHEMA_VERSION and not self.missing

    @property
    def ahead(self) -> bool:
        return self.version is not None and self.version > SCHEMA_VERSION

    @property
    def found(self) -> int:
        """The version found (0 for a ledger from before versions were recorded)."""
        return self.version or 0


def _sql(dialect: str, text: str) -> str:
    return text if dialect == "sqlite" else text.replace("?", "%s")


def schema_state(engine: Engine) -> SchemaState:
    """Read the schema's state: two catalogue lookups and one row, no lock and no DDL."""
    dialect = engine.dialect.name
    with translate_errors(dialect):
        conn = engine.raw_connection()
        try:
            cur = conn.cursor()
            exists = _sql(dialect, table_exists_sql(dialect))
            cur.execute(exists, ("events",))
            has_events = cur.fetchone() is not None
            cur.execute(exists, ("ledger_schema",))
            version: int | None = None
            missing: list[str] = []
            if cur.fetchone() is not None:
                cur.execute("SELECT version FROM ledger_schema WHERE id = 1")
                row = cur.fetchone()
                version = int(row[0]) if row is not None else 0
                for table in _LOG_TABLES:
                    cur.execute(exists, (table,))
                    if cur.fetchone() is None:
                        missing.append(table)
                if version >= 3 and has_events:  # the rows' authenticators and tree hashes (schema 3)
                    for column in ("mac", "tree"):
                        cur.execute(_sql(dialect, column_exists_sql(dialect)), (column,))
                        if cur.fetchone() is None:
                            missing.append(f"events.{column}")
            conn.rollback()
        finally:
            conn.close()
    return SchemaState(has_events, version, tuple(missing))


def record_version(engine: Engine, migrated_at: str, version: int = SCHEMA_VERSION) -> None:
    """Record that the schema is now at ``version`` (the last step of a migration), creating first the tables
    this module owns (``ledger_schema``, ``ledger_nodes``) if they are not there."""
    dialect = engine.dialect.name
    with translate_errors(dialect), engine.begin() as conn:
        conn.exec_driver_sql(_DDL[dialect])
        conn.exec_driver_sql(_NODES_DDL[dialect])
        conn.exec_driver_sql(_sql(dialect, _UPSERT), (version, migrated_at))


def require_current(state: SchemaState, *, command: str = "compliance-ledger migrate") -> None:
    """Refuse to serve a schema this program does not match, saying what to run."""
    if state.current:
        return
    if state.absent:
        raise NotInitialised(
            "the database holds no ledger",
            "run `compliance-ledger init` once (with the same --db / --home), then start",
        )
    if state.ahead:
        raise Conflict(
            f"the ledger's schema is at version {state.found}, newer than version {SCHEMA_VERSION} of this program",
            "run the version of compliance-ledger that migrated it (every node of a ledger runs the same version)",
        )
    lacking = f" and lacks {', '.join(state.missing)}" if state.missing else ""
    raise NotInitialised(
        f"the ledger's schema is at version {state.found}{lacking}; this program needs version {SCHEMA_VERSION}, "
        "and a start never changes the schema",
        f"run `{command}` once (with the same --db / --home; safe from several nodes at once), then start again",
    )


@contextlib.contextmanager
def migration_lock(engine: Engine, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the migration lock of this ledger while the block runs: PostgreSQL's session-level advisory lock keyed
    by the schema's name (so ledgers in other schemas do not wait), on a connection of its own that is closed
    after; on a SQLite file an exclusive ``flock`` on ``<database>.migratelock`` beside it. The wait has no bound
    (a migration of a large ledger takes minutes); ``waiting`` is called once if another process holds it."""
    if engine.dialect.name == "postgresql":
        with _pg_lock(engine, waiting):
            yield
        return
    path = _write_lock_path(engine)
    if path is None or fcntl is None:  # no file to lock beside (read-only, or not POSIX): nothing to serialise
        yield
        return
    lock_path = path.removesuffix(".writelock") + ".migratelock"
    try:
        fh = open(lock_path, "a+b")  # noqa: SIM115 - closed below, after the block
    except OSError:  # a directory the ledger cannot write to: no one migrates there, as with the fair lock
        yield
        return
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def _pg_lock(engine: Engine, waiting: Callable[[], None] | None) -> Iterator[None]:
    key = f"hashtext(current_schema()), {MIGRATE_LOCK}"
    with translate_errors("postgresql"):
        conn = engine.raw_connection()
    try:
        with translate_errors("postgresql"):
            cur = conn.cursor()
            cur.execute(f"SELECT pg_try_advisory_lock({key})")
            got = bool((cur.fetchone() or [False])[0])
            if not got:
                if waiting is not None:
                    waiting()
                cur.execute("SET lock_timeout = 0; SET statement_timeout = 0")
                cur.execute(f"SELECT pg_advisory_lock({key})")
            # The lock is the session's: commit, or the open transaction would sit idle for the whole migration
            # (and idle_in_transaction_session_timeout would end the session, and the lock with it).
            conn.commit()
        try:
            yield
        finally:
            with contextlib.suppress(Exception), translate_errors("postgresql"):
                cur.execute(f"SELECT pg_advisory_unlock({key})")
                conn.commit()
    finally:
        conn.invalidate()  # its session settings were changed: never back to the pool
