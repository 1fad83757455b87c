"""What the ledger benchmarks share: their sizes, a realistic event, stores and raw SQLite connections on the same
schema, and a look at what ``SqlEventStore.append`` does today (so explanations name only steps it still takes)."""

from __future__ import annotations

import datetime as _dt
import inspect
import os
import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from ledger.core.events import MemorySearched
from ledger.core.storage import RowKey, SqlEventStore, make_engine

console = Console(stderr=True)

PG_URL = os.environ.get("LEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
AGENT = "bench"
QUERIES = [
    "how do we migrate the events table",
    "hash chain verification failure",
    "postgres advisory lock contention",
    "session token expiry rules",
    "projection replay as of a timestamp",
    "mcp stdio server default session",
]
COLUMNS = "position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash, hash"
INSERT = f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
LAST = "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"


@dataclass(frozen=True)
class Sizes:
    single_per_round: int
    single_rounds: int
    single_warmup: int
    batch_per_round: int
    batch_rounds: int
    batch_warmup: int
    replay_events: int
    replay_ours_runs: int
    replay_raw_runs: int
    mcp_calls: int
    mcp_warmup: int
    direct_calls: int
    pg_seconds: float
    pg_warmup: int


FULL = Sizes(
    single_per_round=400,
    single_rounds=15,
    single_warmup=100,
    batch_per_round=40,
    batch_rounds=9,
    batch_warmup=5,
    replay_events=200_000,
    replay_ours_runs=5,
    replay_raw_runs=5,
    mcp_calls=300,
    mcp_warmup=20,
    direct_calls=100,
    pg_seconds=6.0,
    pg_warmup=20,
)
QUICK = Sizes(
    single_per_round=30,
    single_rounds=2,
    single_warmup=5,
    batch_per_round=3,
    batch_rounds=2,
    batch_warmup=1,
    replay_events=3_000,
    replay_ours_runs=1,
    replay_raw_runs=1,
    mcp_calls=20,
    mcp_warmup=3,
    direct_calls=10,
    pg_seconds=0.5,
    pg_warmup=3,
)


def search_event(i: int, session_id: str, expires: _dt.datetime | None = None) -> MemorySearched:
    """A small, realistic MemorySearched (the event the gate appends most)."""
    return MemorySearched(
        session_id=session_id,
        query=QUERIES[i % len(QUERIES)],
        limit=10,
        result_ids=[f"blk_{(i * 7 + k) % 997:024x}" for k in range(3)],
        count=3,
        token_expires_at=expires,
    )


def session_ids(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"ses_{rng.getrandbits(80):020x}" for _ in range(n)]


def raw_sqlite(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection with the store's pragmas (WAL, synchronous=FULL), autocommit mode."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def sqlite_pragmas(conn: Any) -> str:
    """journal_mode and synchronous as seen on a DBAPI connection (or anything with ``execute``)."""
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    cur = conn.cursor()
    cur.execute("PRAGMA journal_mode")
    jm = cur.fetchone()[0]
    cur.execute("PRAGMA synchronous")
    sync = cur.fetchone()[0]
    return f"journal_mode={jm}, synchronous={names.get(sync, sync)}"


ROW_KEY = RowKey(b"bench-row-key".ljust(32, b"."))
"""The row authenticators' key of every store a benchmark run opens."""


def new_store(path: Path) -> SqlEventStore:
    store = SqlEventStore(make_engine(str(path)), row_key=ROW_KEY)
    store.create_schema()
    return store


def raw_table(path: Path) -> sqlite3.Connection:
    """A raw sqlite3 connection to a file whose ``events`` table (and indexes) is exactly the store's."""
    setup = new_store(path)
    setup.engine.dispose()
    return raw_sqlite(path)


def append_does(fragment: str) -> bool:
    """Whether ``SqlEventStore.append`` (as installed now) contains ``fragment``.

    The explanations name steps of the append only when the code under test still does them.
    """
    return fragment in inspect.getsource(SqlEventStore.append)
