"""A small ledger with something on every page of the dashboard: two agents' searches, stamps and refusals, anchor
passes, failures and a lockout, memory with co-retrieval edges, a task moved through the DNA gates with a refusal,
and parameter checks that fail (a problem area). Recorded over the last 20 hours (the ledger's clock moved by the
seed), so the Overview's 24-hour window holds all of it in several hours."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from ledger.service import Actor, Ledger
from tests.anchor_support import proof

ALICE, BOB = Actor("alice", "mcp"), Actor("bob", "mcp")
NOTES = [
    ("Database migrations run with alembic before the service starts.", ["project/db"]),
    ("The database is PostgreSQL 16 in production and SQLite in tests.", ["project/db"]),
    ("Every HTTP handler validates its input with pydantic models.", ["project/api"]),
    ("Release builds are cut from main after the CI gate passes.", ["project/release"]),
    ("Database backups are taken nightly and kept for thirty days.", ["project/db", "ops"]),
]


class SeedClock:
    """The ledger's clock for the seed: 20 hours ago at first, moved on by :meth:`advance`."""

    def __init__(self) -> None:
        self.now = _dt.datetime.now(_dt.UTC) - _dt.timedelta(hours=20)

    def __call__(self) -> _dt.datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += _dt.timedelta(minutes=minutes)


@dataclass(frozen=True)
class Seeded:
    blocks: list[str]
    receipt: str
    task_id: str


def seed(ledger: Ledger, project: Path, clock: SeedClock) -> Seeded:
    blocks = [ledger.remember(ALICE, text, tags).block_id for text, tags in NOTES]
    a = ledger.clock_in(ALICE, "dev", working_dir=str(project)).session_id
    ledger.search(ALICE, a, "database migrations")
    stamped = ledger.assert_compliance(ALICE, a)
    assert stamped.status == "PASS" and stamped.receipt is not None
    assert ledger.assert_compliance(ALICE, a).status == "FAIL"  # the token was used
    for _ in range(2):  # recalled together: co-retrieval edges between the database notes
        ledger.recall(ALICE, "database", "attention", 3, a)
    clock.advance(90)
    ledger.anchor(ALICE, a, "dev", "not a proof")
    ledger.anchor(ALICE, a, "dev", proof())

    clock.advance(120)
    b = ledger.clock_in(BOB, "qa", working_dir=str(project)).session_id
    assert ledger.assert_compliance(BOB, b).status == "FAIL"  # no search first
    ledger.search(BOB, b, "release builds")
    assert ledger.assert_compliance(BOB, b).status == "PASS"
    for i in range(24):  # a busy agent: more than one page of the audit log, over several hours
        clock.advance(25)
        ledger.search(BOB, b, f"release checklist item {i}")
    for _ in range(3):  # the third failure locks the session
        ledger.anchor(BOB, b, "qa", "still not a proof")

    clock.advance(60)
    task = "dash-1"
    ledger.task_create(ALICE, task, "Show compliance in a browser", role="dev")
    assert ledger.task_transition(ALICE, task, "active", a).status == "refused"  # no memory query in its DNA
    ledger.search(ALICE, a, "what do we know about dashboards")  # the query the claim needs, after the task exists
    ledger.task_update_dna(ALICE, task, {"memory_query_session": a})
    moved = ledger.task_transition(ALICE, task, "active", a)
    assert moved.status == "transitioned", moved
    ledger.task_create(ALICE, "dash-2", "Write the dashboard's tests", role="dev")

    clock.advance(45)
    for params in ({}, {"title": "x"}, {}):  # missing parameters: a problem area for manage_task/create
        ledger.check_parameters(ALICE, "manage_task", "create", params, a)
    return Seeded(blocks=blocks, receipt=stamped.receipt, task_id=task)
