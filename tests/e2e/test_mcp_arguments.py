"""Unknown, missing and ill-typed arguments get a tool error that names the argument and says what to send — in
memory, over stdio and over Streamable HTTP — never pydantic's raw text or a link to its documentation."""

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
from api.settings import Settings
from tests.conftest import LedgerFactory
from tests.e2e.test_http import running

pytestmark = pytest.mark.anyio

CASES = [
    (
        "memory_search",
        {"query": "x", "agent": "root"},
        ["unknown argument 'agent'", "send only 'query', 'session_id' and 'limit'"],
    ),
    ("memory_search", {"query": "x", "limit": "ten"}, ["argument 'limit'", "send an integer from 1 to 100"]),
    ("memory_search", {}, ["argument 'query' is required", "send a text of 1 to 1,000 characters"]),
    ("memory_curate", {"force": True}, ["unknown argument 'force'", "takes no arguments"]),
    (
        "memory_remember",
        {"content": "c", "tags": ["ok", 7]},
        ["argument 'tags.1'", "send a text of 1 to 64 characters"],
    ),
    ("memory_recall", {"frame": "everything"}, ["argument 'frame'", "send one of 'self', 'attention', 'task'"]),
    ("memory_outcome", {"block_ids": [], "signal": "high"}, ["argument 'signal'", "send a number from 0.0 to 1.0"]),
    ("task_create", {"task_id": "t-1", "title": "T", "dna": ["x"]}, ["argument 'dna'", "send a JSON object"]),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def in_memory(make_ledger: LedgerFactory, tmp_path: Path) -> AsyncIterator[Client]:
    async with Client(build_mcp(make_ledger(), agent="typo", open_default_session=True)) as client:
        yield client


@asynccontextmanager
async def stdio(make_ledger: LedgerFactory, tmp_path: Path) -> AsyncIterator[Client]:
    make_ledger()  # the schema and keys exist before the subprocess starts
    env = {**os.environ, "LEDGER_HOME": str(tmp_path), "LEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.db'}"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api", "mcp", "--agent", "typo"], env=env, cwd=str(tmp_path)
    )
    async with Client(params) as client:
        yield client


@asynccontextmanager
async def http(make_ledger: LedgerFactory, tmp_path: Path) -> AsyncIterator[Client]:
    with running(make_ledger(), Settings(home=tmp_path)) as base:
        async with Client(f"{base}/mcp") as client:
            yield client


TRANSPORTS = {"in_memory": in_memory, "stdio": stdio, "http": http}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
async def test_bad_arguments_are_explained_by_name_with_what_to_send(
    make_ledger: LedgerFactory, tmp_path: Path, transport: str
) -> None:
    answers: list[tuple[str, Any]] = []
    async with TRANSPORTS[transport](make_ledger, tmp_path) as client:
        for tool, args, _ in CASES:
            answers.append((tool, await client.call_tool(tool, args)))
    for (tool, result), (_, _, said) in zip(answers, CASES, strict=True):
        text = result.content[0].text
        assert result.is_error, (tool, text)
        assert text.startswith(f"Error executing tool {tool}: invalid arguments: "), text
        for part in said:
            assert part in text, (part, text)
        assert "pydantic" not in text and "validation error for" not in text and "[type=" not in text, text
