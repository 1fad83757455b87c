"""Seed 000 tests A, B, C and the zero-result stamp, through a real MCP client: in memory and over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from api.mcp.server import build_mcp
from ledger.sessions.gate import STAMP_ZERO
from tests.conftest import LedgerFactory
from tests.mcp_support import call

pytestmark = pytest.mark.anyio

STAMP_3 = "[COMPLIANCE] YES I HAVE SEARCHED, FOUND 3 RELEVANT MEMORIES, BROUGHT THEM TO AGENT."
MEMORIES = [
    "The ledger database runs SQLite in WAL mode with synchronous FULL.",
    "Receipts are signed with an HMAC key kept outside the events table.",
    "Every ledger database change is appended, never updated.",
    "Agents clock in before they act.",
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def in_memory(make_ledger: LedgerFactory, url: str, tmp_path: Path) -> AsyncIterator[Client]:
    server = build_mcp(make_ledger(url), agent="agent-a", open_default_session=True)
    async with Client(server) as client:
        yield client


@asynccontextmanager
async def stdio(make_ledger: LedgerFactory, url: str, tmp_path: Path) -> AsyncIterator[Client]:
    make_ledger(url)  # initialise schema and key before the subprocess starts
    env = {**os.environ, "LEDGER_HOME": str(tmp_path), "LEDGER_DATABASE_URL": url}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api", "mcp", "--agent", "agent-a"], env=env, cwd=str(tmp_path)
    )
    async with Client(params) as client:
        yield client


TRANSPORTS = {"in_memory": in_memory, "stdio": stdio}


@pytest.fixture(params=sorted(TRANSPORTS))
def connect(request: pytest.FixtureRequest, make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> Any:
    factory = TRANSPORTS[request.param]
    return lambda: factory(make_ledger, db_url, tmp_path)


async def remember_all(client: Client) -> None:
    for text in MEMORIES:
        assert (await call(client, "memory_remember", {"content": text}))["status"] == "created"


async def test_a_lazy_agent_that_never_searched_is_refused(connect: Any) -> None:
    async with connect() as client:
        result = await call(client, "assert_compliance")
    assert result["status"] == "FAIL"
    assert result["message"].startswith("⛔ GATE CLOSED.")
    assert "memory_search" in result["message"]
    assert result.get("stamp") is None and result.get("receipt") is None


async def test_b_search_then_assert_passes_with_the_exact_stamp_and_count(connect: Any) -> None:
    async with connect() as client:
        await remember_all(client)
        found = await call(client, "memory_search", {"query": "ledger database receipts"})
        result = await call(client, "assert_compliance")
        verdict = await call(client, "verify_stamp", {"receipt": result["receipt"]})
    assert found["count"] == 3
    assert result["status"] == "PASS"
    assert result["stamp"] == STAMP_3
    assert verdict["valid"] is True and verdict["position"] == result["position"] and verdict["count"] == 3


async def test_c_double_dip_fails_on_the_second_assert(connect: Any) -> None:
    async with connect() as client:
        await remember_all(client)
        await call(client, "memory_search", {"query": "receipts"})
        first = await call(client, "assert_compliance")
        second = await call(client, "assert_compliance")
    assert first["status"] == "PASS"
    assert second["status"] == "FAIL"
    assert second["message"].startswith("⛔ GATE CLOSED.")
    assert second["reason"] == "token_consumed"


async def test_a_search_with_no_results_earns_the_zero_stamp(connect: Any) -> None:
    async with connect() as client:
        await remember_all(client)
        found = await call(client, "memory_search", {"query": "kubernetes helm chart"})
        result = await call(client, "assert_compliance")
    assert found["count"] == 0
    assert result["status"] == "PASS"
    assert result["stamp"] == STAMP_ZERO
    assert result["stamp"] == (
        "[COMPLIANCE] YES I HAVE SEARCHED, I HAVE FOUND ZERO RELEVANT MEMORIES, NOTHING WAS BROUGHT TO AGENT."
    )


async def test_a_newer_search_replaces_an_unused_token(connect: Any) -> None:
    async with connect() as client:
        await remember_all(client)
        await call(client, "memory_search", {"query": "kubernetes"})
        await call(client, "memory_search", {"query": "agents clock"})
        first = await call(client, "assert_compliance")
        second = await call(client, "assert_compliance")
    assert first["stamp"] == "[COMPLIANCE] YES I HAVE SEARCHED, FOUND 1 RELEVANT MEMORIES, BROUGHT THEM TO AGENT."
    assert second["status"] == "FAIL"


async def test_the_grounding_prompt_requires_the_stamp_from_assert_compliance(
    make_ledger: LedgerFactory,
) -> None:
    async with Client(build_mcp(make_ledger(), agent="a", open_default_session=True)) as client:
        prompts = await client.list_prompts()
        assert "compliance_grounding" in [p.name for p in prompts.prompts]
        prompt = await client.get_prompt("compliance_grounding")
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "You are REQUIRED to include the official Compliance Stamp at the end of your response." in text
    assert "you must obtain it by calling `assert_compliance`" in text


async def test_the_stdio_server_opens_a_default_session_and_closes_it_at_exit(
    make_ledger: LedgerFactory, sqlite_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(sqlite_url)
    async with stdio(make_ledger, sqlite_url, tmp_path) as client:
        await call(client, "assert_compliance")
    types = [r.type for r in ledger.store.iter_records() if r.stream.startswith("session:")]
    agents = {r.agent for r in ledger.store.iter_events() if r.stream.startswith("session:")}
    assert types == ["SessionStarted", "ComplianceRefused", "SessionEnded"]
    assert agents == {"agent-a"}


async def test_a_stdio_server_on_a_fresh_machine_starts_with_the_constitution_recallable(tmp_path: Path) -> None:
    """No `init` first: `mcp` creates key, schema and the 10 constitutional blocks, and recall finds them."""
    env = {**os.environ, "LEDGER_HOME": str(tmp_path / "fresh")}
    env.pop("LEDGER_DATABASE_URL", None)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api", "mcp", "--agent", "elf"], env=env, cwd=str(tmp_path)
    )
    async with Client(params) as client:
        recalled = await call(client, "memory_recall", {"frame": "self", "top_k": 10})
    assert len(recalled["blocks"]) == 10
    assert all("self/constitutional" in b["tags"] for b in recalled["blocks"])
    assert recalled["text"].startswith("## Identity\n- ")


async def test_a_stdio_server_whose_default_session_cannot_open_answers_and_says_why(
    make_ledger: LedgerFactory, sqlite_url: str, tmp_path: Path
) -> None:
    """The default session opens beside the handshake: a clock-in the ledger refuses (here: an agent name that is
    a credential) leaves the handshake answered, every call that needs the session failing closed with the reason,
    and nothing appended."""
    from tests.secret_samples import _AWS

    ledger = make_ledger(sqlite_url)
    before = ledger.store.head()
    env = {**os.environ, "LEDGER_HOME": str(tmp_path), "LEDGER_DATABASE_URL": sqlite_url}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api", "mcp", "--agent", _AWS], env=env, cwd=str(tmp_path)
    )
    async with Client(params) as client:
        tools = await client.list_tools()
        assert "assert_compliance" in [t.name for t in tools.tools]
        answer = await client.call_tool("assert_compliance", {})
    assert answer.is_error
    said = answer.content[0].text  # type: ignore[union-attr]
    assert "the default session could not be opened" in said
    assert "credential" in said and _AWS not in said
    assert ledger.store.head() == before
