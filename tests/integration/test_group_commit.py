"""Group commit: concurrent appends of one process share a transaction, each keeping its own version check,
its own result and its own error; a group that fails to commit records nothing (SQLite and PostgreSQL)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ledger.core.chain import verify_chain
from ledger.core.errors import ConcurrencyError, StoreUnavailable
from ledger.core.events import DomainEvent, RecordedEvent
from ledger.core.storage import SqlEventStore
from tests.integration.test_store_contract import (
    META,
    SqlStoreFactory,
    count_rows,
    install_insert_trigger,
    make_sql_store,  # noqa: F401 (a fixture: group commit is the SQL store's)
    searched,
    started,
)

READY_WAIT = 120.0  # a readiness bound for a loaded machine, not a timing expectation


@pytest.fixture
def store(make_sql_store: SqlStoreFactory) -> SqlEventStore:  # noqa: F811
    return make_sql_store()


Outcome = list[RecordedEvent] | BaseException


class HeldFirstTransaction:
    """Wraps ``store.write_transaction``: the first transaction, holding the write lock, waits until ``queued``
    appends (the leader's among them) are queued, so the leader, which takes its group once it holds the lock,
    takes them all; counts transactions; optionally fails the first transaction after its rows were written,
    before it commits."""

    def __init__(self, store: SqlEventStore, queued: int, fail_group: bool = False) -> None:
        self.store, self.queued, self.fail_group = store, queued, fail_group
        self.inner = store.write_transaction
        self.transactions = 0

    @contextlib.contextmanager
    def __call__(self, *args: Any) -> Iterator[Any]:
        self.transactions += 1
        number = self.transactions
        with self.inner(*args) as cur:
            if number == 1:
                deadline = time.monotonic() + READY_WAIT
                while len(self.store._queue) < self.queued:
                    assert time.monotonic() < deadline, "the other appends never queued"
                    time.sleep(0.001)
            yield cur
            if number == 1 and self.fail_group:
                raise StoreUnavailable("the commit failed", "retry")


def race(
    store: SqlEventStore,
    first: tuple[str, int, list[DomainEvent]],
    rest: list[tuple[str, int, list[DomainEvent]]],
    fail_group: bool = False,
) -> tuple[HeldFirstTransaction, list[Outcome]]:
    held = HeldFirstTransaction(store, 1 + len(rest), fail_group)
    store.write_transaction = held  # type: ignore[method-assign]
    outcomes: list[Outcome] = [ValueError("not run")] * (1 + len(rest))

    def run(i: int, stream: str, version: int, events: list[DomainEvent]) -> Callable[[], None]:
        def go() -> None:
            try:
                outcomes[i] = store.append(stream, version, events, META)
            except BaseException as exc:  # the outcome is what the test checks
                outcomes[i] = exc

        return go

    leader = threading.Thread(target=run(0, *first))
    leader.start()
    while held.transactions == 0:  # readiness: the leader holds the write lock
        time.sleep(0.001)
    others = [threading.Thread(target=run(i + 1, *spec)) for i, spec in enumerate(rest)]
    for t in others:
        t.start()
    for t in [leader, *others]:
        t.join(READY_WAIT)
        assert not t.is_alive()
    return held, outcomes


def test_queued_appends_commit_as_one_group_each_with_its_own_check_and_error(store: SqlEventStore) -> None:
    install_insert_trigger(store, "poisoned-query", "RAISE EXCEPTION 'poisoned insert'")
    first = ("session:lead", 0, [started("lead")])
    rest: list[tuple[str, int, list[DomainEvent]]] = [
        ("session:a", 0, [started("a"), searched("a")]),
        ("session:dup", 0, [started("dup")]),
        ("session:dup", 0, [started("dup")]),  # the same stream at the same version: one of the two loses
        ("session:b", 0, [started("b"), searched("b", "poisoned-query")]),  # the database refuses this one
        ("session:c", 0, [started("c")]),
        ("session:c", 1, [searched("c")]),  # follows the one before it in the same group, if that came first
    ]
    held, outcomes = race(store, first, rest)
    # Every append queued while the leader held the lock, in one statement, which the refused row rolls back;
    # then the same group again, one member at a time under savepoints.
    assert held.transactions == 2
    assert isinstance(outcomes[0], list) and isinstance(outcomes[1], list)
    dup = outcomes[2:4]
    assert sum(isinstance(o, list) for o in dup) == 1
    assert sum(isinstance(o, ConcurrencyError) for o in dup) == 1
    assert isinstance(outcomes[4], BaseException) and not isinstance(outcomes[4], ConcurrencyError)
    assert "poisoned" in str(outcomes[4])
    assert isinstance(outcomes[5], list)
    # session:c at version 1 depends on the queue order: it either followed its stream's first event or lost.
    assert isinstance(outcomes[6], list | ConcurrencyError)
    recorded = [r for o in outcomes if isinstance(o, list) for r in o]
    positions = sorted(r.position for r in recorded)
    assert positions == list(range(1, len(recorded) + 1))  # gapless: the refused member left no hole
    assert count_rows(store) == len(recorded)
    assert verify_chain(store.iter_records()).ok
    assert not any("poisoned-query" in r.data_json for r in store.iter_records())


def test_a_member_that_lost_its_race_keeps_its_own_error_when_the_only_other_member_is_refused(
    store: SqlEventStore,
) -> None:
    install_insert_trigger(store, "poisoned-query", "RAISE EXCEPTION 'poisoned insert'")
    store.append("session:x", 0, [started("x")], META)
    first = ("session:lead", 0, [started("lead")])
    rest: list[tuple[str, int, list[DomainEvent]]] = [
        ("session:b", 0, [searched("b", "poisoned-query")]),  # the database refuses this one
        ("session:x", 5, [searched("x")]),  # lost its race: its own error, not the refused member's
    ]
    _, outcomes = race(store, first, rest)
    assert isinstance(outcomes[0], list)
    assert "poisoned" in str(outcomes[1]) and not isinstance(outcomes[1], ConcurrencyError)
    assert isinstance(outcomes[2], ConcurrencyError) and outcomes[2].actual == 1
    assert count_rows(store) == 2 and verify_chain(store.iter_records()).ok


def test_appends_queued_while_the_leader_waits_for_the_lock_join_its_group_in_one_transaction(
    store: SqlEventStore,
) -> None:
    first = ("session:lead", 0, [started("lead")])
    rest: list[tuple[str, int, list[DomainEvent]]] = [
        (f"session:g{i}", 0, [started(f"g{i}"), searched(f"g{i}")]) for i in range(7)
    ]
    held, outcomes = race(store, first, rest)
    assert held.transactions == 1
    assert all(isinstance(o, list) for o in outcomes)
    assert count_rows(store) == 15 and verify_chain(store.iter_records()).ok


def test_a_group_written_without_reading_first_still_checks_every_version_under_the_lock(
    store: SqlEventStore,
) -> None:
    """The leader's commit leaves this store knowing the head, so the group is written straight away (the
    insert itself checks the head and the versions): one losing member still fails alone, in one transaction."""
    store.append("session:x", 0, [started("x")], META)
    first = ("session:lead", 0, [started("lead")])
    rest: list[tuple[str, int, list[DomainEvent]]] = [
        ("session:dup", 0, [started("dup")]),
        ("session:dup", 0, [started("dup")]),  # one of the two loses
        ("session:c", 0, [started("c")]),
        ("session:c", 1, [searched("c")]),
        ("session:x", 1, [searched("x")]),
        ("session:x", 3, [searched("x")]),  # ahead of the stream: loses
        ("session:x", 0, [searched("x")]),  # behind it: loses
    ]
    held, outcomes = race(store, first, rest)
    assert held.transactions == 1
    assert isinstance(outcomes[0], list)
    assert sorted(isinstance(o, list) for o in outcomes[1:3]) == [False, True]
    assert isinstance(outcomes[3], list) and isinstance(outcomes[4], list | ConcurrencyError)
    assert isinstance(outcomes[5], list)
    assert isinstance(outcomes[6], ConcurrencyError) and outcomes[6].actual == 2
    assert isinstance(outcomes[7], ConcurrencyError) and outcomes[7].actual == 2
    recorded = [r for o in outcomes if isinstance(o, list) for r in o]
    assert sorted(r.position for r in recorded) == list(range(2, len(recorded) + 2))
    assert count_rows(store) == len(recorded) + 1 and verify_chain(store.iter_records()).ok
    head = store.head()
    for wrong in (7, 1):  # the head is unchanged and known; only the version check can refuse these
        with pytest.raises(ConcurrencyError) as refused:
            store.append("session:x", wrong, [searched("x")], META)
        assert refused.value.actual == 2
    assert store.head() == head
    assert store.append("session:x", 2, [searched("x")], META)[0].position == head[0] + 1


def test_a_group_after_another_writers_append_reads_the_new_head_and_versions(
    make_sql_store: SqlStoreFactory,  # noqa: F811
) -> None:
    """Another store (another process, say) appends between this store's commits: the head and versions this
    store remembers are stale, so its group reads them again; the chain extends the real head and a member
    that the other writer overtook fails alone."""
    store, other = make_sql_store(), make_sql_store()
    store.append("session:shared", 0, [started("shared")], META)
    other.append("session:shared", 1, [searched("shared", "other")], META)
    first = ("session:lead", 0, [started("lead")])
    rest: list[tuple[str, int, list[DomainEvent]]] = [
        ("session:shared", 1, [searched("shared", "mine")]),  # the other store got there first
        ("session:new", 0, [started("new"), searched("new")]),
    ]
    held, outcomes = race(store, first, rest)
    assert held.transactions == 1
    assert isinstance(outcomes[1], ConcurrencyError) and outcomes[1].actual == 2
    assert isinstance(outcomes[2], list) and [r.position for r in outcomes[2]] == [4, 5]
    assert count_rows(store) == 5 and verify_chain(store.iter_records()).ok
    assert store.append("session:shared", 2, [searched("shared", "again")], META)[0].position == 6
    other.append("session:other", 0, [started("other")], META)  # and once more behind this store's back
    assert store.append("session:shared", 3, [searched("shared", "last")], META)[0].position == 8
    assert verify_chain(store.iter_records()).ok


def test_a_group_that_fails_to_commit_records_nothing_and_fails_every_member(store: SqlEventStore) -> None:
    first = ("session:lead", 0, [started("lead")])
    rest: list[tuple[str, int, list[DomainEvent]]] = [(f"session:g{i}", 0, [started(f"g{i}")]) for i in range(5)]
    held, outcomes = race(store, first, rest, fail_group=True)
    assert held.transactions == 1
    assert all(isinstance(o, StoreUnavailable) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 6  # each thread raises its own copy
    assert count_rows(store) == 0
    assert verify_chain(store.iter_records()).ok


@pytest.mark.parametrize("threads", [16])
def test_many_writers_keep_the_chain_gapless_and_every_version_check(store: SqlEventStore, threads: int) -> None:
    """Free-running writers (no held lock): each appends to its own stream and to one shared stream at the
    version it read; every success is in the log exactly once, every loser got ConcurrencyError."""
    successes: list[RecordedEvent] = []
    losses = 0
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def writer(n: int) -> None:
        nonlocal losses
        barrier.wait()
        for i in range(10):
            own = store.append(f"session:w{n}", i, [searched(f"w{n}", f"q{i}")], META)
            shared_version = store.load_stream("session:shared").version
            try:
                won = store.append("session:shared", shared_version, [searched("shared", f"w{n}-{i}")], META)
            except ConcurrencyError:
                with lock:
                    losses += 1
                won = []
            with lock:
                successes.extend(own + won)

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(READY_WAIT)
        assert not t.is_alive()
    assert sorted(r.position for r in successes) == list(range(1, len(successes) + 1))
    assert count_rows(store) == len(successes) == threads * 10 + (threads * 10 - losses)
    assert store.load_stream("session:shared").version == threads * 10 - losses
    assert verify_chain(store.iter_records()).ok
