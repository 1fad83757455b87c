"""Engines for the event store: a database URL normalised, SQLite's pragmas and PostgreSQL's session limits."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine

from ledger.core.errors import InvalidInput
from ledger.core.limits import Timeouts


def normalise_url(url: str) -> str:
    """Accept ``postgresql://`` / ``postgres://`` URLs and a bare SQLite file path; pick psycopg 3."""
    if url.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser()}"
    return url


SQLITE_CACHE_KIB = 256
"""Page cache per SQLite connection, in KiB (SQLite's default is 2,048). Every pooled connection fills its own
cache, so it is paid once per connection: at 512 KiB, eight connections searching a 1M-event ledger held 5 MB
against 2.5 MB at 100k events (the FTS pages they touch grow with the index); the OS page cache keeps the file
once for every connection, so a smaller private cache costs reads from it, not from disk."""


def _keepalive(timeouts: Timeouts) -> tuple[int, int, int] | None:
    """Seconds before the first probe, between probes, and probes unanswered before the connection ends."""
    if timeouts.keepalive <= 0:
        return None
    idle = max(1, round(timeouts.keepalive))
    return idle, max(1, idle // 2), 3


def keepalive_args(timeouts: Timeouts) -> dict[str, Any]:
    """libpq's keepalives on the client's end (psycopg connect arguments), and ``tcp_user_timeout``: a server
    that stops answering ends the connection instead of hanging a request."""
    keepalive = _keepalive(timeouts)
    if keepalive is None:
        return {"keepalives": 1}
    idle, interval, count = keepalive
    return {
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": interval,
        "keepalives_count": count,
        "tcp_user_timeout": (idle + interval * count) * 1000,
    }


def session_settings(timeouts: Timeouts) -> str:
    """What every PostgreSQL session of the ledger sets when it connects: its lock and statement timeouts, the
    idle-in-transaction timeout (a stalled node's transaction, and the write lock with it, ends there) and the
    server's keepalives on its end (a node whose machine stopped answering is found dead: its session ends)."""
    parts = [
        f"SET lock_timeout = {timeouts.lock_ms}",
        f"SET statement_timeout = {timeouts.statement_ms}",
        f"SET idle_in_transaction_session_timeout = {timeouts.idle_in_transaction_ms}",
    ]
    keepalive = _keepalive(timeouts)
    if keepalive is not None:
        idle, interval, count = keepalive
        parts += [
            f"SET tcp_keepalives_idle = {idle}",
            f"SET tcp_keepalives_interval = {interval}",
            f"SET tcp_keepalives_count = {count}",
        ]
    return "; ".join(parts)


def make_engine(url: str, timeouts: Timeouts | None = None, *, pool_size: int | None = None) -> Engine:
    """Create the engine for ``url``. SQLite runs in WAL mode with ``synchronous=FULL`` (no lost commits).

    Waits are bounded by ``timeouts``: SQLite's busy wait (a writer waiting for another's write lock), and on
    PostgreSQL a session-level ``lock_timeout`` / ``statement_timeout`` for every statement (write transactions
    also set them ``LOCAL``, which holds behind a transaction-pooling proxy too), and the idle-in-transaction
    timeout and TCP keepalives of :func:`session_settings` and :func:`keepalive_args`. ``pool_size`` gives a small
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
            # Deleted rows and freed pages are overwritten with zeros as they go (crypto-shredding, issue 26: an
            # erased block's index rows, snapshots and data key leave no bytes behind without a VACUUM of the file).
            dbapi_conn.execute("PRAGMA secure_delete=ON")
            # Each pooled connection keeps its own page cache (2 MiB by default), and another connection's write
            # empties it at the next read anyway; the OS page cache holds the file once for all of them.
            dbapi_conn.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")

        return engine
    if url.startswith("postgresql"):
        connect_args: dict[str, Any] = {"connect_timeout": 5, **keepalive_args(timeouts)}
        engine = sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args, **pool)
        session = session_settings(timeouts)

        @sa_event.listens_for(engine, "connect")
        def _limits(dbapi_conn: Any, _record: Any) -> None:
            # Session-wide, so reads and DDL are bounded too (a URL's ``options`` such as search_path stay).
            with dbapi_conn.cursor() as cur:
                cur.execute(session)
            dbapi_conn.commit()

        return engine
    raise InvalidInput(f"unsupported database URL {url!r}", "use sqlite:///PATH or postgresql://USER@HOST/DB")
