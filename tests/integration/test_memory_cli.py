"""`compliance-ledger memory list | show | curate` and what `doctor` says about memory, on a real database."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from freezegun import freeze_time
from typer.testing import CliRunner

from api.cli import app
from ledger.memory.constitution import CONSTITUTION
from ledger.memory.decisions import block_id_for, normalise
from ledger.service import Actor
from tests.conftest import LedgerFactory
from tests.memory_support import T0, aged

WHO = Actor("alice", "cli")
CONSTITUTIONAL_IDS = sorted(block_id_for(b.content) for b in CONSTITUTION)
WIDE = {"COLUMNS": "200"}  # rich tables on a wide console: whole ids and content


def cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", url, *args], env=WIDE)
    return result.exit_code, result.stdout, result.stderr


def test_memory_list_shows_live_blocks_with_their_scores(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger, faded, kept = aged(make_ledger, WHO, db_url)
    url = db_url
    code, table, _ = cli(tmp_path, url, "memory", "list")
    _, as_json, _ = cli(tmp_path, url, "memory", "list", "--tier", "permanent", "--json")
    _, tagged, _ = cli(tmp_path, url, "memory", "list", "--tag", "project/", "--limit", "1", "--json")
    _, archived, _ = cli(tmp_path, url, "memory", "list", "--archived", "--json")
    listed = json.loads(as_json)
    assert code == 0 and "12 block(s)" in table and "100.00 active hours" in table
    assert faded in table and kept in table and "ephemeral" in table and "permanent" in table
    assert "Migrations run with alembic." in table
    assert listed["count"] == 10 and sorted(b["block_id"] for b in listed["blocks"]) == CONSTITUTIONAL_IDS
    assert {"total", "recency", "confidence"} <= set(listed["blocks"][0]["score"])
    assert json.loads(tagged)["count"] == 2 and len(json.loads(tagged)["blocks"]) == 1
    assert json.loads(archived)["count"] == 0
    assert ledger.memory_stats().archived == 0  # listing records nothing


def test_memory_curate_archives_and_list_and_doctor_show_it(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger, faded, kept = aged(make_ledger, WHO)
    url = str(ledger.store.engine.url)
    before = ledger.store.head()[0]
    code, curated, _ = cli(tmp_path, url, "memory", "curate")
    _, archived, _ = cli(tmp_path, url, "memory", "list", "--archived")
    _, both, _ = cli(tmp_path, url, "memory", "list", "--all", "--json")
    _, then, _ = cli(tmp_path, url, "memory", "list", "--archived", "--position", str(before), "--json")
    doctor_code, doctor, _ = cli(tmp_path, url, "doctor")
    [event] = list(ledger.store.iter_events(types=["MemoryCurated"]))
    assert code == 0
    assert "1 archived" in curated and "10 constitutional and 5 top block(s) reinforced" in curated
    assert f"archived {faded}" in curated
    assert event.agent == "operator" and event.position == before + 1
    assert faded in archived and kept not in archived and "yes" in archived
    assert json.loads(both)["count"] == 12
    assert json.loads(then)["count"] == 0
    assert doctor_code == 0 and "FAIL" not in doctor
    assert "1 archived blocks" in doctor and "12 blocks" in doctor
    assert "10 constitutional memory blocks" in doctor
    assert "100.00 h in which a session was active" in doctor


def test_memory_curate_json(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    ledger.setup_memory(WHO)
    code, out, _ = cli(tmp_path, str(ledger.store.engine.url), "memory", "curate", "--json")
    result = json.loads(out)
    assert code == 0
    assert result["trigger"] == "manual" and result["archived"] == 0 and result["constitutional_reinforced"] == 10


def test_memory_show_prints_fields_score_breakdown_and_history(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    sid = ledger.clock_in(WHO, "dev").session_id
    block_id = ledger.remember(WHO, "Receipts are HMAC-signed.", ["project/gate"], sid, "decision").block_id
    recalled = ledger.recall(WHO, "receipts", session_id=sid)
    ledger.outcome(WHO, [block_id], 1.0, sid)
    url = str(ledger.store.engine.url)
    code, shown, _ = cli(tmp_path, url, "memory", "show", block_id)
    _, as_json, _ = cli(tmp_path, url, "memory", "show", block_id, "--json")
    _, earlier, _ = cli(tmp_path, url, "memory", "show", block_id, "--position", str(recalled.position - 1), "--json")
    detail = json.loads(as_json)
    assert code == 0
    for text in (block_id, "project/gate", "decision", "standard", "Receipts are HMAC-signed.", "0.6667", "recency"):
        assert text in shown, text
    for event_type in ("MemoryRemembered", "MemoryRecalled", "MemoryOutcomeRecorded"):
        assert event_type in shown
    assert detail["block"]["confidence"] == 0.666667 and detail["block"]["reinforcements"] == 1
    assert [e["type"] for e in detail["history"]] == ["MemoryRemembered", "MemoryRecalled", "MemoryOutcomeRecorded"]
    assert [e["type"] for e in json.loads(earlier)["history"]] == ["MemoryRemembered"]


def test_memory_commands_refuse_bad_input_with_a_hint(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    ledger.setup_memory(WHO)
    url = str(ledger.store.engine.url)
    head = ledger.store.head()
    unknown = cli(tmp_path, url, "memory", "show", "blk_000000000000000000000000")
    both = cli(tmp_path, url, "memory", "list", "--archived", "--all")
    tier = cli(tmp_path, url, "memory", "list", "--tier", "forever")
    when = cli(tmp_path, url, "memory", "list", "--as-of", "yesterday")
    assert unknown[0] == 1 and "does not exist" in unknown[2]
    assert both[0] == 2 and "send one of them" in both[2]
    assert tier[0] == 2 and "permanent" in tier[2]
    assert when[0] == 2 and "ISO 8601" in when[2]
    assert ledger.store.head() == head


def test_replay_as_of_shows_a_blocks_score_at_that_moment(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'replay.db'}"
    with freeze_time(T0) as clock:
        ledger = make_ledger(url)
        block_id = ledger.remember(WHO, "The CI cache lives in S3.", ["project/ci"]).block_id
        sid = ledger.clock_in(WHO, "dev").session_id
        clock.tick(_dt.timedelta(hours=69.3147))  # one STANDARD half-life of active hours
        ledger.clock_out(WHO, sid)
        early = cli(tmp_path, url, "replay", "--as-of", T0.isoformat(), "--block", block_id, "--json")
        late = cli(tmp_path, url, "replay", "--block", block_id, "--json")
        text = cli(tmp_path, url, "replay", "--block", block_id)
        missing = cli(tmp_path, url, "replay", "--block", "blk_nope")
    assert early[0] == late[0] == text[0] == 0
    assert json.loads(early[1])["blocks"][0]["score"]["recency"] == 1.0
    assert abs(json.loads(late[1])["blocks"][0]["score"]["recency"] - 0.5) < 1e-4
    assert json.loads(late[1])["memory"]["blocks"] == 1
    assert "memory: 1 blocks" in text[1] and f"{block_id} [standard] score" in text[1]
    assert missing[0] != 0 and "does not exist" in missing[1] + missing[2]


def test_memory_supersede_and_forget_from_the_console(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    old = ledger.remember(WHO, "Backups run weekly.", ["project/ops"]).block_id
    code, said, _ = cli(tmp_path, url, "memory", "supersede", old, "Backups run daily at 03:00.")
    new = ledger.kernel.block_id(normalise("Backups run daily at 03:00."))
    forgot, json_out, _ = cli(tmp_path, url, "memory", "forget", new, "--reason", "test data", "--json")
    missing, _, err = cli(tmp_path, url, "memory", "forget", new, "--reason", "again")
    assert code == 0 and f"{old} superseded by {new}" in said
    assert forgot == 0 and json.loads(json_out)["block_id"] == new
    assert missing != 0 and "forgotten already" in err
