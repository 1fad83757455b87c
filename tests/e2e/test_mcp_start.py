"""``compliance-ledger mcp`` answers ``initialize`` before it opens the ledger (api/mcp/opening.py): what answers
the handshake loads neither SQLAlchemy nor the store, the tools it lists are the ones a server on an open ledger
lists, and a ledger that cannot open leaves the server up with every call failing closed, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import LedgerFactory
from tests.mcp_support import call
from tests.server_support import READY_WITHIN

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "surface.json"
# What the server itself must not have loaded when it answers ``initialize``: the store and what needs it.
STORE_MODULES = ("sqlalchemy", "ledger.core.storage", "ledger.service", "ledger.compose", "projections.search.index")

# ``compliance-ledger mcp`` with a first middleware noting, in the file argv[1] names, which of STORE_MODULES the
# process had loaded when ``initialize`` reached the server and when the first ``tools/call`` was answered.
SPY = """
import json, sys
import api.mcp.server

seen, where, modules = {}, sys.argv[1], json.loads(sys.argv[2])
build = api.mcp.server.build_mcp


def spying(*args, **kwargs):
    server = build(*args, **kwargs)

    async def spy(ctx, call_next):
        if ctx.method == "initialize":
            seen["initialize"] = [m for m in modules if m in sys.modules]
        result = await call_next(ctx)
        if ctx.method == "tools/call" and "tools/call" not in seen:
            seen["tools/call"] = [m for m in modules if m in sys.modules]
        with open(where, "w") as f:
            json.dump(seen, f)
        return result

    server.middleware.insert(0, spy)
    return server


api.mcp.server.build_mcp = spying
sys.argv = ["compliance-ledger", "mcp", "--agent", "starter"]
from api.cli import main

main()
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def dumped(items: list[Any]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]


async def test_initialize_is_answered_before_the_store_loads_and_the_tools_are_the_open_ledgers(
    make_ledger: LedgerFactory, sqlite_url: str, tmp_path: Path
) -> None:
    make_ledger(sqlite_url)
    seen_file = tmp_path / "seen.json"
    env = {**os.environ, "LEDGER_HOME": str(tmp_path), "LEDGER_DATABASE_URL": sqlite_url, "PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", SPY, str(seen_file), json.dumps(STORE_MODULES)],
        env=env,
        cwd=str(tmp_path),
    )
    async with Client(params, mode="legacy") as client:  # the handshake (the 2026-07-28 protocol has none)
        tools = dumped((await client.list_tools()).tools)
        prompts = dumped((await client.list_prompts()).prompts)
        listed = await call(client, "task_list")
        searched = await call(client, "memory_search", {"query": "ledger"})
    seen = json.loads(seen_file.read_text())
    assert seen["initialize"] == [], f"loaded before the initialize answer: {seen['initialize']}"
    assert "sqlalchemy" in seen["tools/call"] and "ledger.service" in seen["tools/call"]  # opened for the call
    assert listed["result"] == [] and searched["count"] == 0 and searched["session_id"]  # the default session
    golden = json.loads(GOLDEN.read_text())["mcp"]
    assert tools == golden["tools"]  # the same tools and schemas as on an open ledger (workflow enums included)
    assert prompts == golden["prompts"]


def rpc(proc: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def answer(proc: subprocess.Popen[str], rpc_id: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed its output"
        message = json.loads(line)
        if message.get("id") == rpc_id:
            return dict(message)


def tool_call(proc: subprocess.Popen[str], rpc_id: int, name: str) -> dict[str, Any]:
    rpc(proc, {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": {"name": name, "arguments": {}}})
    return answer(proc, rpc_id)


def test_a_ledger_that_cannot_open_leaves_the_handshake_answered_and_every_call_failing_closed(
    make_ledger: LedgerFactory, sqlite_url: str, tmp_path: Path
) -> None:
    """A node home without the ledger's key files: ``mcp`` used to refuse to start; now the client gets its
    answers, each call the reason, and the command still ends with exit 1 and the error on stderr."""
    ledger = make_ledger(sqlite_url)
    before = ledger.store.head()
    fresh = tmp_path / "fresh"
    env = {**os.environ, "LEDGER_HOME": str(fresh), "LEDGER_DATABASE_URL": sqlite_url, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "api", "mcp", "--agent", "elf"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(tmp_path),
        text=True,
    )
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert answer(proc, 1)["result"]["serverInfo"]["name"] == "compliance-ledger"
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert len(answer(proc, 2)["result"]["tools"]) == 24
        listed = tool_call(proc, 3, "task_list")["result"]
        stamp = tool_call(proc, 4, "assert_compliance")["result"]
        _, stderr = proc.communicate(timeout=READY_WITHIN)  # the client leaves: stdin at its end
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    missing = f"receipt key {fresh / 'receipt.key'} is missing"
    assert listed["isError"] is True
    said = listed["content"][0]["text"]
    assert "the ledger could not be opened: " in said and missing in said
    assert "copy receipt.key and signing.key" in said and "restart this MCP server" in said
    assert stamp["isError"] is True
    said = stamp["content"][0]["text"]
    assert "the default session could not be opened: the ledger could not be opened" in said and missing in said
    assert proc.returncode == 1
    assert missing in " ".join(stderr.split())
    assert ledger.store.head() == before  # nothing was written
