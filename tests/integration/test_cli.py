"""The auditor's command line against a real database."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from api.cli import app
from ledger.service import Actor
from tests.conftest import LedgerFactory

WHO = Actor("alice", "cli")


def cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", url, *args])
    return result.exit_code, result.stdout, result.stderr


def test_init_is_idempotent_and_doctor_reports_a_healthy_ledger(tmp_path: Path, db_url: str) -> None:
    first = cli(tmp_path, db_url, "init")
    second = cli(tmp_path, db_url, "init")
    code, out, _ = cli(tmp_path, db_url, "doctor")
    assert first[0] == 0 and "initialised" in first[1] and "created" in first[1]
    assert second[0] == 0 and "already initialised" in second[1] and "kept" in second[1]
    assert code == 0 and "FAIL" not in out and "key binding" in out


def test_doctor_fails_without_a_receipt_key(tmp_path: Path) -> None:
    code, out, _ = cli(tmp_path, f"sqlite:///{tmp_path / 'x.db'}", "doctor")
    assert code == 1 and "compliance-ledger init" in " ".join(out.split())  # the words, however the cell wraps


def test_verify_passes_on_an_intact_chain_and_names_the_first_altered_position(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(WHO, "dev").session_id
    for i in range(5):
        ledger.remember(WHO, f"memory number {i}", [], sid)
    ok = cli(tmp_path, db_url, "verify")
    victim = next(r.position for r in ledger.store.iter_records() if r.type == "MemoryRemembered")
    with ledger.store.engine.begin() as conn:
        if ledger.store.dialect == "sqlite":
            conn.exec_driver_sql("DROP TRIGGER events_reject_update")
        else:
            conn.exec_driver_sql("DROP TRIGGER events_reject_change ON events")
        conn.exec_driver_sql(
            f"UPDATE events SET data = replace(data, 'knowledge', 'KNOWLEDGE') WHERE position = {victim}"
        )
    code, _, err = cli(tmp_path, db_url, "verify")
    assert ok[0] == 0 and "chain intact" in ok[1]
    assert code == 1
    assert f"chain broken at position {victim}" in err


def test_keys_add_prints_the_key_once_and_stores_only_its_hash(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    code, out, err = cli(tmp_path, url, "keys", "add", "--agent", "bob")
    key = out.strip()
    _, events, _ = cli(tmp_path, url, "events", "--json")
    assert code == 0 and key.startswith("clk_") and "shown once" in err
    who = ledger.identify(key)
    assert who is not None and (who.agent, who.role) == ("bob", "agent")
    assert key not in events and "ApiKeyIssued" in events


def test_events_json_lines_and_the_compliance_report(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    sid = ledger.clock_in(WHO, "dev").session_id
    ledger.assert_compliance(WHO, sid)
    ledger.search(WHO, sid, "anything")
    ledger.assert_compliance(WHO, sid)
    url = str(ledger.store.engine.url)
    _, out, _ = cli(tmp_path, url, "events", "--json", "--stream", f"session:{sid}")
    rows = [json.loads(line) for line in out.splitlines()]
    _, report, _ = cli(tmp_path, url, "report", "compliance", "--agent", "alice", "--json")
    _, table, _ = cli(tmp_path, url, "report", "compliance")
    assert [r["type"] for r in rows] == [
        "SessionStarted",
        "ComplianceRefused",
        "MemorySearched",
        "ComplianceStamped",
    ]
    assert all(r["meta"]["agent"] == "alice" and len(r["hash"]) == 64 for r in rows)
    [row] = json.loads(report)["agents"]
    assert {k: row[k] for k in ("agent", "searches", "stamp_requests", "passes", "fails", "pass_rate")} == {
        "agent": "alice",
        "searches": 1,
        "stamp_requests": 2,
        "passes": 1,
        "fails": 1,
        "pass_rate": 0.5,
    }
    assert "alice" in table and "50%" in table


def test_replay_rebuilds_the_search_index_from_the_log(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    sid = ledger.clock_in(WHO, "dev").session_id
    ledger.remember(WHO, "the index is a projection", [], sid)
    ledger.index.drop()
    code, out, _ = cli(tmp_path, str(ledger.store.engine.url), "replay", "--json")
    assert code == 0 and json.loads(out)["index_rebuilt"] == 1
    assert ledger.search(WHO, sid, "projection").count == 1


def test_serve_refuses_a_public_bind_without_api_keys(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    code, _, err = cli(tmp_path, str(ledger.store.engine.url), "serve", "--host", "0.0.0.0")
    assert code == 2
    assert "refusing to listen on 0.0.0.0 without API keys" in err and "keys add" in err


def test_init_refuses_a_missing_receipt_key_and_writes_none(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    (tmp_path / "receipt.key").unlink()
    code, _, err = cli(tmp_path, url, "init")
    err = " ".join(err.split())
    assert code == 1
    assert f"receipt key {tmp_path / 'receipt.key'} is missing" in err and "copy receipt.key and signing.key" in err
    assert not (tmp_path / "receipt.key").exists()  # no key of its own for a ledger that has one


def test_a_setting_that_is_not_valid_is_named_with_what_to_fix(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "report", "compliance"], env={"LEDGER_PORT": "x"})
    assert result.exit_code == 2
    assert "the setting port is not valid" in result.stderr and "LEDGER_PORT" in result.stderr
    assert "Traceback" not in result.output + result.stderr
