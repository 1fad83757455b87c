"""Replay from zero equals the live projections, at the head and at every earlier position and moment (folds over
the log: on the in-memory store, whose reads the store contract holds to the SQL stores')."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import pytest
from freezegun import freeze_time

from ledger.service import Actor, Ledger
from ledger.sessions.report import AgentReport
from projections.runner import ALL, COMPLIANCE, ProjectionRunner
from tests.conftest import MEMORY, LedgerFactory

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
ALICE, BOB, CAROL = Actor("alice", "mcp"), Actor("bob", "rest"), Actor("carol", "cli")

States = dict[str, dict[Hashable, Any]]


@dataclass(frozen=True)
class Snapshot:
    """The live runner's states right after one operation."""

    label: str
    position: int
    moment: _dt.datetime
    states: States


def copy_states(runner: ProjectionRunner) -> States:
    # Entity states are frozen dataclasses, so copying the tables is a full snapshot.
    return runner.snapshot()


def replayed(ledger: Ledger, until: int | None = None) -> ProjectionRunner:
    runner = ProjectionRunner(ALL)
    runner.run(ledger.store.iter_events(0, until))
    return runner


@dataclass
class Activity:
    ledger: Ledger
    live: ProjectionRunner
    snapshots: list[Snapshot]


@pytest.fixture
def activity(make_ledger: LedgerFactory) -> Activity:
    """Several agents and sessions, searches, passes, fails of every kind and duplicates.

    A live runner catches up incrementally after each operation and its states are recorded.
    """
    with freeze_time(T0) as frozen:
        ledger = make_ledger(MEMORY)
        live = ProjectionRunner(ALL)
        snapshots: list[Snapshot] = []
        sessions: dict[str, str] = {}

        def step(label: str, action: Callable[[], Any]) -> Any:
            frozen.tick(_dt.timedelta(minutes=1))
            result = action()
            live.catch_up(lambda after: ledger.store.iter_events(after, batch_size=3))
            snapshots.append(Snapshot(label, live.position, ledger.clock(), copy_states(live)))
            return result

        def clock_in(name: str, who: Actor) -> None:
            sessions[name] = step(f"{name} clock in", lambda: ledger.clock_in(who, "dev", focus=name)).session_id

        clock_in("a1", ALICE)
        clock_in("b1", BOB)
        step(
            "alice remembers",
            lambda: ledger.remember(ALICE, "Migrations live in db/migrations", ["db"], sessions["a1"]),
        )
        step(
            "bob remembers a duplicate",
            lambda: ledger.remember(BOB, "migrations   LIVE in db/migrations", [], sessions["b1"]),
        )
        step("bob remembers", lambda: ledger.remember(BOB, "The API uses bearer tokens", ["api"]))
        step("alice asserts without a search", lambda: ledger.assert_compliance(ALICE, sessions["a1"]))
        step("alice searches", lambda: ledger.search(ALICE, sessions["a1"], "migrations"))
        step("alice passes", lambda: ledger.assert_compliance(ALICE, sessions["a1"]))
        step("alice asserts again", lambda: ledger.assert_compliance(ALICE, sessions["a1"]))
        step("bob searches", lambda: ledger.search(BOB, sessions["b1"], "bearer api"))
        frozen.tick(_dt.timedelta(minutes=31))
        step("bob's token has expired", lambda: ledger.assert_compliance(BOB, sessions["b1"]))
        step("bob searches again", lambda: ledger.search(BOB, sessions["b1"], "nothing matches this"))
        step("bob passes", lambda: ledger.assert_compliance(BOB, sessions["b1"]))
        clock_in("c1", CAROL)
        step("carol searches", lambda: ledger.search(CAROL, sessions["c1"], "db"))
        step("carol clocks out", lambda: ledger.clock_out(CAROL, sessions["c1"]))
        step("alice clocks out", lambda: ledger.clock_out(ALICE, sessions["a1"]))
        clock_in("a2", ALICE)
        step("alice searches in a new session", lambda: ledger.search(ALICE, sessions["a2"], "tokens"))
        step("alice passes again", lambda: ledger.assert_compliance(ALICE, sessions["a2"]))
        step("bob remembers another duplicate", lambda: ledger.remember(BOB, "The API uses bearer tokens"))
    return Activity(ledger, live, snapshots)


def test_the_activity_exercises_every_projection(activity: Activity) -> None:
    states = activity.live.snapshot()
    assert len(states["sessions"]) == 4
    assert sum(1 for v in states["sessions"].values() if not v.is_open) == 2
    assert sorted(b.duplicates_rejected for b in states["memory"]["blocks"].values()) == [1, 1]
    counts = {a: (c.searches, c.passes, c.fails) for a, c in states["compliance"].items()}
    assert counts == {"alice": (2, 2, 2), "bob": (2, 1, 1), "carol": (1, 0, 0)}


def test_replaying_everything_from_zero_equals_the_incrementally_caught_up_projections(
    activity: Activity,
) -> None:
    ledger, live = activity.ledger, activity.live
    fresh = replayed(ledger)
    assert fresh.position == live.position == ledger.store.head()[0]
    assert fresh.snapshot() == live.snapshot()
    assert fresh.last_recorded_at == live.last_recorded_at


def test_replaying_to_any_earlier_position_equals_what_the_live_projections_showed_then(
    activity: Activity,
) -> None:
    for snap in activity.snapshots:
        runner = replayed(activity.ledger, snap.position)
        assert runner.position == snap.position, snap.label
        assert runner.snapshot() == snap.states, snap.label


def test_the_ledgers_replay_as_of_a_moment_equals_the_live_state_at_that_moment(activity: Activity) -> None:
    ledger = activity.ledger
    assert ledger.replay().runner.snapshot() == activity.live.snapshot()
    for snap in activity.snapshots:
        by_time = ledger.replay(as_of=snap.moment)
        assert by_time.position == snap.position, snap.label
        assert by_time.runner.snapshot() == snap.states, snap.label
        assert ledger.replay(position=snap.position).runner.snapshot() == snap.states, snap.label


def test_a_runner_that_catches_up_twice_applies_nothing_twice(activity: Activity) -> None:
    ledger, live = activity.ledger, activity.live
    before = copy_states(live)
    assert live.catch_up(lambda after: ledger.store.iter_events(after)) == 0
    live.run(ledger.store.iter_events(0))  # events it has already applied are skipped
    assert live.snapshot() == before


def test_the_live_compliance_report_equals_the_report_replayed_to_the_head(activity: Activity) -> None:
    ledger = activity.ledger
    head = ledger.store.head()[0]
    live = ledger.compliance_report()
    at_head = ledger.compliance_report(position=head)
    assert live.position == at_head.position == head
    assert live.agents == at_head.agents
    assert [a.agent for a in live.agents] == ["alice", "bob", "carol"]
    assert ledger.compliance_report(as_of=ledger.clock()).agents == live.agents
    assert ledger.compliance_report("bob").agents == [a for a in live.agents if a.agent == "bob"]


def test_the_compliance_report_at_each_earlier_position_matches_the_live_projection_then(
    activity: Activity,
) -> None:
    ledger = activity.ledger
    for snap in activity.snapshots:
        expected = [AgentReport.of(a) for _, a in sorted(snap.states[COMPLIANCE.name].items())]
        assert ledger.compliance_report(position=snap.position).agents == expected, snap.label
