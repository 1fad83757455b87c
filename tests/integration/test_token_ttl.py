"""Token time-to-live under freezegun (the gate's decision: on the in-memory store, ``MEMORY``), and `replay --as-of`
showing the token valid, then expired (a command line on the database: SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from freezegun import freeze_time
from typer.testing import CliRunner

from api.cli import app
from ledger.service import Actor
from tests.conftest import MEMORY, LedgerFactory

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
WHO = Actor("agent-a", "mcp")


def replay_token(tmp_path: Path, url: str, sid: str, as_of: _dt.datetime) -> str:
    result = CliRunner().invoke(
        app,
        [
            "--home",
            str(tmp_path),
            "--db",
            url,
            "replay",
            "--as-of",
            as_of.isoformat(),
            "--session",
            sid,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    [session] = json.loads(result.stdout)["sessions"]
    return str(session["token"]["status"])


def test_a_token_expires_after_its_ttl_and_replay_shows_it_valid_then_expired(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    with freeze_time(T0) as frozen:
        ledger = make_ledger(db_url)
        sid = ledger.clock_in(WHO, "dev").session_id
        ledger.search(WHO, sid, "anything")
        frozen.tick(_dt.timedelta(minutes=29, seconds=59))
        assert ledger.session_state(sid).token.status == "valid"
        frozen.tick(_dt.timedelta(seconds=1))
        assert ledger.session_state(sid).token.status == "expired"
        refused = ledger.assert_compliance(WHO, sid)
    assert refused.status == "FAIL" and refused.reason == "token_expired"
    assert refused.message is not None and refused.message.startswith("⛔ GATE CLOSED.")
    assert "memory_search" in refused.message
    assert replay_token(tmp_path, db_url, sid, T0 + _dt.timedelta(minutes=10)) == "valid"
    assert replay_token(tmp_path, db_url, sid, T0 + _dt.timedelta(minutes=31)) == "expired"


def test_within_its_ttl_a_token_earns_the_stamp(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as frozen:
        ledger = make_ledger(MEMORY)
        sid = ledger.clock_in(WHO, "dev").session_id
        ledger.search(WHO, sid, "anything")
        frozen.tick(_dt.timedelta(minutes=29))
        assert ledger.assert_compliance(WHO, sid).status == "PASS"


def test_a_ttl_of_zero_means_the_token_never_expires(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as frozen:
        ledger = make_ledger(MEMORY, token_ttl_minutes=0)
        sid = ledger.clock_in(WHO, "dev").session_id
        ledger.search(WHO, sid, "anything")
        frozen.tick(_dt.timedelta(days=30))
        assert ledger.assert_compliance(WHO, sid).status == "PASS"


def test_the_ttl_is_configurable_and_recorded_with_the_token(make_ledger: LedgerFactory) -> None:
    with freeze_time(T0) as frozen:
        ledger = make_ledger(MEMORY, token_ttl_minutes=5)
        sid = ledger.clock_in(WHO, "dev").session_id
        found = ledger.search(WHO, sid, "anything")
        frozen.tick(_dt.timedelta(minutes=5))
        refused = ledger.assert_compliance(WHO, sid)
    assert found.token_expires_at == T0 + _dt.timedelta(minutes=5)
    assert refused.reason == "token_expired"


def test_replay_as_of_before_a_session_existed_says_so(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    with freeze_time(T0):
        ledger = make_ledger()
        sid = ledger.clock_in(WHO, "dev").session_id
    url = str(ledger.store.engine.url)
    result = CliRunner().invoke(
        app,
        [
            "--home",
            str(tmp_path),
            "--db",
            url,
            "replay",
            "--as-of",
            "2020-01-01T00:00:00Z",
            "--session",
            sid,
            "--json",
        ],
    )
    assert result.exit_code == 2
    assert "does not exist at that point" in result.output
