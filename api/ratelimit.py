"""A per-key rate limit: each API key — or, where no key is sent, each agent — may make ``limit`` requests (REST)
and tool calls (MCP) per ``window`` seconds, in bursts of up to ``limit`` (a token bucket that refills evenly).

Over HTTP a call past the limit is a 429 with ``Retry-After``; over MCP a tool error saying when to retry.
Time comes from the project's clock (:mod:`ledger.core.clock`), so freezegun moves it.
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass
from typing import Any

from api.responses import ErrorBody
from ledger.core import clock as _clock
from ledger.core.errors import LedgerError

_PRUNE_AT = 10_000  # buckets kept before full ones are dropped (a flood of made-up keys cannot grow memory)


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

    def refusal(self, wait: float) -> RateLimited:
        """The error for a call refused by :meth:`take`, which said to wait ``wait`` seconds."""
        return RateLimited(self.limit, self.window, wait)

    def _prune(self, now: float) -> None:
        """Drop the buckets that have refilled completely: they are the same as no bucket."""
        full = [k for k, b in self._buckets.items() if b.tokens + (now - b.at) * self._rate >= self.limit]
        for key in full:
            del self._buckets[key]


def limiter(limit: int, window: float) -> RateLimiter | None:
    """The limiter the settings ask for; ``None`` when ``limit`` is 0 (the limit is off)."""
    return RateLimiter(limit, window) if limit > 0 else None
