"""A per-key rate limit: each API key — or, where no key is sent, each agent — may make ``limit`` requests (REST)
and tool calls (MCP) per ``window`` seconds, in bursts of up to ``limit`` (a token bucket that refills evenly).

Over HTTP a call past the limit is a 429 with ``Retry-After``; over MCP a tool error saying when to retry.
Time comes from the project's clock (:mod:`ledger.core.clock`), so freezegun moves it.

On PostgreSQL the buckets are the ledger's (:class:`SharedRateLimiter`, table ``rate_buckets``): every node of the
cluster draws on the same budget, so the limit is per key across the cluster, not per node. On SQLite (one host)
they stay in the process (:class:`RateLimiter`). A shared limiter that cannot reach the database falls back to the
node's own bucket for that call (the limit then holds per node, as on SQLite): it never refuses nor fails a call
because the limiter's store is down, and never lets calls through unlimited.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from api.responses import ErrorBody
from ledger.core import clock as _clock
from ledger.core.errors import LedgerError

if TYPE_CHECKING:  # the store loads SQLAlchemy: not on the path of ``mcp``'s ``initialize`` answer
    from ledger.core.storage import ReadModelTables

log = logging.getLogger(__name__)

_PRUNE_AT = 10_000  # buckets kept before full ones are dropped (a flood of made-up keys cannot grow memory)
_PRUNE_EVERY = 10_000  # a shared limiter drops the database's full buckets once per this many calls of its node


class RateLimited(LedgerError):
    """The caller made more requests than its rate limit allows in the window; nothing was done."""

    code = "rate_limited"
    status = 429

    def __init__(self, limit: int, window: float, wait: float) -> None:
        self.retry_after = max(1, math.ceil(wait))
        super().__init__(
            f"rate limit reached: at most {limit} requests per {window:g} s for this API key (or agent)",
            f"retry after {self.retry_after} s",
        )


# What /openapi.json documents for every rate-limited route.
RESPONSES: dict[int | str, dict[str, Any]] = {
    429: {
        "model": ErrorBody,
        "description": "too many requests from this API key (or agent) in the window; nothing was done",
        "headers": {"Retry-After": {"description": "seconds to wait before retrying", "schema": {"type": "integer"}}},
    }
}


def key_for(api_key: str | None, agent: str) -> str:
    """The bucket a caller draws from: its API key (hashed: no secret is kept) or, without one, its agent."""
    if api_key:
        return "key:" + hashlib.sha256(api_key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return "agent:" + agent


@dataclass
class _Bucket:
    tokens: float
    at: float  # the clock's time, in seconds, when ``tokens`` was last computed


class RateLimiter:
    """``limit`` calls per ``window`` seconds per key; shared by the REST and MCP front ends of one process."""

    def __init__(self, limit: int, window: float, clock: _clock.Clock = _clock.now) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("a rate limit needs limit >= 1 and window > 0 (no limiter at all turns it off)")
        self.limit = limit
        self.window = window
        self.clock = clock
        self._rate = limit / window  # tokens per second
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float | None:
        """Spend one call of ``key``'s budget: ``None`` if allowed, else the seconds until one is."""
        now = self.clock().timestamp()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= _PRUNE_AT:
                    self._prune(now)
                bucket = self._buckets[key] = _Bucket(float(self.limit), now)
            else:  # a clock set back refills nothing
                bucket.tokens = min(float(self.limit), bucket.tokens + max(0.0, now - bucket.at) * self._rate)
                bucket.at = now
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return None
            return (1 - bucket.tokens) / self._rate

    async def take_async(self, key: str) -> float | None:
        """:meth:`take` from the event loop (in-process: at once; shared: in a worker thread)."""
        return self.take(key)

    def refusal(self, wait: float) -> RateLimited:
        """The error for a call refused by :meth:`take`, which said to wait ``wait`` seconds."""
        return RateLimited(self.limit, self.window, wait)

    def _prune(self, now: float) -> None:
        """Drop the buckets that have refilled completely: they are the same as no bucket."""
        full = [k for k, b in self._buckets.items() if b.tokens + (now - b.at) * self._rate >= self.limit]
        for key in full:
            del self._buckets[key]


class SharedRateLimiter(RateLimiter):
    """The limiter of a PostgreSQL ledger: the same token buckets, kept in the database (one atomic statement a
    call, :func:`ledger.core.storage.rate_buckets.take`) and shared by every node. When the database cannot be
    reached the call draws on this node's own bucket instead (logged once per outage)."""

    def __init__(self, limit: int, window: float, store: ReadModelTables, clock: _clock.Clock = _clock.now) -> None:
        super().__init__(limit, window, clock)
        self.store = store
        self._problem: str | None = None
        self._calls = 0

    def take(self, key: str) -> float | None:
        from ledger.core.storage import rate_buckets

        now = self.clock().timestamp()
        try:
            wait = rate_buckets.take(self.store, key, self.limit, self.window, now)
        except LedgerError as exc:  # the shared budget is out of reach: this node's own bucket, never no limit
            if exc.message != self._problem:
                log.warning("rate limit: the shared buckets cannot be reached (%s); limiting per node", exc.message)
            self._problem = exc.message
            return super().take(key)
        if self._problem is not None:
            log.warning("rate limit: the shared buckets are back; limiting across the nodes again")
            self._problem = None
        self._calls += 1
        if self._calls % _PRUNE_EVERY == 0:
            with contextlib.suppress(LedgerError):  # the next round prunes
                rate_buckets.prune(self.store, self.window, now)
        return wait

    async def take_async(self, key: str) -> float | None:
        return await anyio.to_thread.run_sync(self.take, key)


def limiter(limit: int, window: float, store: ReadModelTables | None = None) -> RateLimiter | None:
    """The limiter the settings ask for; ``None`` when ``limit`` is 0 (the limit is off). With the ledger's
    ``store`` on PostgreSQL the limit is shared by every node (:class:`SharedRateLimiter`)."""
    if limit <= 0:
        return None
    if store is None:
        return RateLimiter(limit, window)
    from ledger.core.storage import rate_buckets

    if store.dialect in rate_buckets.DDL:
        return SharedRateLimiter(limit, window, store)
    return RateLimiter(limit, window)
