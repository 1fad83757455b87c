"""Cluster-wide, not per node (issue 27): several ledgers ("nodes", each with its own engine and pool) on one
PostgreSQL schema share one rate limit per key, write one checkpoint and one snapshot where each would have
written its own, and consolidate near-duplicates remembered at once into created + linked.

Nodes run in threads that meet at a barrier, or wait for each other's events (no sleeps)."""

from __future__ import annotations

import datetime as _dt
import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from freezegun import freeze_time

from api.ratelimit import RateLimiter, SharedRateLimiter, limiter
from api.rest.checkpointing import NoteSigner
from api.settings import Settings
from ledger.core.limits import Timeouts
from ledger.core.storage import SqlEventStore, make_engine, rate_buckets
from ledger.memory.report import RememberResult
from ledger.service import Actor, Ledger
from projections import snapshots
from projections.runner import ACTIVE_TIME, MEMORY, ProjectionRunner
from tests.conftest import LedgerFactory
from tests.server_support import READY_WITHIN, running

pytestmark = pytest.mark.postgres

T0 = _dt.datetime(2026, 1, 5, 9, 0, tzinfo=_dt.UTC)
HOUR = 3600.0
ELF = Actor("elf", "mcp")
R = TypeVar("R")


def nodes(make_ledger: LedgerFactory, url: str, count: int, **settings: object) -> list[Ledger]:
    """``count`` ledgers on one database: the first initialises it, the others open it as further nodes would."""
    return [make_ledger(url, **settings) for _ in range(count)]


def at_once(calls: Sequence[Callable[[], R]]) -> list[R]:
    """Run each call in a thread of its own, all released together by a barrier; their results in order."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], R]) -> R:
        barrier.wait(READY_WITHIN)
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def grow(ledger: Ledger, events: int) -> None:
    for _ in range(events):
        ledger.clock_in(ELF, "dev")


def tlog_rows(ledger: Ledger) -> list[int]:
    with ledger.store.engine.connect() as conn:
        return [int(r[0]) for r in conn.exec_driver_sql("SELECT size FROM tlog_checkpoints ORDER BY size")]


# --- the rate limit ----------------------------------------------------------------------------------------------


def test_the_rate_limit_of_a_key_holds_across_nodes_even_when_they_take_at_once(
    make_ledger: LedgerFactory, pg_url: str
) -> None:
    a, b = nodes(make_ledger, pg_url, 2)
    with freeze_time(T0) as clock:
        first, second = limiter(5, 60, a.store), limiter(5, 60, b.store)
        assert isinstance(first, SharedRateLimiter) and isinstance(second, SharedRateLimiter)
        # 12 calls of one key, six on each node, all at once: the key's budget is 5, not 5 per node
        answers = at_once([functools.partial((first, second)[n % 2].take, "key:k") for n in range(12)])
        other_key = second.take("key:other")  # each key its own budget, shared too
        clock.tick(_dt.timedelta(seconds=11))
        still = first.take("key:k")
        clock.tick(_dt.timedelta(seconds=1))  # one call's worth of the window (60 s / 5) since the bucket emptied
        refilled, after = second.take("key:k"), first.take("key:k")
    assert answers.count(None) == 5
    assert sorted(w for w in answers if w is not None) == [12.0] * 7  # the window's semantics: 60 s / 5 a call
    assert other_key is None
    assert still is not None and round(still, 6) == 1.0
    assert refilled is None and after == 12.0


def test_the_limit_holds_across_two_http_nodes(make_ledger: LedgerFactory, pg_url: str, tmp_path: Path) -> None:
    a, b = nodes(make_ledger, pg_url, 2)
    settings = Settings(home=tmp_path, database_url=pg_url, rate_limit=3, rate_limit_window_seconds=HOUR)
    with running(a, settings) as first, running(b, settings) as second, httpx.Client() as http:
        statuses = [http.get(f"{base}/keys/public").status_code for base in (first, second, first, second, first)]
        refused = http.get(f"{second}/keys/public")
    assert statuses == [200, 200, 200, 429, 429]
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1200"


def test_a_shared_limiter_that_cannot_reach_the_database_limits_per_node_and_fails_no_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Fail open to the node's own bucket: the store being down never turns the limiter into a 429 or a 503 of its
    own, and never into no limit at all."""
    engine = make_engine("postgresql://postgres@127.0.0.1:1/nothing", Timeouts(lock=1))  # nothing listens on port 1
    store = SqlEventStore(engine, row_key=None)
    try:
        shared = SharedRateLimiter(2, HOUR, store)
        with freeze_time(T0):
            answers = [shared.take("key:k") for _ in range(3)]
            alone = RateLimiter(2, HOUR)
            expected = [alone.take("key:k") for _ in range(3)]
    finally:
        engine.dispose()
    assert answers == expected == [None, None, 1800.0]
    warned = [r for r in caplog.records if "shared buckets cannot be reached" in r.getMessage()]
    assert len(warned) == 1  # once per outage, not once per call


def test_buckets_idle_for_a_window_are_pruned_as_full_ones(make_ledger: LedgerFactory, pg_url: str) -> None:
    ledger = make_ledger(pg_url)
    now = T0.timestamp()
    for key in ("key:old", "key:recent"):
        rate_buckets.take(ledger.store, key, 2, 60, now - (61 if key == "key:old" else 59))
    dropped = rate_buckets.prune(ledger.store, 60, now)
    with ledger.store.engine.connect() as conn:
        kept = [r[0] for r in conn.exec_driver_sql("SELECT key FROM rate_buckets")]
    assert dropped == 1 and kept == ["key:recent"]
    assert rate_buckets.take(ledger.store, "key:old", 2, 60, now) is None  # a full bucket again, as it would be


def test_sqlite_keeps_the_in_process_limiter(make_ledger: LedgerFactory, sqlite_url: str) -> None:
    ledger = make_ledger(sqlite_url)
    made = limiter(2, HOUR, ledger.store)
    assert type(made) is RateLimiter


# --- checkpoints -------------------------------------------------------------------------------------------------


def test_concurrent_checkpoint_ticks_on_three_nodes_sign_one_transparency_checkpoint(
    make_ledger: LedgerFactory, pg_url: str
) -> None:
    ledgers = nodes(make_ledger, pg_url, 3)
    signers = [NoteSigner(ledger, every_events=5, every=None) for ledger in ledgers]
    before = tlog_rows(ledgers[0])
    grow(ledgers[0], 5)
    at_once([signer.run_once for signer in signers])
    once = tlog_rows(ledgers[0])
    for signer in signers:  # polls at different moments of a growing log: due on none of them, 4 < 5 since
        grow(ledgers[0], 1)  # the newest kept checkpoint, whoever signed it
        signer.run_once()
    still = tlog_rows(ledgers[0])
    grow(ledgers[2], 2)
    at_once([signer.run_once for signer in signers])
    assert len(once) == len(before) + 1
    assert still == once
    assert len(tlog_rows(ledgers[0])) == len(once) + 1


def test_the_checkpoint_interval_in_events_is_measured_from_the_newest_kept_one_whoever_signed_it(
    make_ledger: LedgerFactory, pg_url: str
) -> None:
    ledgers = nodes(make_ledger, pg_url, 3)
    signers = [NoteSigner(ledger, every_events=5, every=None) for ledger in ledgers]
    for signer in signers:
        signer.run_once()  # each node's start
    grow(ledgers[0], 5)
    signers[0].run_once()  # the first node signs (5 events)
    for signer in signers[1:]:  # the others poll later, the log a little longer each time: 1 and 2 past it
        grow(ledgers[0], 1)
        signer.run_once()
    assert len(tlog_rows(ledgers[0])) == 1


def test_the_checkpoint_interval_in_time_is_measured_from_the_newest_kept_one_whoever_signed_it(
    make_ledger: LedgerFactory, pg_url: str
) -> None:
    with freeze_time(T0) as clock:
        ledgers = nodes(make_ledger, pg_url, 3)
        signers = [NoteSigner(ledger, every_events=0, every=_dt.timedelta(minutes=10)) for ledger in ledgers]
        for signer in signers:
            signer.run_once()  # each node's start: nothing due yet
        grow(ledgers[0], 1)
        clock.tick(_dt.timedelta(minutes=10))
        signers[0].run_once()  # ten minutes after the starts: the first node signs
        for signer in signers[1:]:  # the others poll later: 1 and 2 minutes after the kept one
            grow(ledgers[0], 1)
            clock.tick(_dt.timedelta(minutes=1))
            signer.run_once()
        once = tlog_rows(ledgers[0])
        clock.tick(_dt.timedelta(minutes=8))  # ten minutes after the kept one: due on every node, signed by one
        at_once([signer.run_once for signer in signers])
    assert len(once) == 1 and len(tlog_rows(ledgers[0])) == 2


def test_nodes_sharing_a_checkpoint_file_write_one_checkpoint_per_turn(
    make_ledger: LedgerFactory, pg_url: str, tmp_path: Path
) -> None:
    ledgers = nodes(make_ledger, pg_url, 3)
    shared = tmp_path / "shared" / "checkpoints.jsonl"
    writers = [ledger.checkpointer(shared, every_events=5, every=None) for ledger in ledgers]
    grow(ledgers[0], 5)
    written = at_once([functools.partial(w.run_once) for w in writers])
    again = []
    for writer in writers:  # polls at different moments of a growing log: 3 < 5 since the file's newest
        grow(ledgers[0], 1)
        again.append(writer.run_once())
    lines = shared.read_text().splitlines()
    assert sum(w is not None for w in written) == 1 and again == [None, None, None]
    assert len(lines) == 1


def test_an_explicit_tlog_checkpoint_waits_for_the_node_that_signs(make_ledger: LedgerFactory, pg_url: str) -> None:
    ledgers = nodes(make_ledger, pg_url, 3)
    grow(ledgers[0], 1)
    signed = at_once([ledger.sign_tlog_checkpoint for ledger in ledgers])
    assert [s.new for s in signed].count(True) == 1 and len({s.size for s in signed}) == 1
    assert len(tlog_rows(ledgers[0])) == 1


# --- snapshots ---------------------------------------------------------------------------------------------------


def snapshot_rows(ledger: Ledger) -> list[tuple[str, int]]:
    with ledger.store.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT name, position FROM projection_snapshots ORDER BY position")
        return [(str(r[0]), int(r[1])) for r in rows]


def test_concurrent_snapshots_on_three_nodes_write_one(make_ledger: LedgerFactory, pg_url: str) -> None:
    ledgers = nodes(make_ledger, pg_url, 3, snapshot_every_events=0)
    writers = [snapshots.Snapshots(ledger.store, ledger.signer, every=10) for ledger in ledgers]
    runners = [ProjectionRunner([MEMORY, ACTIVE_TIME]) for _ in ledgers]

    def staggered(events: int) -> None:
        """``events`` more, then each node caught up a little further than the one before (as nodes are)."""
        grow(ledgers[0], events)
        for n, (ledger, runner) in enumerate(zip(ledgers, runners, strict=True)):
            runner.catch_up(lambda after, ledger=ledger: ledger.store.iter_events(after))
            grow(ledgers[n], 1)

    def tick(n: int) -> Callable[[], None]:
        def run() -> None:
            writers[n].maybe_save(runners[n])
            writers[n].wait()

        return run

    staggered(12)
    at_once([tick(n) for n in range(3)])
    once = snapshot_rows(ledgers[0])
    staggered(4)  # fewer than 10 past the newest snapshot, whoever wrote it: due on no node
    at_once([tick(n) for n in range(3)])
    still = snapshot_rows(ledgers[0])
    staggered(10)
    at_once([tick(n) for n in range(3)])
    assert len(once) == 1
    assert still == once
    assert len(snapshot_rows(ledgers[0])) == 2


# --- near-duplicate consolidation --------------------------------------------------------------------------------


def test_a_text_and_its_near_duplicate_remembered_at_once_on_two_nodes_end_created_and_linked(
    make_ledger: LedgerFactory, pg_url: str
) -> None:
    """The race of issue 27, forced: both nodes have checked for near-duplicates, and found none, before either
    appends. Unserialised both are created; under the lease the second to append checks again (a block arrived
    since its check) and links to the first's block."""
    first, second = nodes(make_ledger, pg_url, 2, semantic=False, lock_timeout_seconds=READY_WITHIN)
    first_checked, second_checked = threading.Event(), threading.Event()
    check_first, check_second = first.memory._consolidation, second.memory._consolidation

    def first_checks(block_id: str, content: str):  # type: ignore[no-untyped-def]
        verdict = check_first(block_id, content)
        first_checked.set()
        assert second_checked.wait(READY_WITHIN)  # held after its check until the second node has checked too
        return verdict

    def second_checks(block_id: str, content: str):  # type: ignore[no-untyped-def]
        verdict = check_second(block_id, content)
        second_checked.set()
        return verdict

    def second_remembers() -> RememberResult:
        assert first_checked.wait(READY_WITHIN)
        return second.remember(ELF, "Run the database migrations before deploying!", [])

    first.memory._consolidation = first_checks  # type: ignore[method-assign]
    second.memory._consolidation = second_checks  # type: ignore[method-assign]
    with ThreadPoolExecutor(2) as pool:
        one = pool.submit(first.remember, ELF, "Run the database migrations before deploying", [])
        two = pool.submit(second_remembers)
        results = [one.result(), two.result()]
    assert sorted(r.status for r in results) == ["created", "linked"]
    created, linked = sorted(results, key=lambda r: r.status)
    assert linked.block_id == created.block_id and linked.consolidation == "words"
    assert first.memory_stats().blocks == second.memory_stats().blocks  # one block more on both nodes, not two


def test_remembers_that_do_not_meet_each_create_their_block(make_ledger: LedgerFactory, pg_url: str) -> None:
    first, second = nodes(make_ledger, pg_url, 2, semantic=False)
    made = at_once(
        [
            functools.partial(first.remember, ELF, "Run the database migrations before deploying", []),
            functools.partial(second.remember, ELF, "The staging cluster has three nodes behind nginx", []),
        ]
    )
    assert [r.status for r in made] == ["created", "created"]
