"""The read-only routes the dashboard needed: the compliance series per hour/day, the chain check, who a key
proves the caller to be, the unrecorded memory lookup and a block's co-retrieval neighbours."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from fastapi.testclient import TestClient

from api.rest.app import build_app
from api.settings import Settings
from ledger.service import Actor
from tests.conftest import LedgerFactory

ALICE, BOB = Actor("alice", "rest"), Actor("bob", "rest")
OPERATOR = Actor("operator", "cli", admin=True)
T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)


class Clock:
    """The ledger's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> _dt.datetime:
        return self.now


def iso(moment: _dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_the_series_puts_each_count_in_its_hour_and_adds_up_to_the_reports_difference(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    clock = Clock()
    ledger = make_ledger(db_url, clock=clock)
    ledger.remember(ALICE, "The deploy script lives in ops/deploy.sh and needs the staging key.", ["ops"])
    clock.now = T0 + _dt.timedelta(minutes=10)
    a = ledger.clock_in(ALICE, "dev").session_id
    ledger.search(ALICE, a, "deploy script")
    assert ledger.assert_compliance(ALICE, a).status == "PASS"
    clock.now = T0 + _dt.timedelta(hours=2, minutes=30)
    assert ledger.assert_compliance(ALICE, a).status == "FAIL"
    b = ledger.clock_in(BOB, "qa").session_id
    ledger.search(BOB, b, "staging key")
    clock.now = T0 + _dt.timedelta(hours=5)  # outside the window asked for below
    ledger.search(BOB, b, "deploy")
    window = {"start": iso(T0), "end": iso(T0 + _dt.timedelta(hours=4)), "bucket": "hour"}
    with TestClient(build_app(ledger, Settings(home=tmp_path))) as http:
        series = http.get("/reports/compliance/series", params=window).json()
        before = http.get("/reports/compliance", params={"as_of": iso(T0 - _dt.timedelta(seconds=1))}).json()
        after = http.get("/reports/compliance", params={"as_of": iso(T0 + _dt.timedelta(hours=4))}).json()
        by_day = http.get("/reports/compliance/series", params={**window, "bucket": "day"}).json()
        # the counts kept by the process are now past the window's end: the same window is counted afresh
        again = http.get("/reports/compliance/series", params=window).json()

    assert [p["start"] for p in series["points"]] == [iso(T0 + _dt.timedelta(hours=h)) for h in range(4)]
    hours = [{a["agent"]: (a["searches"], a["passes"], a["fails"]) for a in p["agents"]} for p in series["points"]]
    assert hours == [{"alice": (1, 1, 0)}, {}, {"alice": (0, 0, 1), "bob": (1, 0, 0)}, {}]
    assert before["agents"] == []
    assert again == series
    totals = {a["agent"]: (a["searches"], a["passes"], a["fails"]) for a in series["totals"]}
    assert totals == {a["agent"]: (a["searches"], a["passes"], a["fails"]) for a in after["agents"]}
    assert (by_day["start"], len(by_day["points"])) == (iso(T0.replace(hour=0)), 1)
    # by the day the window widens to the whole day, so bob's search at 14:00 is in it
    assert {a["agent"]: a["searches"] for a in by_day["totals"]} == {"alice": 1, "bob": 2}


def test_the_series_refuses_a_window_it_cannot_draw_and_says_what_to_send(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    head = ledger.store.head()
    with TestClient(build_app(ledger, Settings(home=tmp_path))) as http:
        backwards = http.get("/reports/compliance/series", params={"start": iso(T0), "end": iso(T0)})
        too_long = http.get(
            "/reports/compliance/series", params={"start": iso(T0), "end": iso(T0 + _dt.timedelta(days=40))}
        )
        bad_bucket = http.get("/reports/compliance/series", params={"start": iso(T0), "end": iso(T0), "bucket": "week"})
        no_offset = http.get("/reports/compliance/series", params={"start": "2026-03-02T09:00:00", "end": iso(T0)})
    assert backwards.status_code == 422 and "later than the start" in backwards.json()["error"]["hint"]
    assert too_long.status_code == 422 and "bucket=day" in too_long.json()["error"]["hint"]
    assert bad_bucket.status_code == 422 and "bucket" in bad_bucket.json()["error"]["message"]
    assert no_offset.status_code == 422 and "offset" in no_offset.json()["error"]["message"]
    assert ledger.store.head() == head


def test_an_agent_key_sees_only_its_own_series_and_may_not_run_the_chain_check(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    for who in (ALICE, BOB):
        sid = ledger.clock_in(who, "dev").session_id
        ledger.assert_compliance(who, sid)
    alice = {"X-API-Key": ledger.issue_api_key(OPERATOR, "alice").api_key}
    auditor = {"X-API-Key": ledger.issue_api_key(OPERATOR, "eve", role="auditor").api_key}
    now = _dt.datetime.now(_dt.UTC)
    window = {"start": iso(now - _dt.timedelta(hours=1)), "end": iso(now + _dt.timedelta(hours=1))}
    with TestClient(build_app(ledger, Settings(home=tmp_path))) as http:
        own = http.get("/reports/compliance/series", params=window, headers=alice).json()
        every = http.get("/reports/compliance/series", params=window, headers=auditor).json()
        refused = http.get("/audit/verify", headers=alice)
        checked = http.get("/audit/verify", headers=auditor).json()
        anonymous = http.get("/whoami")
        me = http.get("/whoami", headers=alice).json()
    assert [a["agent"] for a in own["totals"]] == ["alice"] and own["agent"] == "alice"
    assert [a["agent"] for a in every["totals"]] == ["alice", "bob"]
    assert refused.status_code == 403 and "auditor or admin" in refused.json()["error"]["hint"]
    assert checked["ok"] is True and checked["checked"] == checked["head_position"] == ledger.store.head()[0]
    assert anonymous.status_code == 401
    assert me == {"agent": "alice", "role": "agent", "by_key": True}


def test_whoami_without_keys_is_the_local_administrator(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    with TestClient(build_app(ledger, Settings(home=tmp_path, agent="me"))) as http:
        assert http.get("/whoami").json() == {"agent": "me", "role": "admin", "by_key": False}


def test_a_lookup_finds_what_the_search_finds_and_records_nothing(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    for text in (
        "Database migrations run with alembic before the service starts.",
        "The database is PostgreSQL in production and SQLite in tests.",
        "Release builds are cut from main after the CI gate passes.",
    ):
        ledger.remember(ALICE, text, [])
    sid = ledger.clock_in(ALICE, "dev").session_id
    head = ledger.store.head()
    with TestClient(build_app(ledger, Settings(home=tmp_path))) as http:
        looked = http.get("/memory/lookup", params={"query": "database", "limit": 5}).json()
        assert ledger.store.head() == head  # nothing recorded
        empty = http.get("/memory/lookup", params={"query": "   "})
    searched = ledger.search(ALICE, sid, "database", 5)
    assert [r["block_id"] for r in looked["results"]] == [r.block_id for r in searched.results]
    assert looked["count"] == 2 and looked["query"] == "database"
    assert empty.status_code == 422


def test_a_block_lists_the_blocks_recalled_with_it_most_often_first(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    ids = [
        ledger.remember(ALICE, text, ["project/db"]).block_id
        for text in (
            "Database migrations run with alembic before the service starts.",
            "The database is PostgreSQL in production and SQLite in tests.",
            "Release builds are cut from main after the CI gate passes.",
        )
    ]
    sid = ledger.clock_in(ALICE, "dev").session_id
    ledger.recall(ALICE, "database", "attention", 2, sid)
    with TestClient(build_app(ledger, Settings(home=tmp_path))) as http:
        first = http.get(f"/memory/blocks/{ids[0]}").json()
        second = http.get(f"/memory/blocks/{ids[1]}").json()
        alone = http.get(f"/memory/blocks/{ids[2]}").json()
    assert [(n["block_id"], n["count"]) for n in first["neighbours"]] == [(ids[1], 1)]
    assert [n["block_id"] for n in second["neighbours"]] == [ids[0]]
    assert alone["neighbours"] == []
