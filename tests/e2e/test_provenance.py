"""Seed 003 provenance on every read (issue 23): each read that returns a memory block says where the block came
from — the context it was stored with, the agent it was stored for and the session it was stored in — as one
``provenance`` object with the same fields on MCP (in-memory client, and over HTTP) and on REST (a loopback
server), taken from the recorded ``MemoryRemembered`` and its metadata, never from what a caller claims.

Three blocks: a thought alice contributes over REST with a context (and an ``agent_id`` naming someone else, which
the key overrides), a thought carol contributes over MCP with another context, and a plain block carol remembers
over MCP. bob then reads them every way the ledger offers, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from api.cli import app
from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.core.events import MemoryRemembered
from ledger.memory.decisions import normalise
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.e2e.test_http import rpc
from tests.mcp_support import call
from tests.server_support import HTTP_TIMEOUT, running

OPERATOR = Actor("operator", "cli", admin=True)
REST_THOUGHT = "Ledger receipts are verified offline with the public key before any audit begins."
MCP_THOUGHT = "Ledger snapshots are signed so that a restart never trusts a tampered read model."
MCP_NOTE = "The ledger runs PostgreSQL in production and SQLite on laptops."
REST_CONTEXT = "preparing the quarterly audit of the receipts"
MCP_CONTEXT = "reviewing how snapshots are restored after a crash"
QUERY = "ledger"
IDS: set[str] = set()  # the three blocks' ids in the test's ledger (keyed per ledger), set by the test


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def recorded(ledger: Ledger) -> dict[str, dict[str, Any]]:
    """Each block's provenance as the log holds it: its MemoryRemembered's context, the event's metadata."""
    out = {}
    for rec in ledger.store.iter_events(types=[MemoryRemembered.type_name]):
        assert isinstance(rec.event, MemoryRemembered)
        out[rec.event.block_id] = {
            "context": rec.event.context,
            "agent": rec.agent,
            "session_id": rec.meta.get("session_id"),
            "position": rec.position,
        }
    return out


def block_id(ledger: Ledger, text: str) -> str:
    return ledger.kernel.block_id(normalise(text))


def by_id(blocks: list[dict[str, Any]], key: str = "block_id") -> dict[str, dict[str, Any]]:
    return {b[key]: b["provenance"] for b in blocks if b[key] in IDS}


def rest(http: httpx.Client, method: str, path: str, **kw: Any) -> dict[str, Any]:
    response = http.request(method, path, **kw)
    assert response.status_code in (200, 201), response.text
    return dict(response.json())


@pytest.mark.anyio
async def test_every_read_of_a_block_carries_the_same_recorded_provenance_on_mcp_and_rest(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    IDS.clear()
    IDS.update(block_id(ledger, t) for t in (REST_THOUGHT, MCP_THOUGHT, MCP_NOTE))
    alice, bob = ({"Authorization": f"Bearer {ledger.issue_api_key(OPERATOR, a).api_key}"} for a in ("alice", "bob"))
    reads: dict[str, dict[str, dict[str, Any]]] = {}
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        # The writes: alice over REST (her agent_id claim is ignored), carol over MCP.
        contributed = rest(
            http,
            "POST",
            "/api/v1/memory",
            json={"prompt": REST_THOUGHT, "context": REST_CONTEXT, "agent_id": "mallory"},
            headers=alice,
        )
        assert contributed["trace"]["agent_id"] == "alice" and contributed["trace"]["agent_id_ignored"]
        async with Client(build_mcp(ledger, agent="carol", open_default_session=True)) as carol:
            thought = await call(carol, "contribute_to_brain", {"prompt": MCP_THOUGHT, "context": MCP_CONTEXT})
            await call(carol, "memory_remember", {"content": MCP_NOTE, "tags": ["project/ledger"]})

        # The reads, by bob: REST ...
        sid = rest(http, "POST", "/sessions", json={"role": "dev"}, headers=bob)["session_id"]
        found = rest(http, "POST", "/memory/search", json={"query": QUERY, "session_id": sid}, headers=bob)
        reads["REST /memory/search"] = by_id(found["results"])
        recall = rest(http, "POST", "/memory/recall", json={"query": QUERY, "top_k": 10}, headers=bob)
        reads["REST /memory/recall"] = by_id(recall["blocks"])
        lookup = rest(http, "GET", "/memory/lookup", params={"query": QUERY}, headers=bob)
        reads["REST /memory/lookup"] = by_id(lookup["results"])
        reads["REST /memory/blocks"] = by_id(rest(http, "GET", "/memory/blocks", headers=bob)["blocks"])
        reads["REST /memory/blocks/{id}"] = {
            i: rest(http, "GET", f"/memory/blocks/{i}", headers=bob)["block"]["provenance"] for i in IDS
        }
        brain = rest(http, "POST", "/api/v1/memory", json={"prompt": "Which ledger notes exist?"}, headers=bob)
        reads["REST /api/v1/memory sources"] = by_id(brain["result"]["sources"], "thought_id")
        over_http = rpc(
            http,
            base,
            "tools/call",
            {"name": "memory_search", "arguments": {"query": QUERY, "session_id": sid}},
            headers=bob,
        )["result"]
        assert not over_http["isError"], over_http["content"]
        reads["MCP over HTTP memory_search"] = by_id(over_http["structuredContent"]["results"])

        # ... and MCP (in-memory client).
        async with Client(build_mcp(ledger, agent="bob", open_default_session=True)) as client:
            reads["MCP memory_search"] = by_id((await call(client, "memory_search", {"query": QUERY}))["results"])
            recalled = await call(client, "memory_recall", {"query": QUERY, "top_k": 10})
            reads["MCP memory_recall"] = by_id(recalled["blocks"])
            answer = await call(client, "query_brain", {"prompt": "Which ledger notes exist?"})
            reads["MCP query_brain sources"] = by_id(answer["result"]["sources"], "thought_id")
            reads["MCP resource memory block"] = {}
            for i in IDS:
                [content] = (await client.read_resource(f"ledger://memory/blocks/{i}")).contents
                reads["MCP resource memory block"][i] = json.loads(content.text)["block"]["provenance"]  # type: ignore[union-attr]

    truth = {i: p for i, p in recorded(ledger).items() if i in IDS}
    for read, seen in reads.items():
        assert seen == truth, read  # every block, every read: the recorded provenance, field for field

    rest_thought, mcp_thought, note = (truth[block_id(ledger, t)] for t in (REST_THOUGHT, MCP_THOUGHT, MCP_NOTE))
    assert rest_thought["agent"] == "alice" and rest_thought["context"] == REST_CONTEXT  # not mallory
    assert rest_thought["session_id"] == contributed["trace"]["session_id"]
    assert mcp_thought["agent"] == "carol" and mcp_thought["context"] == MCP_CONTEXT
    assert mcp_thought["session_id"] == thought["trace"]["session_id"]
    assert note["agent"] == "carol" and note["context"] is None
    assert note["session_id"] is not None and ledger.session_state(note["session_id"]).agent == "carol"
    for sources in (answer["result"]["sources"], brain["result"]["sources"]):  # the brain's own fields agree
        assert all(s["contributor"] == s["provenance"]["agent"] for s in sources)
        assert all(s["context"] == s["provenance"]["context"] for s in sources)

    shown = CliRunner().invoke(
        app, ["--home", str(tmp_path), "--db", db_url, "memory", "show", block_id(ledger, REST_THOUGHT)]
    )
    printed = " ".join(shown.output.split())  # the table may wrap a long value
    assert shown.exit_code == 0, shown.output
    assert f"alice, session {rest_thought['session_id']} (event {rest_thought['position']})" in printed
    assert REST_CONTEXT in printed
