"""Projection snapshots: live = rebuilt from zero = restored from a snapshot, and a snapshot is trusted only
when it proves itself (signature, code version, the log still holding its head)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from freezegun import freeze_time
from typer.testing import CliRunner

from api.bootstrap import open_ledger
from api.cli import app
from api.settings import Settings
from ledger.core import signing
from ledger.service import Actor, Ledger
from projections import codec, snapshots
from projections.runner import ACTIVE_TIME, ALL, COMPLIANCE, MEMORY, TRAFFIC, ProjectionRunner
from tests.conftest import LedgerFactory

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
AGENTS = [Actor("alice", "mcp"), Actor("bob", "rest"), Actor("carol", "cli")]
FOLDS: list[Callable[[], ProjectionRunner]] = [
    lambda: ProjectionRunner([COMPLIANCE]),
    lambda: ProjectionRunner([MEMORY, ACTIVE_TIME]),
    lambda: ProjectionRunner([TRAFFIC]),
    lambda: ProjectionRunner([*ALL, TRAFFIC]),
]


def busy_history(ledger: Ledger, rounds: int = 6) -> None:
    """Sessions, searches, passes and fails, memory with co-retrieval edges, outcomes, curates, a supersede and
    a forget."""
    rng = random.Random(7)
    with freeze_time(T0) as frozen:
        for r in range(rounds):
            for actor in AGENTS:
                frozen.tick(_dt.timedelta(minutes=7))
                session = ledger.clock_in(actor, "dev", focus=f"round {r}").session_id
                fact = ledger.remember(
                    actor, f"{actor.agent} learned fact number {r} about the build", ["build"], session
                )
                if actor is AGENTS[0] and r == 2:
                    ledger.supersede(actor, fact.block_id, f"{actor.agent} corrected fact {r} about the build", session)
                if actor is AGENTS[1] and r == 3:
                    ledger.forget(Actor("operator", "cli", admin=True), fact.block_id, "recorded by mistake")
                if rng.random() < 0.7:
                    ledger.search(actor, session, "build fact")
                ledger.assert_compliance(actor, session)
                recalled = ledger.recall(actor, "build", session_id=session)
                if recalled.blocks and rng.random() < 0.5:
                    ids = [b.block_id for b in recalled.blocks[:2]]
                    ledger.outcome(actor, ids, rng.choice([1.0, 0.0, 0.5]), session_id=session)
                if rng.random() < 0.5:
                    ledger.clock_out(actor, session)
            frozen.tick(_dt.timedelta(hours=3))
            ledger.curate(Actor("operator", "cli", admin=True))


def from_zero(ledger: Ledger, make: Callable[[], ProjectionRunner], until: int) -> ProjectionRunner:
    runner = make()
    runner.run(ledger.store.iter_events(0, until))
    return runner


@pytest.fixture
def busy(make_ledger: LedgerFactory, db_url: str) -> Ledger:
    ledger = make_ledger(db_url, snapshot_every_events=0)  # snapshots only where a test writes them
    busy_history(ledger)
    return ledger


def test_the_codec_round_trips_every_projection_state(busy: Ledger) -> None:
    runner = from_zero(busy, FOLDS[-1], busy.store.head()[0])
    copy = FOLDS[-1]()
    copy.restore(codec.loads(codec.dumps(runner.dump())))
    assert copy.snapshot() == runner.snapshot()
    assert copy.position == runner.position and copy.last_recorded_at == runner.last_recorded_at
    graph, restored = runner.memory(), copy.memory()
    assert graph.edges and restored.adjacent == graph.adjacent and restored.by_tag == graph.by_tag


def test_live_equals_rebuilt_from_zero_equals_restored_from_a_snapshot_at_random_positions(busy: Ledger) -> None:
    head = busy.store.head()[0]
    store = snapshots.Snapshots(busy.store, busy.signer, every=1)
    rng = random.Random(11)
    for make in FOLDS:
        live = make()  # caught up in random steps, as a serving process would
        position = 0
        while position < head:
            position = min(head, position + rng.randint(1, 40))
            live.catch_up(lambda after, p=position: busy.store.iter_events(after, p))
        taken = sorted(rng.sample(range(1, head), 4))
        for at in taken:
            assert store.save(from_zero(busy, make, at))
        for until in [*sorted(rng.sample(range(taken[0], head + 1), 5)), head]:
            restored = make()
            store.replay_to(restored, busy.store.iter_events, until)
            expected = from_zero(busy, make, until)
            assert restored.snapshot_position is None  # replay_to is for reads to a point, not the live runner
            assert restored.position == expected.position and restored.snapshot() == expected.snapshot(), until
        assert live.snapshot() == from_zero(busy, make, head).snapshot()
        used = make()
        assert store.restore(used) == taken[-1]  # the newest one is what a new process starts from


def test_a_new_process_starts_from_the_snapshot_and_answers_the_same(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url, snapshot_every_events=25)
    busy_history(ledger)
    moment = T0 + _dt.timedelta(days=2)
    with freeze_time(moment):
        report, stats = ledger.compliance_report(), ledger.memory_stats()
    ledger.snapshots.wait()  # periodic snapshots are written in the background
    rows = snapshots.Snapshots(ledger.store, ledger.signer).list()
    assert {r.name for r in rows} >= {"compliance", "memory+active_time"}
    again = open_ledger(Settings(home=tmp_path, database_url=db_url, snapshot_every_events=25), clock=ledger.clock)
    try:
        with freeze_time(moment):
            assert again.compliance_report() == report
            assert again.memory_stats() == stats
        assert again.sessions._reports.runner.snapshot_position and again.sessions._reports.runner.snapshot_position > 0
        assert again.memory._memory.runner.snapshot_position and again.memory._memory.runner.snapshot_position > 0
    finally:
        again.store.engine.dispose()


def _tamper(ledger: Ledger, sql: str, *params: object) -> None:
    with ledger.store.engine.begin() as conn:
        conn.exec_driver_sql(ledger.store.sql(sql), params)


def test_a_snapshot_rewritten_in_the_database_is_ignored(busy: Ledger) -> None:
    store = snapshots.Snapshots(busy.store, busy.signer, every=1)
    head = busy.store.head()[0]
    honest = from_zero(busy, FOLDS[0], head // 2)
    assert store.save(honest)
    forged = from_zero(busy, FOLDS[0], head)  # a later state claimed to be the earlier one
    forged_payload = codec.dumps({**forged.dump(), "position": honest.position})
    _tamper(busy, "UPDATE projection_snapshots SET payload = ?", forged_payload)
    assert store.restore(FOLDS[0]()) == 0


def test_a_snapshot_signed_by_another_key_or_made_by_other_code_is_ignored(busy: Ledger) -> None:
    head = busy.store.head()[0]
    mine = snapshots.Snapshots(busy.store, busy.signer, every=1)
    theirs = snapshots.Snapshots(busy.store, signing.SigningKey.generate(), every=1)
    assert theirs.save(from_zero(busy, FOLDS[0], head - 3))
    assert mine.restore(FOLDS[0]()) == 0
    older = snapshots.Snapshots(busy.store, busy.signer, every=1, code_version="an older fold")
    assert older.save(from_zero(busy, FOLDS[0], head - 2))
    assert mine.restore(FOLDS[0]()) == 0
    assert mine.save(from_zero(busy, FOLDS[0], head - 1))
    assert mine.restore(FOLDS[0]()) == head - 1


def test_a_snapshot_whose_event_the_log_no_longer_holds_is_ignored(busy: Ledger) -> None:
    store = snapshots.Snapshots(busy.store, busy.signer, every=1)
    head = busy.store.head()[0]
    runner = from_zero(busy, FOLDS[0], head - 1)
    payload = codec.dumps(runner.dump())
    assert busy.signer is not None
    fake_head = "0" * 64
    message = snapshots._message(runner.name, store.code_version, runner.position, fake_head, payload)
    _tamper(
        busy,
        "INSERT INTO projection_snapshots VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        runner.name,
        store.code_version,
        runner.position,
        fake_head,
        busy.signer.key_id,
        signing.b64url(busy.signer.sign(message)),
        "2026-03-02T09:00:00Z",
        payload,
    )
    assert store.restore(FOLDS[0]()) == 0


def test_replay_rebuild_drops_and_rewrites_the_snapshots(busy: Ledger, db_url: str, tmp_path: Path) -> None:
    store = snapshots.Snapshots(busy.store, busy.signer, every=1, code_version="an older fold")
    assert store.save(from_zero(busy, FOLDS[0], 5))
    base = ["--home", str(tmp_path), "--db", db_url]
    result = CliRunner().invoke(app, [*base, "replay", "--rebuild", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["snapshots_written"] == 4
    rows = snapshots.Snapshots(busy.store, busy.signer).list()
    head = busy.store.head()[0]
    assert all(r.current for r in rows) and len(rows) == 4
    assert {r.name for r in rows} == {"compliance", "compliance_hourly", "memory+active_time", "brain"}
    assert max(r.position for r in rows) <= head
    refused = CliRunner().invoke(app, [*base, "replay", "--rebuild", "--position", "3"])
    assert refused.exit_code != 0 and "--rebuild" in refused.output


def test_the_snapshot_table_is_derived_data_outside_the_chain(busy: Ledger) -> None:
    snapshots.Snapshots(busy.store, busy.signer, every=1).save(from_zero(busy, FOLDS[0], 9))
    with busy.store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM projection_snapshots")).scalar_one() == 1
    assert busy.verify().ok


_WRITER = textwrap.dedent(
    """
    import contextlib
    import os
    import signal
    import sys

    from api.bootstrap import open_ledger
    from api.settings import Settings
    from projections import snapshots
    from ledger.service import Actor
    from projections.runner import ALL, TRAFFIC, ProjectionRunner

    ledger = open_ledger(Settings(home=sys.argv[1], database_url=sys.argv[2], snapshot_every_events=0))
    store = snapshots.Snapshots(ledger.store, ledger.signer, every=1)
    actor = Actor("writer", "cli")
    n = 0
    transaction = ledger.store.write_transaction


    class DiesAfterInsert:
        # The fourth snapshot's row is written, not yet committed, when the process dies.
        def __init__(self, cur):
            self.cur = cur

        def __getattr__(self, name):
            return getattr(self.cur, name)

        def execute(self, statement, params=()):
            self.cur.execute(statement, params)
            if n == 3 and statement.startswith("INSERT INTO projection_snapshots"):
                print("dying", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)


    @contextlib.contextmanager
    def dying_transaction(*args):
        with transaction(*args) as cur:
            yield DiesAfterInsert(cur)


    ledger.store.write_transaction = dying_transaction
    while True:
        session = ledger.clock_in(actor, "dev").session_id
        ledger.remember(actor, "a fact worth keeping, number %d, padded out " % n + "x" * 4000, ["bulk"], session)
        runner = ProjectionRunner([*ALL, TRAFFIC])
        runner.run(ledger.store.iter_events(0))
        store.save(runner)
        n += 1
        print("saved", runner.position, flush=True)
    """
)


def test_a_process_killed_while_writing_snapshots_leaves_a_usable_ledger(
    busy: Ledger, db_url: str, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path), db_url], stdout=subprocess.PIPE, text=True, env=env
    )
    assert writer.stdout is not None
    with writer.stdout:
        lines = [line.split()[0] for line in writer.stdout]  # to EOF: the writer killed itself mid-write
    assert writer.wait() == -signal.SIGKILL
    assert lines == ["saved", "saved", "saved", "dying"]
    make = FOLDS[-1]
    store = snapshots.Snapshots(busy.store, busy.signer, every=1)
    assert len(store.list()) == 3  # the torn fourth row was never committed
    head = busy.store.head()[0]
    restored = make()
    store.replay_to(restored, busy.store.iter_events, head)
    assert restored.snapshot() == from_zero(busy, make, head).snapshot()
    assert busy.verify().ok
    busy.remember(AGENTS[0], "the ledger still takes appends after the kill")
    assert busy.compliance_report().position == busy.store.head()[0]
