"""The event store: one append-only, hash-chained ``events`` table on SQLite or PostgreSQL.

SQLAlchemy Core defines the schema; reads and the append hot path use the driver connection taken from the
engine's pool (BEGIN IMMEDIATE on SQLite, a transaction-level advisory lock on PostgreSQL), because a single
hash chain needs a total order anyway and it keeps positions gapless. Writers of several processes on one SQLite
file queue on a fair lock file beside it (``<db>.writelock``) rather than in SQLite's sleeping busy handler, and
concurrent appends of one process share one transaction (group commit). Driver errors are translated here into
the ledger's own errors.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import errno
import functools
import itertools
import json
import os
import sqlite3
import sys
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

try:
    import fcntl
except ImportError:  # not on Windows: SQLite's busy handler alone serialises writers there
    fcntl = None  # type: ignore[assignment]

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine

from ledger.core import clock as _clock
from ledger.core.canonical import format_ts, parse_ts
from ledger.core.chain import GENESIS_HASH, ChainReport, StoredRecord, chain_rows, verify_chain
from ledger.core.errors import (
    ConcurrencyError,
    Conflict,
    InvalidInput,
    LedgerError,
    NotInitialised,
    StoreBusy,
    StoreRefused,
    StoreUnavailable,
)
from ledger.core.events import DomainEvent, RecordedEvent
from ledger.core.limits import Timeouts
from ledger.core.mapper import ROW_COLUMNS, decode, decode_row, encode, encode_meta

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


SQLITE_CACHE_KIB = 512
"""Page cache per SQLite connection, in KiB (SQLite's default is 2,048)."""


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
            # Each pooled connection keeps its own page cache (2 MiB by default), and another connection's write
            # empties it at the next read anyway; the OS page cache holds the file once for all of them.
            dbapi_conn.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")

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


def _held_lock() -> Any:
    lock = threading.Lock()
    lock.acquire()
    return lock


# Rows per multi-row INSERT on SQLite: 10 parameters a row stays under the oldest SQLite's 999-parameter limit,
# and statement texts of 1..64 rows stay within the driver's statement cache.
_INSERT_CHUNK = 64


@functools.lru_cache(maxsize=_INSERT_CHUNK)
def _insert_rows_sql(rows: int) -> str:
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * rows)
    return f"INSERT INTO events ({_COLUMNS}) VALUES {values}"


@functools.lru_cache(maxsize=_INSERT_CHUNK)
def _guarded_insert_sql(rows: int) -> str:
    """Insert ``rows`` only if the head's hash is still the parameter after the rows (NULL: an empty ledger) and
    every stream of the JSON object after that is still at its version (each check an index probe). SQLite runs
    the VALUES list as a co-routine, so rows go in in the order given (no sort), as the chain trigger requires."""
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * rows)
    return (
        f"INSERT INTO events ({_COLUMNS}) SELECT * FROM (VALUES {values}) WHERE "
        "(SELECT hash FROM events WHERE position >= 1 ORDER BY position DESC LIMIT 1) IS ? AND NOT EXISTS "
        "(SELECT 1 FROM json_each(?) AS expected WHERE expected.value IS NOT COALESCE((SELECT version FROM events "
        "WHERE stream = expected.key AND position >= 1 ORDER BY version DESC LIMIT 1), 0))"
    )


@functools.lru_cache(maxsize=64)
def _versions_and_head_sql(streams: int) -> str:
    """One statement for a group: a row per stream (name, version) and the head's row (NULL, position, hash,
    recorded_at), each an index probe."""
    head = (
        "SELECT NULL, position, hash, recorded_at FROM (SELECT position, hash, recorded_at FROM events "
        "WHERE position >= 1 ORDER BY position DESC LIMIT 1) AS head"
    )
    versions = [f"SELECT ?, COALESCE(({_STREAM_VERSION}), 0), NULL, NULL" for _ in range(streams)]
    return " UNION ALL ".join([head, *versions])


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
    recorded_at: _dt.datetime | None = None
    error: BaseException | None = None
    done: bool = False
    # Held while the append waits in the queue; the leader releases it when the append is done or leads next.
    # One lock per waiter wakes exactly that thread (a shared condition woke every waiter for every group).
    wake: Any = None

    def outcome(self) -> list[RecordedEvent]:
        if self.error is not None:
            raise self.error
        assert self.rows is not None and self.recorded_at is not None
        # Build the result from the typed events already in hand instead of decoding the rows again.
        at = self.recorded_at
        meta = MappingProxyType(dict(self.meta))
        return [
            RecordedEvent(r[0], self.stream, r[2], at, meta, e, r[9])
            for r, e in zip(self.rows, self.events, strict=True)
        ]


@functools.cache
def _libc_flock() -> tuple[Any, Any] | None:
    """libc's ``flock`` called through ctypes *without* releasing the GIL, and ctypes; ``None`` where unavailable.

    ``fcntl.flock`` releases the GIL around the system call; under concurrent writers the calling thread then
    waits for the GIL to come back behind every other runnable thread, twice per group commit. A lock request
    that cannot block (``LOCK_NB``, ``LOCK_UN``) takes a microsecond, so it keeps the GIL instead."""
    try:
        import ctypes

        function = ctypes.PyDLL(None, use_errno=True).flock
    except (ImportError, OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int)
    function.restype = ctypes.c_int
    return function, ctypes


def _flock_at_once(fd: int, operation: int) -> bool:
    """A non-blocking ``flock`` (``LOCK_EX | LOCK_NB`` or ``LOCK_UN``): ``False`` if another holder has the lock."""
    libc = _libc_flock()
    if libc is None:
        try:
            fcntl.flock(fd, operation)
        except BlockingIOError:
            return False
        return True
    function, ctypes = libc
    while function(fd, operation) != 0:
        error = ctypes.get_errno()
        if error in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        if error != errno.EINTR:
            raise OSError(error, os.strerror(error), None)
    return True


class _FairFileLock:
    """The cross-process write lock of one SQLite file: ``flock`` on ``<database>.writelock`` beside it.

    SQLite's own busy handler makes a waiting writer sleep and retry with growing pauses, so whichever process
    retries at the right moment wins and the others keep sleeping: unfair, with long tails. A writer blocked in
    ``flock`` is queued by the kernel and woken when the lock is released, without sleeping loops, and the
    kernel drops the lock when its process dies. BEGIN IMMEDIATE and the busy handler still exclude whatever
    does not take this lock (another program, an older ledger).

    Threads of one process take turns on an in-process lock first (one open file, so the kernel sees one
    owner). The wait is bounded: ``flock`` itself cannot time out, so a contended wait is handed to a helper
    thread that blocks in ``flock`` while the caller waits at most ``timeout``; if the caller gives up, the
    helper releases the lock as soon as it gets it (or hands it to the next caller of this process that waits
    by then).
    """

    _IDLE_SECONDS = 2.0  # a helper thread with nothing to wait for ends after this

    def __init__(self, path: str) -> None:
        self.path = path
        self._forget()

    def _forget(self) -> None:
        self._pid = -1
        self._fd = -1
        self._turn = threading.Lock()  # held by the thread of this process that holds or waits for the file lock
        self._state = threading.Condition()
        self._requested = False  # the helper is to block in flock (or is blocking there)
        self._wanted = False  # a caller still waits for the helper's flock
        self._granted = False  # the helper got the lock for the waiting caller
        self._helper = False  # a helper thread is alive

    def acquire(self, timeout: float) -> None:
        """Take the lock within ``timeout`` seconds, else raise :class:`StoreBusy` (nothing taken)."""
        deadline = time.monotonic() + timeout
        if self._pid not in (-1, os.getpid()):
            self._forget()  # a child after fork: the parent's locks, helper and open file are not this process's
        if not self._turn.acquire(timeout=min(max(0.0, timeout), threading.TIMEOUT_MAX)):
            raise self._busy(timeout)
        try:
            fd = self._open()
            with self._state:
                if not self._requested:
                    if _flock_at_once(fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
                        return
                    self._requested = True
                    if not self._helper:
                        self._helper = True
                        threading.Thread(target=self._serve, name="ledger-writelock", daemon=True).start()
                    self._state.notify_all()
                self._wanted = True
                while not self._granted:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        self._wanted = False
                        raise self._busy(timeout)
                    self._state.wait(remaining)
                self._granted = self._wanted = False
        except BaseException:
            self._turn.release()
            raise

    def release(self) -> None:
        try:
            _flock_at_once(self._fd, fcntl.LOCK_UN)
        finally:
            self._turn.release()

    def _open(self) -> int:
        pid = os.getpid()
        if self._pid != pid:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except PermissionError:  # another user's lock file: flock needs no write access
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            self._pid = pid
            weakref.finalize(self, os.close, self._fd)
        return self._fd

    def _serve(self) -> None:
        """The helper: block in flock for a waiting caller; hand the lock over, or give it back if nobody waits."""
        with self._state:
            while True:
                while not self._requested:
                    if not self._state.wait(self._IDLE_SECONDS) and not self._requested:
                        self._helper = False
                        return
                fd = self._fd
                self._state.release()
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    got = True
                except OSError:  # not expected; the waiting caller then times out with StoreBusy
                    got = False
                finally:
                    self._state.acquire()
                self._requested = False
                if got and self._wanted:
                    self._granted = True
                    self._state.notify_all()
                elif got:
                    fcntl.flock(fd, fcntl.LOCK_UN)  # its caller gave up meanwhile

    def _busy(self, timeout: float) -> StoreBusy:
        return StoreBusy(
            f"SQLite store busy: another writer held the write lock ({self.path}) for over {timeout:g} s",
            _BUSY_HINT,
        )


def _write_lock_path(engine: Engine) -> str | None:
    """``<database>.writelock`` for a SQLite file; ``None`` for PostgreSQL and for in-memory or read-only SQLite."""
    if engine.dialect.name != "sqlite":
        return None
    database = engine.url.database or ""
    if database.startswith("file:"):  # a URI filename; its parameters may sit in the URL's query instead
        parsed = urllib.parse.urlsplit(database)
        mode = urllib.parse.parse_qs(parsed.query).get("mode") or engine.url.query.get("mode") or ""
        if (mode if isinstance(mode, str) else mode[-1]) in {"memory", "ro"}:
            return None
        database = urllib.parse.unquote(parsed.path)
    if not database or database == ":memory:":
        return None
    return f"{Path(database).expanduser()}.writelock"


class SqlEventStore:
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
        self.engine = engine
        self.group_limit = max(1, group_limit)  # 1: every append its own transaction (no group commit)
        self.timeouts = timeouts or Timeouts()
        self._probe: Engine | None = None
        self._probe_lock = threading.Lock()
        self.dialect = engine.dialect.name
        self._clock = clock
        self._ph = "?" if self.dialect == "sqlite" else "%s"
        self._insert_one = self.sql(f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        self._queue: list[_Pending] = []  # appends waiting for a group commit, in arrival order
        self._mutex = threading.Lock()  # guards _queue and _leading (held for list operations only)
        self._leading = False  # a thread is writing a group; while it is, new appends queue behind it
        # The head this store committed last (position, hash, recorded_at), for the next group's guarded insert;
        # None when unknown. Only the leader reads or sets it.
        self._head: tuple[int, str, str] | None = None
        self._guard = True  # whether the next group tries the guarded insert (see _write_group)
        lock_path = _write_lock_path(engine) if _fair_lock and fcntl is not None else None
        self._write_lock = _FairFileLock(lock_path) if lock_path else None

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

        The wait for the lock is bounded (``timeouts.lock``): past it :class:`StoreBusy`, nothing written. On a
        SQLite file, writers of every process first queue for its fair lock (:class:`_FairFileLock`), held until
        the transaction has committed or rolled back.
        """
        write_lock = self._take_write_lock()
        try:
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
        finally:
            if write_lock is not None:
                write_lock.release()

    def _take_write_lock(self) -> _FairFileLock | None:
        """Take the SQLite file's fair lock, if it has one; ``None`` when there is none to take."""
        write_lock = self._write_lock
        if write_lock is None:
            return None
        try:
            write_lock.acquire(self.timeouts.lock)
        except OSError:
            # The lock file cannot be created (a read-only directory, say): SQLite's busy handler alone serialises
            # this store's writers, as it did before the fair lock.
            self._write_lock = None
            return None
        return write_lock

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
        # Encoded here, in the caller's thread and outside every lock: the leader only chains and writes.
        pending = _Pending(stream, expected_version, events, [encode(e) for e in events], meta, encode_meta(meta))
        with self._mutex:
            self._queue.append(pending)
            lead = not self._leading
            if lead:
                self._leading = True
            else:
                pending.wake = _held_lock()
        if not lead:
            pending.wake.acquire()  # released by a leader: this append is done, or it leads the next group
            if pending.done:
                return pending.outcome()
        self._lead()
        return pending.outcome()

    def _lead(self) -> None:
        """Commit a group led by this thread's append (the first queued), then hand the lead to the first append
        queued meanwhile."""
        group: list[_Pending] = []
        try:
            group = self._commit_queued()
        finally:
            with self._mutex:
                successor = self._queue[0] if self._queue else None
                if successor is None:
                    self._leading = False
            for p in group:
                p.done = True
                if p.wake is not None:
                    p.wake.release()
            if successor is not None:
                successor.wake.release()  # not done: it leads

    def _commit_queued(self) -> list[_Pending]:
        """Take the write lock, then the appends queued by then (up to ``group_limit``), and write them in one
        transaction; return them, each ended with its rows or its error.

        The group is taken once the lock is held, so every append that queued while the leader waited for it
        (behind other processes, or behind the last group's fsync) joins: the more writers wait, the larger the
        groups. The fast path writes every member's rows in one statement. If the database refuses a row (rare:
        the ledger checks what it can before it appends), the transaction is rolled back and the group is
        written again member by member, each under a savepoint, so only the refused member fails."""
        group: list[_Pending] = []

        def take() -> list[_Pending]:
            with self._mutex:
                group.extend(self._queue[: self.group_limit])
                del self._queue[: self.group_limit]
            return group

        try:
            try:
                with self.write_transaction() as cur:
                    head = self._write_group(cur, take(), one_by_one=False)
            except _MemberRefused:
                self._head = None
                for p in group:
                    p.rows, p.error, p.recorded_at = None, None, None
                with self.write_transaction() as cur:
                    head = self._write_group(cur, group, one_by_one=True)
            self._head = head
        except BaseException as exc:
            # Nothing of the group was committed: every member that had not failed alone fails with the group
            # (each its own copy of the error, as each is raised in its own thread). If the lock was never had,
            # the appends queued by now fail with its error: they waited as long as the leader did.
            self._head = None
            for p in group or take():
                if p.error is None:
                    p.error, p.rows = (exc if p is group[0] else _copy_error(exc)), None
        return group

    def _versions_and_head(self, cur: Any, group: list[_Pending]) -> tuple[dict[str, int], tuple[int, str, str]]:
        """Each stream's version and the chain head, in one round trip (index probes only)."""
        if len(group) == 1:
            cur.execute(self.sql(_VERSION_AND_HEAD), (group[0].stream,))
            actual, position, digest, last_at = cur.fetchone()
            return {group[0].stream: actual}, (position or 0, digest or GENESIS_HASH, last_at or "")
        streams = sorted({p.stream for p in group})
        cur.execute(self.sql(_versions_and_head_sql(len(streams))), [s for stream in streams for s in (stream, stream)])
        versions: dict[str, int] = {}
        head: tuple[int, str, str] = (0, GENESIS_HASH, "")
        for name, number, digest, last_at in cur.fetchall():
            if name is None:
                head = (int(number), digest, last_at)
            else:
                versions[name] = int(number)
        return versions, head

    def _write_group(self, cur: Any, group: list[_Pending], *, one_by_one: bool) -> tuple[int, str, str]:
        """Chain and insert the rows of every member whose version check passes; return the new head.

        On SQLite, when this store wrote the head it knows (no other writer has appended since, as far as it
        knows), the group is written without reading anything first: the first insert statement itself checks,
        inside the transaction, that the head is still that one and every stream is at the version assumed
        (its first member's ``expected_version``), and inserts nothing otherwise. Then the versions and the
        head are read and the group is planned again. Either way every check is made under the write lock.

        While other writers keep appending between this store's commits (processes taking turns on one file),
        the guarded insert would fail every time, so it is skipped until a read shows the head this store left."""
        if not one_by_one and self._head is not None and self._guard and self.dialect == "sqlite":
            assumed: dict[str, int] = {}
            for p in group:
                assumed.setdefault(p.stream, p.expected_version)
            head = self._plan_and_insert(cur, group, assumed, self._head, one_by_one=False, guarded=True)
            if head is not None:
                return head
        versions, known = self._versions_and_head(cur, group)
        self._guard = known == self._head  # False: another writer appended since this store's last commit
        head = self._plan_and_insert(cur, group, versions, known, one_by_one=one_by_one, guarded=False)
        assert head is not None  # an unguarded write inserts or raises
        return head

    def _plan_and_insert(
        self,
        cur: Any,
        group: list[_Pending],
        versions: dict[str, int],
        head: tuple[int, str, str],
        *,
        one_by_one: bool,
        guarded: bool,
    ) -> tuple[int, str, str] | None:
        """Check each member against ``versions``, chain its rows after ``head`` and insert them. ``guarded``:
        ``versions`` and ``head`` are assumptions the insert verifies; ``None`` (nothing written, no member
        touched) when they no longer hold."""
        position, prev_hash, last_at = head
        assumed, versions = versions, dict(versions)
        # One timestamp for the group (it commits at once); recorded_at never goes backwards in position order,
        # so "as of T" is always a prefix of the log.
        recorded_at = max(format_ts(self._clock()), last_at)
        planned: list[tuple[_Pending, list[tuple[Any, ...]]]] = []
        lost: list[tuple[_Pending, ConcurrencyError]] = []  # guarded: their errors hold only if the guard does
        all_rows: list[tuple[Any, ...]] = []
        for p in group:
            actual = versions[p.stream]
            if actual != p.expected_version:
                error = ConcurrencyError(p.stream, p.expected_version, actual)
                if guarded:
                    lost.append((p, error))
                else:
                    p.error = error
                continue
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
                    self._insert(cur, rows)
                    cur.execute("RELEASE SAVEPOINT group_member")
                except Exception as exc:
                    cur.execute("ROLLBACK TO SAVEPOINT group_member")
                    cur.execute("RELEASE SAVEPOINT group_member")
                    p.error = classify_driver_error(exc, self.dialect) or exc
                    continue
            else:
                all_rows.extend(rows)
            planned.append((p, rows))
            versions[p.stream] = rows[-1][2]
            position, prev_hash = rows[-1][0], rows[-1][9]
        if all_rows:
            try:
                if not self._insert(cur, all_rows, (head, assumed) if guarded else None):
                    return None
            except Exception as exc:
                if len(planned) > 1 or lost:  # again, one member at a time (and every check made afresh)
                    raise _MemberRefused from exc
                raise
        at = parse_ts(recorded_at)
        for p, rows in planned:
            p.rows, p.recorded_at = rows, at
        for p, lost_race in lost:
            p.error = lost_race
        return position, prev_hash, recorded_at

    def _insert(
        self, cur: Any, rows: list[tuple[Any, ...]], guard: tuple[tuple[int, str, str], dict[str, int]] | None = None
    ) -> bool:
        """Insert ``rows`` in position order. On SQLite one multi-row statement per chunk: each statement step
        releases Python's GIL, and under concurrent writers getting it back cost more than the insert itself.

        ``guard`` (SQLite): the head and stream versions the rows were chained against. The first statement
        inserts only if they still hold; ``False`` when it inserted nothing."""
        if guard is not None:
            (position, digest, _), streams = guard
            chunk = rows[:_INSERT_CHUNK]
            cur.execute(
                _guarded_insert_sql(len(chunk)),
                [
                    *(value for row in chunk for value in row),
                    digest if position else None,
                    json.dumps(streams),
                ],
            )
            if cur.rowcount != len(chunk):
                return False
            rows = rows[_INSERT_CHUNK:]
        if not rows:
            return True
        if len(rows) == 1:
            cur.execute(self._insert_one, rows[0])
        elif self.dialect != "sqlite":
            cur.executemany(self._insert_one, rows)
        else:
            for start in range(0, len(rows), _INSERT_CHUNK):
                chunk = rows[start : start + _INSERT_CHUNK]
                cur.execute(_insert_rows_sql(len(chunk)), [value for row in chunk for value in row])
        return True

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

    def read_cursor(self) -> contextlib.AbstractContextManager[Any]:
        """A DBAPI cursor on a pooled connection for reads (derived read models use it too); driver errors are
        translated into the ledger's own."""
        return self._read_cursor()

    def load_stream(self, stream: str, after_version: int = 0) -> StreamState:
        """Load the events of ``stream`` after ``after_version`` for a decision, with the stream's version."""
        records = self._select("stream = ? AND version > ?", (stream, after_version), order="version")
        events = [decode(r) for r in records]
        return StreamState(stream, events[-1].version if events else after_version, events)

    def get(self, position: int) -> StoredRecord | None:
        rows = self._select("position = ?", (position,))
        return rows[0] if rows else None

    def records_at(self, positions: Sequence[int]) -> dict[int, StoredRecord]:
        """The records at ``positions`` (those that exist), by position: a few rows by primary key."""
        wanted = sorted({int(p) for p in positions})
        found: dict[int, StoredRecord] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            for r in self._select(f"position IN ({', '.join('?' for _ in chunk)})", chunk):
                found[r.position] = r
        return found

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
