"""Acceptance: two processes racing for one search's token produce exactly one PASS (SQLite and PostgreSQL).

Two real OS processes (``spawn``) are started once for the module and reused round after round; each builds
its own :class:`~ledger.service.Ledger` with :func:`api.bootstrap.open_ledger` on the test's database and the
parent's home directory (so they share the receipt key). A barrier releases both at the same moment.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.core.events import (
    ComplianceRefused,
    ComplianceStamped,
    MemoryDuplicateRejected,
    MemoryRemembered,
    MemorySearched,
    SessionStarted,
    TaskTransitionRefused,
)
from ledger.memory import decisions as memory
from ledger.service import Actor
from tests.conftest import LedgerFactory

ROUNDS = 30
RACER = Actor("racer", "mcp")
REPLY_TIMEOUT = 120.0  # a bound on a hang (a spawned racer imports the ledger first), not a timing expectation


def racer(barrier: Any, conn: multiprocessing.connection.Connection) -> None:
    """Worker process: open a ledger when told to, then race at the barrier on each command."""
    from api.bootstrap import open_ledger
    from api.settings import Settings
    from ledger.core.errors import ConcurrencyError

    ledger = None
    conflicts = 0

    def dispose() -> None:
        if ledger is not None:
            ledger.store.engine.dispose()

    while True:
        command, *args = conn.recv()
        if command == "stop":
            dispose()
            conn.close()
            return
        try:
            if command == "open":
                home, url = args
                dispose()
                ledger = open_ledger(Settings(home=Path(home), database_url=url))
                ledger.store.head()  # connect now, so the first round races on equal terms
                append = ledger.store.append

                def counting_append(*a: Any, _append: Any = append, **kw: Any) -> Any:
                    nonlocal conflicts
                    try:
                        return _append(*a, **kw)
                    except ConcurrencyError:
                        conflicts += 1
                        raise

                ledger.store.append = counting_append  # type: ignore[method-assign]
                conflicts = 0
                reply: Any = "open"
            elif command == "conflicts":
                reply = conflicts
            else:
                assert ledger is not None, "send 'open' first"
                barrier.wait(timeout=REPLY_TIMEOUT)
                if command == "assert":
                    result = ledger.assert_compliance(RACER, args[0])
                    reply = (result.status, result.reason, result.receipt)
                elif command == "remember":
                    reply = ledger.remember(RACER, args[0], ["race"]).status
                elif command == "transition":
                    task_id, to_status, session_id = args
                    reply = ledger.task_transition(RACER, task_id, to_status, session_id).status
                else:
                    raise ValueError(f"unknown command {command!r}")
            conn.send(("ok", reply))
        except BaseException as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class Racers:
    """A persistent pair of worker processes and the barrier they meet at."""

    def __init__(self, size: int = 2) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.barrier = ctx.Barrier(size)
        self.conns: list[multiprocessing.connection.Connection] = []
        self.procs: list[Any] = []
        for _ in range(size):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=racer, args=(self.barrier, child_end), daemon=True)
            proc.start()
            child_end.close()
            self.conns.append(parent_end)
            self.procs.append(proc)

    def call(self, *message: Any) -> list[Any]:
        """Send the same command to every worker and return their replies."""
        for conn in self.conns:
            conn.send(message)
        replies = []
        for conn in self.conns:
            assert conn.poll(REPLY_TIMEOUT), f"a racer did not answer {message[0]!r} in time"
            status, value = conn.recv()
            assert status == "ok", f"racer failed on {message[0]!r}: {value}"
            replies.append(value)
        return replies

    def open(self, home: Path, url: str) -> None:
        self.barrier.reset()
        assert self.call("open", str(home), url) == ["open", "open"]

    def stop(self) -> None:
        for conn in self.conns:
            conn.send(("stop",))
        for proc in self.procs:
            proc.join(timeout=REPLY_TIMEOUT)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()


@pytest.fixture(scope="module")
def racers() -> Iterator[Racers]:
    pair = Racers()
    yield pair
    pair.stop()


def test_two_processes_racing_assert_compliance_after_one_search_produce_exactly_one_pass(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, racers: Racers
) -> None:
    parent = make_ledger(db_url)
    racers.open(tmp_path, db_url)
    for round_no in range(ROUNDS):
        sid = parent.clock_in(RACER, "dev").session_id
        parent.remember(RACER, f"Race note for round {round_no}: the token is single use", ["race"], sid)
        searched = parent.search(RACER, sid, f"race note round {round_no}")
        assert searched.count >= 1

        outcomes = racers.call("assert", sid)

        statuses = sorted((status, reason) for status, reason, _ in outcomes)
        assert statuses == [("FAIL", "token_consumed"), ("PASS", None)], f"round {round_no}: {outcomes}"
        [receipt] = [r for status, _, r in outcomes if status == "PASS"]
        assert parent.verify_stamp(receipt).valid, "the workers sign with the parent's receipt key"
        stream = parent.store.load_stream(f"session:{sid}").events
        assert [type(r.event) for r in stream] == [
            SessionStarted,
            MemorySearched,
            ComplianceStamped,
            ComplianceRefused,
        ], f"round {round_no}"
        stamp = stream[2].event
        assert isinstance(stamp, ComplianceStamped) and stamp.search_position == stream[1].position
        assert parent.session_state(sid).token.status == "consumed"
    assert parent.store.verify().ok
    # The barrier makes the processes collide: over the rounds, losers really took the conflict-retry path.
    assert sum(racers.call("conflicts")) > 0


def test_two_processes_remembering_the_same_content_create_exactly_one_block(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, racers: Racers
) -> None:
    parent = make_ledger(db_url)
    racers.open(tmp_path, db_url)
    for round_no in range(ROUNDS):
        content = f"Both racers remember note number {round_no} at once"

        outcomes = racers.call("remember", content)

        assert sorted(outcomes) == ["created", "duplicate_rejected"], f"round {round_no}: {outcomes}"
        stream = parent.store.load_stream(memory.stream_for(parent.kernel.block_id(memory.normalise(content)))).events
        assert [type(r.event) for r in stream] == [MemoryRemembered, MemoryDuplicateRejected], f"round {round_no}"
    sid = parent.clock_in(RACER, "dev").session_id
    hits = parent.search(RACER, sid, "racers remember note", limit=100).results
    assert len(hits) == len({h.block_id for h in hits}) == ROUNDS
    assert parent.store.verify().ok
    # Remembers are serialised by the consolidation lease (ledger.core.storage.leases): the second waits for the
    # first's append and finds its block, so no remember of either process lost a race and retried.
    assert sum(racers.call("conflicts")) == 0


def test_two_processes_racing_one_task_transition_produce_exactly_one_transition(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, racers: Racers
) -> None:
    parent = make_ledger(db_url)
    racers.open(tmp_path, db_url)
    for round_no in range(ROUNDS):
        task_id = f"race-{round_no}"
        parent.task_create(RACER, task_id, f"Race task {round_no}", role="dev")
        sid = parent.clock_in(RACER, "dev").session_id
        parent.search(RACER, sid, "claim the task")  # the query comes after the task became claimable
        parent.task_update_dna(RACER, task_id, {"memory_query_session": sid})

        outcomes = racers.call("transition", task_id, "active", sid)

        assert sorted(outcomes) == ["refused", "transitioned"], f"round {round_no}: {outcomes}"
        stream = parent.store.load_stream(f"task:{task_id}").events
        names = [r.event.type_name for r in stream]
        assert names == ["TaskCreated", "TaskDnaUpdated", "TaskTransitioned", "TaskTransitionRefused"]
        refused = stream[3].event
        assert isinstance(refused, TaskTransitionRefused) and refused.codes == ["same_status"]
        assert parent.task_get(task_id).status == "active"
    assert parent.store.verify().ok
    assert sum(racers.call("conflicts")) > 0
