"""The event store: one append-only, hash-chained ``events`` table on SQLite or PostgreSQL.

SQLAlchemy Core defines the schema; reads and the append hot path use the driver connection taken from the
engine's pool (BEGIN IMMEDIATE on SQLite, a transaction-level advisory lock on PostgreSQL), because a single
hash chain needs a total order anyway and it keeps positions gapless. Driver errors are translated here into
the ledger's own errors.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import itertools
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine

from ledger import clock as _clock
from ledger.canonical import format_ts, parse_ts
from ledger.chain import GENESIS_HASH, ChainReport, StoredRecord, chain_rows, verify_chain
from ledger.errors import (
    ConcurrencyError,
    Conflict,
    InvalidInput,
    LedgerError,
    NotInitialised,
    StoreBusy,
    StoreRefused,
    StoreUnavailable,
)
from ledger.events import DomainEvent, RecordedEvent
from ledger.limits import Timeouts
from ledger.mapper import ROW_COLUMNS, decode, decode_row, encode, encode_meta

# PostgreSQL serialises writers with a transaction-level advisory lock in its two-int form: the first int is
# the oid of this ledger's ``events`` table (so ledgers in different schemas of one database never wait for each
# other), the second names what is serialised. Every node of one ledger must compute the same key, i.e. run
# the same version: a node still taking the old single-key lock would not exclude a new one.
APPEND_LOCK = 0x6C656467  # "ledg": appends to the events table
INDEX_LOCK = 0x6D656D69  # "memi": search index maintenance
SNAPSHOT_LOCK = 0x736E6170  # "snap": projection snapshot writes (ledger.snapshots)
PROBE_LOCK_SECONDS = 1.0  # the longest a health probe waits for the write lock before it reports "busy"
_LEDGER_OID = "'events'::regclass::oid::int4"  # oid is unsigned; the int4 cast wraps, and stays unique


def _psycopg() -> Any:
    """The psycopg module if this process loaded it (it has, whenever a PostgreSQL error exists), else ``None``:
    the SQLite path never imports PostgreSQL's driver."""
    return sys.modules.get("psycopg")


# The ``events`` table. Only this module knows it; everything else sees typed events. SQLAlchemy Core, not a
# SQLModel class: the schema is all it is used for (reads and appends go through the driver), and SQLModel
# pulled in the ORM at import (~50 ms and ~11 MB per process; docs/DESIGN_NOTES.md).
_METADATA = sa.MetaData()
EVENTS = sa.Table(
    "events",
    _METADATA,
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("stream", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("type", sa.Text, nullable=False, index=True),
    sa.Column("schema_version", sa.Integer, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("meta", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.Text, nullable=False, index=True),
    sa.Column("prev_hash", sa.Text, nullable=False),
    sa.Column("hash", sa.Text, nullable=False),
    sa.UniqueConstraint("stream", "version", name="events_stream_version"),
)


_COLUMNS = "position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash"

# A stream's version: the (stream, version) index walked backwards, one row read however long the stream is
# (MAX(version) with the position filter read every row of the stream).
_STREAM_VERSION = "SELECT version FROM events WHERE stream = ? AND position >= 1 ORDER BY version DESC LIMIT 1"
_VERSION_AND_HEAD = (
    f"SELECT COALESCE(({_STREAM_VERSION}), 0), head.position, "
    "head.hash, head.recorded_at FROM (SELECT 1 AS one) AS anchor LEFT JOIN "
    "(SELECT position, hash, recorded_at FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1) AS head "
    "ON anchor.one = 1"
)

_CHAIN_MESSAGE = "events is a hash chain: a new row must extend it (position = head + 1, prev_hash = head hash)"

# The agent named in an event's metadata (``meta`` is canonical JSON text on both backends).
_META_AGENT = {"sqlite": "json_extract(meta, '$.agent')", "postgresql": "(meta::json ->> 'agent')"}

_TRIGGERS = {
    "sqlite": [
        """CREATE TRIGGER IF NOT EXISTS events_reject_update BEFORE UPDATE ON events
           BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE rejected'); END""",
        """CREATE TRIGGER IF NOT EXISTS events_reject_delete BEFORE DELETE ON events
           BEGIN SELECT RAISE(ABORT, 'events is append-only: DELETE rejected'); END""",
        # Both lookups are primary-key probes. The previous row is position - 1 once the position is head + 1.
        f"""CREATE TRIGGER IF NOT EXISTS events_require_chain BEFORE INSERT ON events
           BEGIN SELECT RAISE(ABORT, '{_CHAIN_MESSAGE}')
           WHERE NEW.position IS NOT (SELECT COALESCE(MAX(position), 0) + 1 FROM events WHERE position >= 1)
              OR NEW.prev_hash IS NOT COALESCE(
                   (SELECT hash FROM events WHERE position = NEW.position - 1 AND position >= 1), '{GENESIS_HASH}');
           END""",
    ],
    "postgresql": [
        """CREATE OR REPLACE FUNCTION events_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION USING MESSAGE = 'events is append-only: ' || TG_OP || ' rejected'; END $$""",
        "DROP TRIGGER IF EXISTS events_reject_change ON events",
        """CREATE TRIGGER events_reject_change BEFORE UPDATE OR DELETE ON events
           FOR EACH ROW EXECUTE FUNCTION events_reject_change()""",
        "DROP TRIGGER IF EXISTS events_reject_truncate ON events",
        """CREATE TRIGGER events_reject_truncate BEFORE TRUNCATE ON events
           FOR EACH STATEMENT EXECUTE FUNCTION events_reject_change()""",
        # search_path is pinned to the schema the ledger was created in, so ``events`` is always this table.
        f"""CREATE OR REPLACE FUNCTION events_require_chain() RETURNS trigger LANGUAGE plpgsql
           SET search_path FROM CURRENT AS $$
           DECLARE head_position bigint; head_hash text;
           BEGIN
             SELECT position, hash INTO head_position, head_hash FROM events WHERE position >= 1
               ORDER BY position DESC LIMIT 1;
             IF NOT FOUND THEN head_position := 0; head_hash := '{GENESIS_HASH}'; END IF;
             IF NEW.position IS DISTINCT FROM head_position + 1 OR NEW.prev_hash IS DISTINCT FROM head_hash THEN
               RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation', MESSAGE = '{_CHAIN_MESSAGE}';
             END IF;
             RETURN NEW;
           END $$""",
        "DROP TRIGGER IF EXISTS events_require_chain ON events",
        """CREATE TRIGGER events_require_chain BEFORE INSERT ON events
           FOR EACH ROW EXECUTE FUNCTION events_require_chain()""",
    ],
}


def normalise_url(url: str) -> str:
    """Accept ``postgresql://`` / ``postgres://`` URLs and a bare SQLite file path; pick psycopg 3."""
    if url.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser()}"
    return url


def make_engine(url: str, timeouts: Timeouts | None = None, *, pool_size: int | None = None) -> Engine:
    """Create the engine for ``url``. SQLite runs in WAL mode with ``synchronous=FULL`` (no lost commits).

    Waits are bounded by ``timeouts``: SQLite's busy wait (a writer waiting for another's write lock), and on
    PostgreSQL a session-level ``lock_timeout`` / ``statement_timeout`` for every statement (write transactions
    also set them ``LOCAL``, which holds behind a transaction-pooling proxy too). ``pool_size`` gives a small
    pool of its own, e.g. for the health probe.
    """
    timeouts = timeouts or Timeouts()
    url = normalise_url(url)
    pool: dict[str, Any] = {} if pool_size is None else {"pool_size": pool_size, "max_overflow": 0}
    if url.startswith("sqlite"):
        database = sa.engine.make_url(url).database
        if not database or database == ":memory:":
            raise InvalidInput(
                "an in-memory SQLite database cannot hold a ledger shared between connections",
                "give a file path, e.g. sqlite:///./ledger.db",
            )
        if not database.startswith("file:"):  # a URI filename (mode=ro, ...) names an existing database
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": timeouts.lock}, **pool)

        @sa_event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN IMMEDIATE ourselves
            dbapi_conn.execute("PRAGMA journal_mode=WAL")
            dbapi_conn.execute("PRAGMA synchronous=FULL")
            dbapi_conn.execute(f"PRAGMA busy_timeout={timeouts.lock_ms}")

        return engine
    if url.startswith("postgresql"):
        engine = sa.create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 5}, **pool)

        @sa_event.listens_for(engine, "connect")
        def _limits(dbapi_conn: Any, _record: Any) -> None:
            # Session-wide, so reads and DDL are bounded too (a URL's ``options`` such as search_path stay).
            with dbapi_conn.cursor() as cur:
                cur.execute(f"SET lock_timeout = {timeouts.lock_ms}; SET statement_timeout = {timeouts.statement_ms}")
            dbapi_conn.commit()

        return engine
    raise InvalidInput(f"unsupported database URL {url!r}", "use sqlite:///PATH or postgresql://USER@HOST/DB")


# SQLSTATE classes and codes (PostgreSQL), see https://www.postgresql.org/docs/current/errcodes-appendix.html.
_PG_BUSY = {"55P03", "57014", "40001", "40P01"}  # lock_not_available, query_canceled (statement_timeout), ...
_PG_REFUSED = {"42501", "25006"}  # insufficient_privilege, read_only_sql_transaction
_PG_REFUSED_CLASSES = {"28"}  # invalid authorization
_PG_UNAVAILABLE_CLASSES = {"08", "53", "57", "58"}  # connection, resources, operator intervention, system
_PG_NOT_INITIALISED = {"42P01", "3F000"}  # undefined_table, invalid_schema_name
# SQLite primary result codes (the low byte of ``sqlite_errorcode``).
_SQLITE_BUSY = {5, 6}  # SQLITE_BUSY "database is locked", SQLITE_LOCKED
_SQLITE_REFUSED = {3, 8, 23}  # SQLITE_PERM, SQLITE_READONLY "attempt to write a readonly database", SQLITE_AUTH
_SQLITE_DATA = {18, 20, 25}  # SQLITE_TOOBIG, SQLITE_MISMATCH, SQLITE_RANGE

_BUSY_HINT = "the ledger is busy (its write lock is held); nothing was recorded: send the same request again"
_REFUSED_HINT = (
    "the database refused the ledger's user (a read-only database or a role without the privilege); nothing "
    "was recorded: give the ledger's database user read and write access"
)


def classify_driver_error(exc: BaseException, dialect: str) -> LedgerError | None:
    """THE mapping from a database driver's error to the ledger's own (STYLE 7); ``None`` when ``exc`` is not a
    driver error this store knows how to read (it is then re-raised as it is).

    PostgreSQL by SQLSTATE: a lock or statement timeout is :class:`StoreBusy`; connection, resource and
    operator-intervention classes are :class:`StoreUnavailable`; privilege and read-only refusals are
    :class:`StoreRefused` (all 503: the gates fail closed); data exceptions (class 22) are :class:`InvalidInput`;
    integrity violations :class:`Conflict`. SQLite by its result code, the same way.
    """
    if isinstance(exc, sqlite3.Error):
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        text = str(exc).strip()
        if code in _SQLITE_BUSY:
            return StoreBusy(f"SQLite store busy: {text}", _BUSY_HINT)
        if code in _SQLITE_REFUSED:
            return StoreRefused(f"SQLite store refused the operation: {text}", _REFUSED_HINT)
        if isinstance(exc, sqlite3.IntegrityError):
            return Conflict(f"the store rejected the write: {text}", "re-load and retry")
        if code in _SQLITE_DATA or isinstance(exc, sqlite3.DataError):
            return InvalidInput(f"the store cannot hold this value: {text}", "send a smaller or simpler value")
        if isinstance(exc, sqlite3.OperationalError):
            if "no such table" in text:
                return NotInitialised("the database has no ledger schema", "run `compliance-ledger init`")
            return StoreUnavailable(f"SQLite store unavailable: {text}", "check the database file and disk")
        return None
    psycopg = _psycopg()
    if psycopg is None or not isinstance(exc, psycopg.Error):
        return None
    state = getattr(exc, "sqlstate", None) or ""
    text = str(exc).strip()
    if state in _PG_BUSY:
        return StoreBusy(f"PostgreSQL store busy: {text}", _BUSY_HINT)
    if state in _PG_REFUSED or state[:2] in _PG_REFUSED_CLASSES:
        return StoreRefused(f"PostgreSQL refused the operation: {text}", _REFUSED_HINT)
    if state in _PG_NOT_INITIALISED:
        return NotInitialised("the database has no ledger schema", "run `compliance-ledger init`")
    if state[:2] == "22":
        return InvalidInput(f"the store cannot hold this value: {text}", "send a smaller or simpler value")
    if state[:2] == "23":
        # Appends check versions under a lock, so this means a writer bypassed it (or the schema changed).
        return Conflict(f"the store rejected the write: {text}", "re-load and retry")
    if state[:2] in _PG_UNAVAILABLE_CLASSES or isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable(f"PostgreSQL store unavailable: {text}", "check that the server is reachable")
    return None


@contextlib.contextmanager
def translate_errors(dialect: str) -> Iterator[None]:
    """Re-raise driver and SQLAlchemy errors as the ledger's own, through :func:`classify_driver_error`."""
    try:
        yield
    except LedgerError:
        raise
    except OverflowError as exc:
        # The interfaces bound integers to 64 bits (ledger.limits); this is the backstop behind them.
        raise InvalidInput(
            f"a number is beyond the 64-bit range the store holds: {exc}", "send a position or count below 2**63"
        ) from exc
    except sa.exc.SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        mapped = classify_driver_error(orig, dialect) if isinstance(orig, BaseException) else None
        if mapped is not None:
            raise mapped from exc
        if isinstance(orig, BaseException):
            raise orig from exc
        raise StoreUnavailable(f"event store error: {exc}", "check the database URL and server") from exc
    except Exception as exc:
        mapped = classify_driver_error(exc, dialect)
        if mapped is None:
            raise
        raise mapped from exc


@dataclass(frozen=True, slots=True)
class Probe:
    """What a health probe saw: the head position, and whether the write lock was held past the probe's wait."""

    head_position: int
    busy: bool


@dataclass(frozen=True, slots=True)
class StreamState:
    """A stream's events and its current version, loaded for a decision."""

    stream: str
    version: int
    events: list[RecordedEvent]


def _copy_error(exc: BaseException) -> BaseException:
    try:
        twin = copy.copy(exc)
    except Exception:  # an exception class that cannot be rebuilt from its args: share the one instance
        return exc
    twin.__cause__ = exc.__cause__
    return twin


class _MemberRefused(Exception):
    """The database refused a row of a group written at once: write the group again, one member at a time."""


MAX_GROUP = 64
"""Most appends one group commit takes (each keeps its own version check, result and error)."""


@dataclass(slots=True)
class _Pending:
    """One append waiting for a group commit: what to write, then its rows or its error."""

    stream: str
    expected_version: int
    events: Sequence[DomainEvent]
    encoded: list[tuple[str, int, str]]
    meta: dict[str, Any]
    meta_json: str
    rows: list[tuple[Any, ...]] | None = None
    recorded_at: str = ""
    error: BaseException | None = None
    done: bool = False

    def outcome(self) -> list[RecordedEvent]:
        if self.error is not None:
            raise self.error
        assert self.rows is not None
        # Build the result from the typed events already in hand instead of decoding the rows again.
        at = parse_ts(self.recorded_at)
        meta = MappingProxyType(dict(self.meta))
        return [
            RecordedEvent(r[0], self.stream, r[2], at, meta, e, r[9])
            for r, e in zip(self.rows, self.events, strict=True)
        ]


class SqlEventStore:
    """Append-only event store with a hash chain, per-stream optimistic concurrency and gapless positions.

    Appends from threads of one process share transactions (**group commit**): the first caller to find no
    commit in progress leads, takes the write lock once and writes every append queued by then, each checked
    against its own ``expected_version`` and chained after the one before it, then commits once (one fsync)
    and hands the results out; the others wait for theirs. A lost race or a refused row fails that append
    alone (a savepoint undoes its rows); a failed commit fails every append of the group, and none is recorded.
    """

    def __init__(
        self,
        engine: Engine,
        clock: _clock.Clock = _clock.now,
        timeouts: Timeouts | None = None,
        *,
        group_limit: int = MAX_GROUP,
    ) -> None:
        self.engine = engine
        self.group_limit = max(1, group_limit)  # 1: every append its own transaction (no group commit)
        self.timeouts = timeouts or Timeouts()
        self._probe: Engine | None = None
        self._probe_lock = threading.Lock()
        self.dialect = engine.dialect.name
        self._clock = clock
        self._ph = "?" if self.dialect == "sqlite" else "%s"
        self._queue: list[_Pending] = []
        self._group = threading.Condition()
        self._leading = False

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

    # --- writing --------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def write_transaction(self, lock: int = APPEND_LOCK) -> Iterator[Any]:
        """Yield a DBAPI cursor inside a serialised write transaction; commit on success, roll back on error.

        The wait for the lock is bounded (``timeouts.lock``): past it :class:`StoreBusy`, nothing written.
        """
        with translate_errors(self.dialect):
            conn = self.engine.raw_connection()
            try:
                cur = conn.cursor()
                try:
                    if self.dialect == "sqlite":
                        cur.execute("BEGIN IMMEDIATE")
                    else:
                        # One round trip (simple protocol: no parameters); an advisory lock wait honours
                        # lock_timeout. LOCAL: these limits end with the transaction.
                        cur.execute(
                            f"SET LOCAL lock_timeout = {self.timeouts.lock_ms}; "
                            f"SET LOCAL statement_timeout = {self.timeouts.statement_ms}; "
                            f"SELECT pg_advisory_xact_lock({_LEDGER_OID}, {int(lock)})"
                        )
                    yield cur
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
            finally:
                conn.close()

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

    def sql(self, text: str) -> str:
        """Adapt a statement written with ``?`` placeholders to the driver's paramstyle."""
        return text if self._ph == "?" else text.replace("?", "%s")

    def append(
        self,
        stream: str,
        expected_version: int,
        events: Sequence[DomainEvent],
        meta: dict[str, Any],
    ) -> list[RecordedEvent]:
        """Append ``events`` to ``stream`` if it is still at ``expected_version``; all or nothing.

        Raises :class:`ConcurrencyError` when another writer got there first. Returns the recorded events
        with their positions and hashes.
        """
        if not events:
            return []
        pending = _Pending(stream, expected_version, events, [encode(e) for e in events], meta, encode_meta(meta))
        with self._group:
            self._queue.append(pending)
            while not pending.done and self._leading:
                self._group.wait()
            if pending.done:
                return pending.outcome()
            self._leading = True
        try:
            while not pending.done:
                with self._group:
                    group = self._queue[: self.group_limit]
                    del self._queue[: self.group_limit]
                self._commit_group(group)
        finally:
            with self._group:
                self._leading = False
                self._group.notify_all()
        return pending.outcome()

    def _commit_group(self, group: list[_Pending]) -> None:
        """Write ``group`` in one transaction; every member ends ``done`` with its rows or its error.

        The fast path writes every member's rows in one statement. If the database refuses a row (rare: the
        ledger checks what it can before it appends), the transaction is rolled back and the group is written
        again member by member, each under a savepoint, so only the refused member fails."""
        try:
            try:
                with self.write_transaction() as cur:
                    self._write_group(cur, group, one_by_one=False)
            except _MemberRefused:
                for p in group:
                    p.rows, p.error = None, None
                with self.write_transaction() as cur:
                    self._write_group(cur, group, one_by_one=True)
        except BaseException as exc:
            # Nothing of the group was committed: every member that had not failed alone fails with the group
            # (each its own copy of the error, as each is raised in its own thread).
            for p in group:
                if p.error is None:
                    p.error, p.rows = (exc if p is group[0] else _copy_error(exc)), None
        finally:
            with self._group:
                for p in group:
                    p.done = True
                self._group.notify_all()

    def _versions_and_head(self, cur: Any, group: list[_Pending]) -> tuple[dict[str, int], tuple[int, str, str]]:
        """Each stream's version and the chain head: one round trip for one append, two for a group."""
        if len(group) == 1:
            cur.execute(self.sql(_VERSION_AND_HEAD), (group[0].stream,))
            actual, position, digest, last_at = cur.fetchone()
            return {group[0].stream: actual}, (position or 0, digest or GENESIS_HASH, last_at or "")
        streams = sorted({p.stream for p in group})
        cur.execute(
            self.sql(" UNION ALL ".join(f"SELECT ?, COALESCE(({_STREAM_VERSION}), 0)" for _ in streams)),
            [name for stream in streams for name in (stream, stream)],
        )
        versions = {stream: int(version) for stream, version in cur.fetchall()}
        cur.execute("SELECT position, hash, recorded_at FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1")
        row = cur.fetchone()
        return versions, (row[0], row[1], row[2]) if row else (0, GENESIS_HASH, "")

    def _write_group(self, cur: Any, group: list[_Pending], *, one_by_one: bool) -> None:
        insert = self.sql(f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        versions, head = self._versions_and_head(cur, group)
        planned: list[tuple[_Pending, list[tuple[Any, ...]], str]] = []
        for p in group:
            actual = versions[p.stream]
            if actual != p.expected_version:
                p.error = ConcurrencyError(p.stream, p.expected_version, actual)
                continue
            position, prev_hash, last_at = head
            # recorded_at never goes backwards in position order, so "as of T" is always a prefix of the log.
            recorded_at = max(format_ts(self._clock()), last_at)
            rows = chain_rows(
                position=position,
                version=actual,
                stream=p.stream,
                recorded_at=recorded_at,
                prev_hash=prev_hash,
                meta_json=p.meta_json,
                encoded=p.encoded,
            )
            if one_by_one:
                try:
                    cur.execute("SAVEPOINT group_member")
                    cur.executemany(insert, rows)
                    cur.execute("RELEASE SAVEPOINT group_member")
                except Exception as exc:
                    cur.execute("ROLLBACK TO SAVEPOINT group_member")
                    cur.execute("RELEASE SAVEPOINT group_member")
                    p.error = classify_driver_error(exc, self.dialect) or exc
                    continue
            planned.append((p, rows, recorded_at))
            versions[p.stream] = rows[-1][2]
            head = (rows[-1][0], rows[-1][9], recorded_at)
        if not one_by_one and planned:
            all_rows = [row for _, rows, _ in planned for row in rows]
            try:
                if len(all_rows) == 1:
                    cur.execute(insert, all_rows[0])
                else:
                    cur.executemany(insert, all_rows)
            except Exception as exc:
                if len(planned) > 1:
                    raise _MemberRefused from exc
                raise
        for p, rows, recorded_at in planned:
            p.rows, p.recorded_at = rows, recorded_at

    # --- reading --------------------------------------------------------------------------------------

    def _select(
        self, conditions: str = "", params: Sequence[Any] = (), order: str = "position", limit: int | None = None
    ) -> list[StoredRecord]:
        return [StoredRecord(*r) for r in self._rows(_COLUMNS, conditions, params, order, limit)]

    def _rows(
        self,
        columns: str,
        conditions: str = "",
        params: Sequence[Any] = (),
        order: str = "position",
        limit: int | None = None,
        *,
        after: int = 0,
    ) -> list[tuple[Any, ...]]:
        # Every read sees only rows on the chain's positions: a row forced in at 0 or below is never obeyed.
        # ``position > max(after, 0)`` is the one lower bound: given two (``position >= 1 AND position > ?``)
        # SQLite seeked to the constant one and stepped over every row before ``after``, on every page.
        text = f"SELECT {columns} FROM events WHERE position > ?{' AND ' + conditions if conditions else ''}"
        text += f" ORDER BY {order}"
        if limit is not None:
            text += f" LIMIT {int(limit)}"
        with self._read_cursor() as cur:
            cur.execute(self.sql(text), (max(after, 0), *params))
            rows: list[tuple[Any, ...]] = cur.fetchall()
            return rows

    @contextlib.contextmanager
    def _read_cursor(self) -> Iterator[Any]:
        """A DBAPI cursor for reads (cheaper than SQLAlchemy result rows on the replay path)."""
        with translate_errors(self.dialect):
            conn = self.engine.raw_connection()
            try:
                yield conn.cursor()
            finally:
                conn.close()  # the pool rolls back whatever read transaction the driver opened

    def load_stream(self, stream: str, after_version: int = 0) -> StreamState:
        """Load the events of ``stream`` after ``after_version`` for a decision, with the stream's version."""
        records = self._select("stream = ? AND version > ?", (stream, after_version), order="version")
        events = [decode(r) for r in records]
        return StreamState(stream, events[-1].version if events else after_version, events)

    def get(self, position: int) -> StoredRecord | None:
        rows = self._select("position = ?", (position,))
        return rows[0] if rows else None

    def head(self) -> tuple[int, str]:
        """Return the last position and its hash (``0`` and the genesis hash for an empty ledger)."""
        with translate_errors(self.dialect), self.engine.connect() as conn:
            row = conn.exec_driver_sql(
                "SELECT position, hash FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1"
            ).fetchone()
        return (row[0], row[1]) if row else (0, GENESIS_HASH)

    def position_as_of(self, as_of: _dt.datetime) -> int:
        """The last position recorded at or before ``as_of`` (0 if none)."""
        with translate_errors(self.dialect), self.engine.connect() as conn:
            row = conn.exec_driver_sql(
                self.sql("SELECT MAX(position) FROM events WHERE position >= 1 AND recorded_at <= ?"),
                (format_ts(as_of),),
            ).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

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
        """Yield stored records in position order, paging by position (no long-lived cursor).

        ``agent`` keeps only events whose metadata names that agent (filtered in the database, so a page of
        one agent's events never needs the others)."""
        for page in self._pages(_COLUMNS, after, until, stream, types, agent, batch_size):
            yield from itertools.starmap(StoredRecord, page)

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
        """Yield typed events in position order (upcast on read), filtered and paged as :meth:`iter_records`.

        Reads only the columns an event needs and decodes each row as it is (no ``StoredRecord`` between)."""
        for page in self._pages(ROW_COLUMNS, after, until, stream, types, agent, batch_size):
            yield from itertools.starmap(decode_row, page)

    def _pages(
        self,
        columns: str,
        after: int,
        until: int | None,
        stream: str | None,
        types: Sequence[str] | None,
        agent: str | None,
        batch_size: int,
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Pages of rows (``columns``, position first) after ``after``, each its own query from the last
        position of the one before."""
        while True:
            clauses: list[str] = []
            params: list[Any] = []
            if until is not None:
                clauses.append("position <= ?")
                params.append(until)
            if stream is not None:
                clauses.append("stream = ?")
                params.append(stream)
            if types:
                clauses.append(f"type IN ({', '.join('?' for _ in types)})")
                params.extend(types)
            if agent is not None:
                clauses.append(_META_AGENT[self.dialect] + " = ?")
                params.append(agent)
            page = self._rows(columns, " AND ".join(clauses), params, limit=batch_size, after=after)
            if page:
                yield page
            if len(page) < batch_size:
                return
            after = page[-1][0]

    def verify(self, progress: Callable[[int], None] | None = None, batch_size: int = 5000) -> ChainReport:
        """Recompute the whole hash chain; report the first position where it breaks.

        Besides each link, the table must hold exactly the positions 1..head: a row outside them (forced in
        behind the triggers) is reported even though no read ever obeys it.
        """
        head, _ = self.head()
        with translate_errors(self.dialect), self.engine.connect() as conn:
            outside, rows = conn.exec_driver_sql(
                self.sql("SELECT MIN(position), COUNT(*) FROM events WHERE position <= ?"), (head,)
            ).one()
        if outside is not None and outside < 1:
            return ChainReport(
                False, 0, 0, int(outside), f"a row at position {outside} lies outside 1..{head}: it is off the chain"
            )

        def records() -> Iterator[StoredRecord]:
            # Up to the head read above: events appended while verify runs are not part of this check.
            for i, rec in enumerate(self.iter_records(until=head, batch_size=batch_size), 1):
                if progress and i % 1000 == 0:
                    progress(i)
                yield rec

        report = verify_chain(records())
        if progress:
            progress(report.checked)
        if report.ok and report.head_position != head:
            return ChainReport(
                False,
                report.checked,
                report.head_position,
                report.head_position + 1,
                "the chain ends before the table's last position",
            )
        if report.ok and rows != head:
            return ChainReport(
                False, report.checked, head, None, f"the table holds {rows} rows for the positions 1..{head}"
            )
        return report
