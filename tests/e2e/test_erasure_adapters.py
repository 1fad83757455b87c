"""Erasure through the adapters: ``POST /memory/blocks/{id}/erase`` and ``POST /sessions/{id}/erase`` on a real HTTP
server (administrators only: an agent's key gets 403), ``GET /memory/blocks/{id}`` answering 410 with who, when and
why; ``compliance-ledger memory erase`` and ``session erase`` on the console."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from typer.testing import CliRunner

from api.cli import app
from api.settings import Settings
from ledger.service import Actor
from tests.conftest import LedgerFactory
from tests.server_support import running

ALICE = Actor("alice", "cli")
WORD = "plinthavarro"


def test_rest_erases_a_block_and_a_session_and_answers_410(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    sid = ledger.clock_in(ALICE, "dev", focus=f"{WORD} focus").session_id
    block_id = ledger.remember(ALICE, f"The {WORD} account is closed.", ["ops"], sid).block_id
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base) as http:
        empty = http.post(f"/memory/blocks/{block_id}/erase", json={"reason": ""})
        erased = http.post(f"/memory/blocks/{block_id}/erase", json={"reason": "erasure request #21"})
        gone = http.get(f"/memory/blocks/{block_id}")
        session = http.post(f"/sessions/{sid}/erase", json={"reason": "erasure request #22"})
        missing = http.post("/sessions/ses_nope/erase", json={"reason": "erasure request #23"})
    assert empty.status_code == 422
    assert erased.status_code == 200 and erased.json()["block_id"] == block_id and erased.json()["key_ids"]
    assert gone.status_code == 410
    error = gone.json()["error"]
    assert error["code"] == "erased" and "erasure request #21" in error["message"] and WORD not in error["message"]
    assert session.status_code == 200 and session.json()["session_id"] == sid
    assert missing.status_code == 404


def test_an_agents_key_cannot_erase_over_rest(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    block_id = ledger.remember(ALICE, f"The {WORD} ledger note.").block_id
    admin = Actor("operator", "cli", admin=True)
    key = ledger.issue_api_key(admin, "alice").api_key
    with (
        running(ledger, Settings(home=tmp_path)) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as http,
    ):
        refused = http.post(f"/memory/blocks/{block_id}/erase", json={"reason": "an agent tries"})
    assert refused.status_code == 403
    assert ledger.memory_block(block_id).block.block_id == block_id


def test_the_console_erases_a_block_and_a_session(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    url = str(ledger.store.engine.url)
    sid = ledger.clock_in(ALICE, "dev").session_id
    ledger.search(ALICE, sid, f"where is {WORD}")
    block_id = ledger.remember(ALICE, f"The {WORD} account is closed.").block_id
    runner = CliRunner()
    block = runner.invoke(
        app, ["--home", str(tmp_path), "--db", url, "memory", "erase", block_id, "--reason", "request #31"]
    )
    session = runner.invoke(
        app, ["--home", str(tmp_path), "--db", url, "session", "erase", sid, "--reason", "request #32", "--json"]
    )
    shown = runner.invoke(app, ["--home", str(tmp_path), "--db", url, "memory", "show", block_id])
    assert block.exit_code == 0 and f"{block_id} erased at position" in block.stdout
    assert session.exit_code == 0 and json.loads(session.stdout)["session_id"] == sid
    assert shown.exit_code != 0 and "erased by operator" in shown.stdout + shown.stderr
    assert WORD not in shown.stdout + shown.stderr
