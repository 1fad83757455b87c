"""The Odyssean Anchor end to end: a real git project, real MCP clients, retries counted by the server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.service import Actor, Ledger
from tests.anchor_support import proof
from tests.conftest import LedgerFactory
from tests.mcp_support import call
from tests.server_support import HTTP_TIMEOUT, running

pytestmark = pytest.mark.anyio
OPERATOR = Actor("operator", "cli", admin=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def anchored_ledger(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> Ledger:
    return make_ledger(db_url, project_roots=[str(tmp_path / "projects")])


def stdio_server(make_ledger: LedgerFactory, url: str, tmp_path: Path, *args: str) -> StdioServerParameters:
    """A `compliance-ledger mcp` subprocess on an initialised ledger whose project roots hold `project`."""
    roots = [str(tmp_path / "projects")]
    make_ledger(url, project_roots=roots)
    env = {
        **os.environ,
        "LEDGER_HOME": str(tmp_path),
        "LEDGER_DATABASE_URL": url,
        "LEDGER_PROJECT_ROOTS": json.dumps(roots),
    }
    return StdioServerParameters(command=sys.executable, args=["-m", "api", "mcp", *args], env=env)


async def test_clock_in_records_the_real_project_context(anchored_ledger: Ledger, project: Path) -> None:
    async with Client(build_mcp(anchored_ledger, agent="dev-1")) as client:
        session = await call(client, "clock_in", {"role": "dev", "working_dir": str(project)})
    assert (session["branch"], session["phase"], session["files"]) == ("main", "B1", 1)
    assert session["context_files"] == [str(project / "PROJECT-CONTEXT.oct.md")]


async def test_a_valid_proof_is_anchored_with_the_authoritative_context(anchored_ledger: Ledger, project: Path) -> None:
    async with Client(build_mcp(anchored_ledger, agent="dev-1")) as client:
        sid = (await call(client, "clock_in", {"role": "dev", "working_dir": str(project)}))["session_id"]
        result = await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": proof()})
    assert result["validated"] is True, result["errors"]
    assert result["errors"] == []
    assert "PHASE::B1" in result["canonical_proof"] and "BRANCH::main" in result["canonical_proof"]
    assert result["enforcement"] == {"attempt": 1, "max_retries": 2, "retries_left": 2, "locked": False}


async def test_three_failures_lock_the_session_until_a_person_unlocks_it(
    anchored_ledger: Ledger, project: Path
) -> None:
    bad = proof(artifact="my response")
    async with Client(build_mcp(anchored_ledger, agent="dev-1")) as client:
        sid = (await call(client, "clock_in", {"role": "dev", "working_dir": str(project)}))["session_id"]
        results = [
            await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": bad})
            for _ in range(3)
        ]
        refused = await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": proof()})
        tools = {t.name for t in (await client.list_tools()).tools}
        unlocked = anchored_ledger.unlock_anchor(OPERATOR, sid, "reviewed the proof with the agent")
        after = await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": proof()})
    assert [r["validated"] for r in results] == [False, False, False]
    assert [r["enforcement"]["retries_left"] for r in results] == [2, 1, 0]
    assert [r["enforcement"]["locked"] for r in results] == [False, False, True]
    assert results[0]["guidance"].startswith("VALIDATION FAILED: [") and "RETRY: [" in results[0]["guidance"]
    assert "COMMIT artifact is 'my response'" in results[0]["guidance"]
    assert "===ODYSSEAN_ANCHOR_PROOF::v5.0===" in results[0]["template"]
    assert refused["validated"] is False and "human intervention required" in refused["errors"][0]
    assert not any("unlock" in name for name in tools)  # agents cannot unlock themselves
    assert unlocked.anchor.locked is False
    assert after["validated"] is True
    types = [r.type for r in anchored_ledger.store.iter_records(stream=f"session:{sid}")]
    assert types.count("AnchorAttempted") == 4 and types.count("AnchorLocked") == 1
    assert "AnchorRefused" in types and "AnchorUnlocked" in types
    [unlock] = list(anchored_ledger.store.iter_events(stream=f"session:{sid}", types=["AnchorUnlocked"]))
    assert unlock.meta["agent"] == "operator" and unlock.event.reason == "reviewed the proof with the agent"  # type: ignore[attr-defined]


async def test_a_valid_proof_on_the_last_allowed_attempt_passes(anchored_ledger: Ledger, project: Path) -> None:
    async with Client(build_mcp(anchored_ledger, agent="dev-1")) as client:
        sid = (await call(client, "clock_in", {"role": "dev", "working_dir": str(project)}))["session_id"]
        for _ in range(2):
            await call(
                client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": proof(phase="B2")}
            )
        last = await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": proof()})
    assert last["validated"] is True
    assert last["enforcement"]["locked"] is False and last["enforcement"]["attempt"] == 3


async def test_nothing_the_caller_sends_resets_the_count(anchored_ledger: Ledger, project: Path) -> None:
    async with Client(build_mcp(anchored_ledger, agent="dev-1")) as client:
        sid = (await call(client, "clock_in", {"role": "dev", "working_dir": str(project)}))["session_id"]
        await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": "nonsense"})
        sneaky = await client.call_tool(
            "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": "x", "attempt": 0}
        )
        second = await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": "x"})
    assert sneaky.is_error
    assert second["enforcement"]["attempt"] == 2


async def test_the_attempt_count_survives_a_server_restart(
    make_ledger: LedgerFactory, sqlite_url: str, tmp_path: Path, project: Path
) -> None:
    params = stdio_server(make_ledger, sqlite_url, tmp_path, "--agent", "dev-1")
    bad = {"role": "dev", "proof_candidate": proof(tensions=1)}
    async with Client(params) as client:
        sid = (await call(client, "clock_in", {"role": "dev", "working_dir": str(project)}))["session_id"]
        first = [await call(client, "odyssean_anchor", {"session_id": sid, **bad}) for _ in range(2)]
    async with Client(params) as client:
        third = await call(client, "odyssean_anchor", {"session_id": sid, **bad})
    assert [r["enforcement"]["attempt"] for r in first] == [1, 2]
    assert "TIER_DEFAULT requires 2 tensions, found 1. Add another tension." in first[0]["guidance"]
    assert third["enforcement"] == {"attempt": 3, "max_retries": 2, "retries_left": 0, "locked": True}


def test_require_anchor_closes_the_gate_until_the_session_is_anchored(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")], require_anchor=True)
    who = Actor("dev-1", "mcp")
    sid = ledger.clock_in(who, "dev", str(project)).session_id
    ledger.search(who, sid, "anything")
    refused = ledger.assert_compliance(who, sid)
    assert ledger.anchor(who, sid, "dev", proof()).validated
    passed = ledger.assert_compliance(who, sid)
    assert refused.status == "FAIL" and refused.reason == "anchor_required"
    assert refused.message is not None and refused.message.startswith("⛔ GATE CLOSED.")
    assert "odyssean_anchor" in refused.message
    assert passed.status == "PASS"


def test_anchor_outcomes_appear_in_reports_and_session_state(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")])
    who = Actor("dev-1", "rest")
    first_try = ledger.clock_in(who, "dev", str(project)).session_id
    ledger.anchor(who, first_try, "dev", proof())
    locked = ledger.clock_in(who, "dev", str(project)).session_id
    for _ in range(3):
        ledger.anchor(who, locked, "dev", proof(phase="B9"))
    agent_key = ledger.issue_api_key(OPERATOR, "dev-1").api_key
    admin_key = ledger.issue_api_key(OPERATOR, "boss", admin=True).api_key
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        report = http.get("/reports/compliance", headers={"X-API-Key": agent_key}).json()["agents"][0]
        state = http.get(f"/sessions/{locked}", headers={"X-API-Key": agent_key}).json()["anchor"]
        url = f"/admin/sessions/{locked}/anchor/unlock"
        denied = http.post(url, json={"reason": "let me in"}, headers={"X-API-Key": agent_key})
        allowed = http.post(url, json={"reason": "reviewed"}, headers={"X-API-Key": admin_key})
        via_rest = http.post(
            "/anchors",
            json={"session_id": locked, "role": "dev", "proof_candidate": proof()},
            headers={"X-API-Key": agent_key},
        ).json()
    assert (report["anchor_attempts"], report["anchor_passes"], report["lockouts"]) == (4, 1, 1)
    assert report["first_try_pass_rate"] == 0.5
    assert state["locked"] is True and state["total_attempts"] == 3
    assert denied.status_code == 403
    assert allowed.status_code == 200 and allowed.json()["anchor"]["locked"] is False
    assert via_rest["validated"] is True


async def test_the_stdio_server_can_anchor_its_default_session_in_a_project(
    make_ledger: LedgerFactory, sqlite_url: str, tmp_path: Path, project: Path
) -> None:
    params = stdio_server(
        make_ledger, sqlite_url, tmp_path, "--agent", "dev-1", "--role", "dev", "--working-dir", str(project)
    )
    async with Client(params) as client:
        result = await call(client, "odyssean_anchor", {"role": "dev", "proof_candidate": proof()})
    assert result["validated"] is True, result["errors"]


def test_the_stdio_server_refuses_a_working_dir_outside_the_project_roots(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from api.cli import app

    ledger = make_ledger(project_roots=[str(tmp_path / "projects")])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    result = CliRunner().invoke(
        app,
        [
            "--home",
            str(tmp_path),
            "--db",
            str(ledger.store.engine.url),
            "mcp",
            "--agent",
            "a",
            "--working-dir",
            str(outside),
        ],
        env={"LEDGER_PROJECT_ROOTS": json.dumps([str(tmp_path / "projects")])},
    )
    assert result.exit_code != 0
    assert "outside the allowed project roots" in result.stderr
