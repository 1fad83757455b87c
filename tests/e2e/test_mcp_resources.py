"""Read-only MCP resources: the caller's compliance report, a memory block by id and the latest signed checkpoint,
read through real MCP clients; the caller comes from the transport (``--agent`` in memory and on stdio, the API
key over HTTP), as for tools."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.audit.checkpoints import CheckpointLog
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.e2e.test_http import rpc, running
from tests.mcp_support import call

REPORT, CHECKPOINT = "ledger://reports/compliance", "ledger://checkpoints/latest"
OPERATOR = Actor("operator", "cli", admin=True)


def read(server: Any, uri: str) -> Any:
    async def reading() -> Any:
        async with Client(server) as client:
            result = await client.read_resource(uri)
        [content] = result.contents
        assert content.mime_type == "application/json"
        return json.loads(content.text)

    return anyio.run(reading)


def search_and_stamp(ledger: Ledger, agent: str) -> None:
    who = Actor(agent, "cli")
    sid = ledger.clock_in(who, "dev").session_id
    ledger.search(who, sid, "anything")
    ledger.assert_compliance(who, sid)


def test_the_report_is_the_callers_own_row(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    search_and_stamp(ledger, "alice")
    search_and_stamp(ledger, "bob")
    report = read(build_mcp(ledger, agent="alice"), REPORT)
    assert [row["agent"] for row in report["agents"]] == ["alice"]
    assert report["agents"][0]["searches"] == 1 and report["agents"][0]["passes"] == 1


def test_a_memory_block_is_read_by_id_and_an_unknown_id_is_answered_clearly(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()

    async def scenario() -> tuple[dict[str, Any], str]:
        async with Client(build_mcp(ledger, agent="alice", open_default_session=True)) as client:
            block = await call(client, "memory_remember", {"content": "Receipts are signed with Ed25519."})
            found = await client.read_resource(f"ledger://memory/blocks/{block['block_id']}")
            with pytest.raises(MCPError) as missing:
                await client.read_resource("ledger://memory/blocks/blk_000000000000000000000000")
        return {"id": block["block_id"], **json.loads(found.contents[0].text)}, str(missing.value)

    detail, missing = anyio.run(scenario)
    assert detail["block"]["block_id"] == detail["id"]
    assert detail["block"]["content"] == "Receipts are signed with Ed25519."
    assert [h["type"] for h in detail["history"]][:1] == ["MemoryRemembered"]
    assert "does not exist" in missing


def test_the_latest_checkpoint_or_a_clear_answer_when_there_is_none(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    path = tmp_path / "checkpoints.jsonl"
    none = read(build_mcp(ledger, agent="alice", checkpoint_file=path), CHECKPOINT)
    unconfigured = read(build_mcp(ledger, agent="alice"), CHECKPOINT)
    CheckpointLog(path).append(ledger.checkpoint())
    latest = read(build_mcp(ledger, agent="alice", checkpoint_file=path), CHECKPOINT)
    assert none["checkpoint"] is None and "no checkpoint" in none["message"] and "checkpoint" in none["hint"]
    assert unconfigured["checkpoint"] is None and unconfigured["hint"]
    assert latest["checkpoint"]["position"] == ledger.store.head()[0]
    assert latest["alg"] and latest["signature"]


def test_over_stdio_the_report_is_the_agents_own(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    search_and_stamp(ledger, "alice")
    search_and_stamp(ledger, "bob")
    env = {**os.environ, "LEDGER_HOME": str(tmp_path), "LEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.db'}"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api", "mcp", "--agent", "bob"], env=env, cwd=str(tmp_path)
    )
    report = read(params, REPORT)
    assert [row["agent"] for row in report["agents"]] == ["bob"]
    checkpoint = read(params, CHECKPOINT)
    assert checkpoint["checkpoint"] is None and checkpoint["message"] == "no checkpoint has been written yet"


def test_over_http_the_api_key_says_whose_report_it_is(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    keys = {name: ledger.issue_api_key(OPERATOR, name).api_key for name in ("alice", "bob")}
    search_and_stamp(ledger, "alice")
    search_and_stamp(ledger, "bob")
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=60) as http:
        reports = {
            name: rpc(http, base, "resources/read", {"uri": REPORT}, headers={"Authorization": f"Bearer {key}"})
            for name, key in keys.items()
        }
        anonymous = http.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": REPORT}},
            headers={"Content-Type": "application/json"},
        )
    for name, answer in reports.items():
        body = json.loads(answer["result"]["contents"][0]["text"])
        assert [row["agent"] for row in body["agents"]] == [name]
    assert anonymous.status_code == 401
