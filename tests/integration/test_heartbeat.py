"""A node's announcements in ``ledger_nodes`` (``api/heartbeat.py``, ``ledger/core/storage/nodes.py``) on each
backend: a start writes the node's row, a stop marks it stopped, rows not seen for a week are pruned, and a node
whose settings are no longer the ledger's says so once per change."""

from __future__ import annotations

import datetime as _dt
import logging

import pytest

from api.heartbeat import Heartbeat
from ledger.core.storage import nodes
from tests.conftest import LedgerFactory

START = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)


class Clock:
    """A clock the test moves (the heartbeat reads the ledger's clock)."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> _dt.datetime:
        return self.now


def test_a_node_announces_itself_at_start_and_when_it_stops(make_ledger: LedgerFactory, db_url: str) -> None:
    clock = Clock()
    ledger = make_ledger(db_url, clock=clock)
    engine = ledger.store.engine
    old = nodes.Node("gone", "serve", "0.0.1", "d" * 64, START - _dt.timedelta(days=9), START - _dt.timedelta(days=8))
    nodes.announce(engine, old)
    digest = ledger.applied_settings().event.digest  # type: ignore[union-attr]
    beat = Heartbeat(ledger, "serve", digest, name="node-1", every=3600)
    beat.start()
    try:
        [seen] = nodes.recent(engine, clock(), within=_dt.timedelta(days=30))  # the week-old row was pruned
        assert (seen.node, seen.kind, seen.settings_digest, seen.started_at, seen.stopped_at) == (
            "node-1",
            "serve",
            digest,
            START,
            None,
        )
        clock.now = START + _dt.timedelta(seconds=30)
        beat.beat()
        [seen] = nodes.recent(engine, clock())
        assert seen.seen_at == clock.now and seen.started_at == START
    finally:
        clock.now = START + _dt.timedelta(minutes=5)
        beat.stop()
    [stopped] = nodes.recent(engine, clock.now)
    assert stopped.stopped_at == clock.now
    assert nodes.recent(engine, clock.now + nodes.RECENT + _dt.timedelta(seconds=1)) == []


def test_a_running_node_whose_settings_are_no_longer_the_ledgers_says_so_once(
    make_ledger: LedgerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = make_ledger(None)
    beat = Heartbeat(ledger, "serve", "0" * 64, name="stale", every=3600)
    with caplog.at_level(logging.ERROR, logger="api.heartbeat"):
        beat.beat()
        beat.beat()
    said = [r.getMessage() for r in caplog.records if r.name == "api.heartbeat"]
    assert len(said) == 1
    assert (
        "the ledger's decision settings changed" in said[0]
        and "this node still decides with 0000000000000000" in said[0]
    )
    assert "restart it" in said[0]
