"""The per-key rate limit as a token bucket on the project's clock: time only moves through freezegun."""

from __future__ import annotations

import datetime as _dt

from freezegun import freeze_time

from api import ratelimit
from api.ratelimit import RateLimited, RateLimiter, key_for

T0 = _dt.datetime(2026, 1, 5, 9, 0, tzinfo=_dt.UTC)


def test_a_key_gets_its_limit_at_once_then_waits_for_the_bucket_to_refill() -> None:
    with freeze_time(T0) as clock:
        limiter = RateLimiter(3, 60)
        allowed = [limiter.take("key:a") for _ in range(3)]
        refused = limiter.take("key:a")
        clock.tick(_dt.timedelta(seconds=19))
        still_refused = limiter.take("key:a")
        clock.tick(_dt.timedelta(seconds=1))
        after_a_third_of_the_window = limiter.take("key:a")
        refused_again = limiter.take("key:a")
    assert allowed == [None, None, None]
    assert refused == 20.0  # one call's worth of the window: 60 s / 3
    assert still_refused is not None and round(still_refused, 6) == 1.0
    assert after_a_third_of_the_window is None
    assert refused_again == 20.0


def test_keys_do_not_share_a_budget() -> None:
    with freeze_time(T0):
        limiter = RateLimiter(1, 60)
        first = [limiter.take(k) for k in ("key:a", "key:b", "agent:local")]
        second = [limiter.take(k) for k in ("key:a", "key:b", "agent:local")]
    assert first == [None, None, None]
    assert all(wait == 60.0 for wait in second)


def test_a_quiet_key_refills_only_up_to_the_limit() -> None:
    with freeze_time(T0) as clock:
        limiter = RateLimiter(2, 10)
        limiter.take("k")
        clock.tick(_dt.timedelta(hours=5))
        burst = [limiter.take("k") for _ in range(3)]
    assert burst[:2] == [None, None] and burst[2] == 5.0


def test_a_clock_set_back_refills_nothing() -> None:
    with freeze_time(T0) as clock:
        limiter = RateLimiter(1, 60)
        limiter.take("k")
        clock.move_to(T0 - _dt.timedelta(minutes=5))
        wait = limiter.take("k")
    assert wait == 60.0


def test_full_buckets_are_dropped_so_made_up_keys_cannot_grow_memory() -> None:
    with freeze_time(T0) as clock:
        limiter = RateLimiter(5, 60)
        for i in range(ratelimit._PRUNE_AT):
            limiter.take(f"key:{i}")
        clock.tick(_dt.timedelta(seconds=60))
        limiter.take("key:new")
    assert list(limiter._buckets) == ["key:new"]


def test_the_refusal_says_when_to_retry_in_whole_seconds() -> None:
    refusal = RateLimiter(600, 60).refusal(0.04)
    assert isinstance(refusal, RateLimited)
    assert refusal.status == 429 and refusal.code == "rate_limited" and refusal.retry_after == 1
    assert "600 requests per 60 s" in refusal.message and refusal.hint == "retry after 1 s"
    assert RateLimiter(3, 60).refusal(19.2).retry_after == 20


def test_a_key_is_kept_as_a_hash_and_without_a_key_the_agent_is_the_bucket() -> None:
    secret = "cl_live_0123456789abcdef"
    bucket = key_for(secret, "local")
    assert bucket.startswith("key:") and secret not in bucket and bucket == key_for(secret, "other")
    assert key_for(None, "alice") == "agent:alice" and key_for("", "alice") == "agent:alice"


def test_a_limit_of_zero_is_no_limiter() -> None:
    assert ratelimit.limiter(0, 60) is None
    limiter = ratelimit.limiter(10, 1.5)
    assert limiter is not None and (limiter.limit, limiter.window) == (10, 1.5)
