"""The cluster-wide rate limit's counters: one token bucket per key in the table ``rate_buckets`` (PostgreSQL), so
every node of a ledger draws on the same budget.

A bucket holds ``limit`` tokens and refills at ``limit / window`` tokens a second (the semantics of the in-process
limiter, ``api.ratelimit``); a call takes one token if there is one. :func:`take` does the refill, the check and
the take in one statement (``INSERT … ON CONFLICT DO UPDATE … RETURNING``), atomic under the row's lock, so two
nodes never spend the same token. The time is the caller's clock (``ledger.core.clock``), not the database's;
a bucket's time only moves forward (a node whose clock is behind refills nothing), as in one process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.core.storage.driver_errors import translate_errors

if TYPE_CHECKING:
    from ledger.core.storage.contract import ReadModelTables

DDL = {
    "postgresql": "CREATE TABLE IF NOT EXISTS rate_buckets (key TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, "
    "at DOUBLE PRECISION NOT NULL, granted BOOLEAN NOT NULL)"
}
"""The table, created with the schema (``init`` / ``migrate``); SQLite keeps the in-process limiter, no table."""

# Parameters: key, limit, now; then now, rate, limit for the refill (three times, each SET sees the old row), now.
_REFILLED = "LEAST(%(limit)s, rate_buckets.tokens + GREATEST(0, %(now)s - rate_buckets.at) * %(rate)s)"
_TAKE = (
    "INSERT INTO rate_buckets AS rate_buckets (key, tokens, at, granted) "
    "VALUES (%(key)s, %(limit)s - 1, %(now)s, true) "
    "ON CONFLICT (key) DO UPDATE SET "
    f"tokens = CASE WHEN {_REFILLED} >= 1 THEN {_REFILLED} - 1 ELSE {_REFILLED} END, "
    f"granted = {_REFILLED} >= 1, "
    "at = GREATEST(rate_buckets.at, %(now)s) "
    "RETURNING tokens, granted"
)
_PRUNE = "DELETE FROM rate_buckets WHERE at < %(now)s - %(window)s"


def take(store: ReadModelTables, key: str, limit: int, window: float, now: float) -> float | None:
    """Spend one token of ``key``'s bucket at ``now`` (seconds since the epoch): ``None`` if allowed, else the
    seconds until a token is there. Raises the ledger's store errors when the database cannot be reached."""
    rate = limit / window
    with translate_errors(store.dialect):
        conn = store.engine.raw_connection()
        try:
            cur = conn.cursor()
            cur.execute(_TAKE, {"key": key, "limit": float(limit), "now": float(now), "rate": rate})
            row = cur.fetchone()
            conn.commit()
        finally:
            conn.close()
    assert row is not None  # an upsert with RETURNING returns its row
    tokens, granted = float(row[0]), bool(row[1])
    return None if granted else (1 - tokens) / rate


def prune(store: ReadModelTables, window: float, now: float) -> int:
    """Drop the buckets untouched for a whole window: they have refilled completely, the same as no bucket (a
    flood of made-up keys cannot grow the table without bound)."""
    with translate_errors(store.dialect):
        conn = store.engine.raw_connection()
        try:
            cur = conn.cursor()
            cur.execute(_PRUNE, {"now": float(now), "window": float(window)})
            dropped = int(cur.rowcount or 0)
            conn.commit()
        finally:
            conn.close()
    return dropped
