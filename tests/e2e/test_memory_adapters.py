"""The memory lifecycle through the adapters: MCP tools on an in-memory client, REST routes on loopback uvicorn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.memory.constitution import CONSTITUTION
from ledger.memory.decisions import block_id_for
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.e2e.test_http import tool
from tests.mcp_support import call
from tests.memory_support import aged
from tests.server_support import HTTP_TIMEOUT, running

AGENT = "agent-a"
WHO = Actor(AGENT, "mcp")
CONSTITUTIONAL_IDS = sorted(block_id_for(b.content) for b in CONSTITUTION)
MEMORIES = [
    "The ledger database runs SQLite in WAL mode with synchronous FULL.",
    "Receipts are signed with an HMAC key kept outside the events table.",
    "Every ledger database change is appended, never updated.",
]
SCORE_PARTS = {"total", "similarity", "confidence", "recency", "centrality", "reinforcement", "weights"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(ledger: Ledger) -> AsyncIterator[Client]:
    async with Client(build_mcp(ledger, agent=AGENT, open_default_session=True)) as client:
        yield client


# --- MCP ---------------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_self_frame_recalls_the_constitution_with_score_breakdowns(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    async with connected(make_ledger(db_url)) as client:
        setup = await call(client, "memory_setup")
        recalled = await call(client, "memory_recall", {"frame": "self", "top_k": 10})
    assert sorted(setup["created"]) == CONSTITUTIONAL_IDS
    assert recalled["frame"] == "self" and recalled["query"] is None
    assert recalled["text"].startswith("## Identity\n- ")
    assert sorted(b["block_id"] for b in recalled["blocks"]) == CONSTITUTIONAL_IDS
    assert all(b["tier"] == "permanent" for b in recalled["blocks"])
    assert [b["guaranteed"] for b in recalled["blocks"]] == [True, True] + [False] * 8  # two reserved slots
    assert all(set(b["score"]) >= SCORE_PARTS for b in recalled["blocks"])
    assert recalled["tokens"] <= recalled["token_budget"] == 600
    assert recalled["token_expires_at"] is None  # no query: no compliance token


@pytest.mark.anyio
async def test_a_recall_with_a_query_in_the_default_session_earns_one_stamp(make_ledger: LedgerFactory) -> None:
    async with connected(make_ledger()) as client:
        for text in MEMORIES:
            await call(client, "memory_remember", {"content": text})
        recalled = await call(client, "memory_recall", {"query": "ledger database"})
        first = await call(client, "assert_compliance")
        second = await call(client, "assert_compliance")
    assert recalled["session_id"] is not None and recalled["token_expires_at"] is not None
    assert recalled["text"].startswith("## Relevant Knowledge\n[1] ")
    assert len(recalled["blocks"]) == 2 and recalled["token_budget"] == 2000
    assert first["status"] == "PASS" and first["session_id"] == recalled["session_id"]
    assert first["stamp"] == "[COMPLIANCE] YES I HAVE SEARCHED, FOUND 2 RELEVANT MEMORIES, BROUGHT THEM TO AGENT."
    assert second["status"] == "FAIL" and second["reason"] == "token_consumed"


@pytest.mark.anyio
async def test_recall_reinforces_and_an_outcome_moves_confidence(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    async with connected(ledger) as client:
        stored = await call(client, "memory_remember", {"content": MEMORIES[1], "category": "decision"})
        block_id = stored["block_id"]
        recalled = await call(client, "memory_recall", {"query": "receipts"})
        helped = await call(
            client, "memory_outcome", {"block_ids": [block_id], "signal": 1.0, "note": "the key location was right"}
        )
        misled = await call(client, "memory_outcome", {"block_ids": [block_id], "signal": 0.0})
    [change] = helped["blocks"]
    assert [b["block_id"] for b in recalled["blocks"]] == [block_id]
    assert recalled["blocks"][0]["category"] == "decision"
    assert change["confidence_before"] == 0.5
    assert change["confidence_after"] == pytest.approx((0.5 * 2 + 1) / 3, abs=1e-6)  # 0.6667
    assert change["decay_rate_after"] == change["decay_rate_before"]
    [worse] = misled["blocks"]
    assert worse["confidence_after"] == pytest.approx((0.5 * 2 + 1) / 4, abs=1e-6)  # 0.5
    assert worse["decay_rate_after"] == pytest.approx(2 * worse["decay_rate_before"])  # signal < 0.2
    detail = ledger.memory_block(block_id)
    assert detail.block.reinforcements == 1 and detail.block.outcomes == 2
    assert [e.type for e in detail.history] == [
        "MemoryRemembered",
        "MemoryRecalled",
        "MemoryOutcomeRecorded",
        "MemoryOutcomeRecorded",
    ]
    assert detail.history[2].detail["note"] == "the key location was right"


@pytest.mark.anyio
async def test_memory_remember_with_category_observation_is_ephemeral(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    async with connected(ledger) as client:
        stored = await call(client, "memory_remember", {"content": "The build was green.", "category": "observation"})
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert ledger.memory_block(stored["block_id"]).block.tier == "ephemeral"
    assert "observation" in tools["memory_remember"].input_schema["properties"]["category"]["description"]
    assert tools["memory_recall"].input_schema["properties"]["frame"]["enum"] == ["self", "attention", "task"]
    assert {"memory_recall", "memory_curate", "memory_outcome"} <= set(tools)


@pytest.mark.anyio
async def test_memory_curate_reports_its_counts(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    async with connected(ledger) as client:
        await call(client, "memory_setup")
        result = await call(client, "memory_curate")
    assert result["trigger"] == "manual"
    assert (result["archived"], result["edges_pruned"]) == (0, 0)
    assert result["constitutional_reinforced"] == 10 and result["reinforced"] == 5
    assert len(result["reinforced_ids"]) == 5 and result["archived_ids"] == []
    assert ledger.memory_stats().curates == 1


@pytest.mark.anyio
async def test_memory_curate_archives_what_decayed_over_active_hours(make_ledger: LedgerFactory) -> None:
    ledger, faded, kept = aged(make_ledger, WHO)
    async with connected(ledger) as client:
        result = await call(client, "memory_curate")
        recalled = await call(client, "memory_recall", {"frame": "attention", "top_k": 50})
    assert result["archived_ids"] == [faded] and result["active_hours"] == pytest.approx(100.0)
    shown = {b["block_id"] for b in recalled["blocks"]}
    assert kept in shown and faded not in shown
    assert ledger.memory_stats().archived == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "args", "says"),
    [
        ("memory_recall", {"frame": "nope"}, "'self', 'attention' or 'task'"),
        ("memory_recall", {"top_k": 0}, "send a top_k from 1 to 50"),
        ("memory_recall", {"query": "   "}, "send what you are looking for"),
        ("memory_recall", {"top_k": 5, "limit": 3}, "limit"),
        ("memory_outcome", {"block_ids": ["blk_0"], "signal": 1.5}, "send 1.0 when the memories helped"),
        ("memory_outcome", {"block_ids": [], "signal": 1.0}, "send the ids of the blocks"),
        ("memory_outcome", {"block_ids": ["blk_000000000000000000000000"], "signal": 1.0}, "send ids returned by"),
        ("memory_remember", {"content": "x", "category": "Two words"}, "send one lower-case word"),
        ("memory_curate", {"force": True}, "force"),
    ],
)
async def test_bad_input_is_a_tool_error_that_says_what_to_send_and_records_nothing(
    make_ledger: LedgerFactory, name: str, args: dict[str, Any], says: str
) -> None:
    ledger = make_ledger()
    async with connected(ledger) as client:
        await call(client, "memory_remember", {"content": MEMORIES[0]})
        head = ledger.store.head()
        result = await client.call_tool(name, args)
        after = ledger.store.head()
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert says in text, text
    assert after == head


# --- HTTP --------------------------------------------------------------------------------------------------------


def test_rest_recall_lists_shows_and_curates_blocks(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> None:
    ledger = make_ledger(db_url)
    ledger.setup_memory(Actor("local", "rest"))
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        stored = http.post(
            "/memory/blocks", json={"content": MEMORIES[0], "session_id": sid, "category": "observation"}
        )
        block_id = stored.json()["block_id"]
        recall = http.post("/memory/recall", json={"query": "ledger database", "session_id": sid})
        stamp = http.post("/compliance/assert", json={"session_id": sid}).json()
        no_session = http.post("/memory/recall", json={"frame": "self", "top_k": 10})
        permanent = http.get("/memory/blocks", params={"tier": "permanent"}).json()
        archived = http.get("/memory/blocks", params={"archived": "true"}).json()
        everything = http.get("/memory/blocks", params={"archived": "any", "limit": 2}).json()
        tagged = http.get("/memory/blocks", params={"tag": "self/constitutional"}).json()
        outcome = http.post("/memory/outcome", json={"block_ids": [block_id], "signal": 1.0, "session_id": sid})
        detail = http.get(f"/memory/blocks/{block_id}").json()
        before = http.get(f"/memory/blocks/{block_id}", params={"position": recall.json()["position"] - 1}).json()
        curate = http.post("/memory/curate")
        spec = http.get("/openapi.json").json()
    assert stored.status_code == 201
    assert recall.status_code == 200 and [b["block_id"] for b in recall.json()["blocks"]] == [block_id]
    assert recall.json()["token_expires_at"] is not None and stamp["status"] == "PASS"
    assert no_session.status_code == 200 and no_session.json()["session_id"] is None
    assert no_session.json()["token_expires_at"] is None
    assert no_session.json()["text"].startswith("## Identity")
    assert permanent["count"] == 10 and sorted(b["block_id"] for b in permanent["blocks"]) == CONSTITUTIONAL_IDS
    assert all({"score", "confidence", "tier", "decay_rate"} <= set(b) for b in permanent["blocks"])
    assert archived["count"] == 0 and archived["blocks"] == []
    assert everything["count"] == 11 and len(everything["blocks"]) == 2
    assert tagged["count"] == 10
    assert outcome.status_code == 200 and outcome.json()["blocks"][0]["confidence_after"] == pytest.approx(2 / 3)
    assert detail["block"]["tier"] == "ephemeral" and detail["block"]["confidence"] == pytest.approx(2 / 3)
    assert [e["type"] for e in detail["history"]] == ["MemoryRemembered", "MemoryRecalled", "MemoryOutcomeRecorded"]
    assert "content" not in detail["history"][0]["detail"]
    assert before["block"]["reinforcements"] == 0 and [e["type"] for e in before["history"]] == ["MemoryRemembered"]
    assert curate.status_code == 200 and curate.json()["constitutional_reinforced"] == 10
    for path in ("/memory/recall", "/memory/curate", "/memory/outcome", "/memory/blocks/{block_id}"):
        assert path in spec["paths"]
    assert "get" in spec["paths"]["/memory/blocks"] and "post" in spec["paths"]["/memory/blocks"]


def test_rest_lists_archived_blocks_after_curate_and_as_of_before_it(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger, faded, kept = aged(make_ledger, WHO)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        live_before = http.get("/memory/blocks").json()
        curated = http.post("/memory/curate").json()
        archived = http.get("/memory/blocks", params={"archived": "true"}).json()
        then = http.get("/memory/blocks", params={"archived": "true", "position": curated["position"] - 1}).json()
        live = http.get("/memory/blocks", params={"tag": "project/"}).json()
        ephemeral = http.get("/memory/blocks", params={"tier": "ephemeral", "archived": "any"}).json()
        detail = http.get(f"/memory/blocks/{faded}").json()
    assert live_before["count"] == 12 and live_before["active_hours"] == pytest.approx(100.0)
    assert curated["archived_ids"] == [faded]
    assert [b["block_id"] for b in archived["blocks"]] == [faded] and archived["blocks"][0]["archived_at"]
    assert then["count"] == 0
    assert [b["block_id"] for b in live["blocks"]] == [kept]
    assert [b["block_id"] for b in ephemeral["blocks"]] == [faded]
    assert detail["block"]["archived_at"] is not None
    assert [e["type"] for e in detail["history"]] == ["MemoryRemembered", "MemoryCurated"]


def test_rest_memory_errors_use_the_error_body(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    ledger.setup_memory(Actor("local", "rest"))
    head = ledger.store.head()
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        unknown = http.get("/memory/blocks/blk_000000000000000000000000")
        bad_frame = http.post("/memory/recall", json={"frame": "nope"})
        bad_top_k = http.post("/memory/recall", json={"top_k": 0})
        extra = http.post("/memory/recall", json={"frame": "self", "limit": 3})
        bad_signal = http.post("/memory/outcome", json={"block_ids": [CONSTITUTIONAL_IDS[0]], "signal": 1.5})
        gone = http.post("/memory/outcome", json={"block_ids": ["blk_000000000000000000000000"], "signal": 0.5})
        bad_tier = http.get("/memory/blocks", params={"tier": "forever"})
        bad_archived = http.get("/memory/blocks", params={"archived": "maybe"})
        both = http.get("/memory/blocks", params={"position": 1, "as_of": "2026-01-01T00:00:00Z"})
        bad_category = http.post("/memory/blocks", json={"content": "fine", "category": "two words"})
    assert ledger.store.head() == head
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    assert bad_frame.status_code == 422
    assert bad_frame.json()["error"]["code"] == "invalid_request"
    assert "'self', 'attention' or 'task'" in bad_frame.json()["error"]["message"]
    assert bad_top_k.status_code == 422 and "top_k" in bad_top_k.json()["error"]["hint"]
    assert extra.status_code == 422 and "unknown field 'limit'" in extra.json()["error"]["message"]
    assert bad_signal.status_code == 422 and bad_signal.json()["error"]["code"] == "invalid_input"
    assert gone.status_code == 404
    assert bad_tier.status_code == 422 and "permanent" in bad_tier.json()["error"]["hint"]
    assert bad_archived.status_code == 422 and "any" in bad_archived.json()["error"]["hint"]
    assert both.status_code == 422 and both.json()["error"]["hint"]
    assert bad_category.status_code == 422 and "lower-case word" in bad_category.json()["error"]["hint"]
    for response in (unknown, bad_frame, bad_top_k, extra, bad_signal, gone, bad_tier, bad_archived, both):
        assert set(response.json()["error"]) == {"code", "message", "hint"}


def test_mcp_over_http_recall_needs_no_session_and_issues_no_token(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        tool(
            http,
            base,
            "memory_setup",
            {"session_id": tool(http, base, "clock_in", {"role": "dev"})["structuredContent"]["session_id"]},
        )
        recalled = tool(http, base, "memory_recall", {"query": "curiosity", "frame": "self"})
        curated = tool(http, base, "memory_curate", {})
    assert recalled["isError"] is False
    assert recalled["structuredContent"]["session_id"] is None
    assert recalled["structuredContent"]["token_expires_at"] is None
    assert recalled["structuredContent"]["blocks"]
    assert curated["structuredContent"]["trigger"] == "manual"


@pytest.mark.anyio
async def test_mcp_supersede_points_recall_at_the_new_block_and_an_agent_may_not_forget(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger()
    async with connected(ledger) as client:
        old = (await call(client, "memory_remember", {"content": MEMORIES[0], "tags": ["project/db"]}))["block_id"]
        new_text = "The ledger database runs SQLite in WAL mode with synchronous NORMAL since June."
        replaced = await call(client, "memory_supersede", {"block_id": old, "content": new_text})
        recalled = await call(client, "memory_recall", {"query": "ledger database SQLite"})
        refused = await client.call_tool("memory_forget", {"block_id": old, "reason": "outdated"})
    assert replaced["block_id"] == old and replaced["tags"] == ["project/db"]
    assert [b["block_id"] for b in recalled["blocks"]] == [replaced["new_block_id"]]
    assert refused.is_error and "administrator" in refused.content[0].text  # type: ignore[union-attr]
    assert ledger.memory_block(old).block.superseded_by == replaced["new_block_id"]


def test_rest_supersedes_and_forgets_a_block(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base) as http:
        old = http.post("/memory/blocks", json={"content": MEMORIES[1]}).json()["block_id"]
        replaced = http.post(f"/memory/blocks/{old}/supersede", json={"content": MEMORIES[1] + " It rotates yearly."})
        new = replaced.json()["new_block_id"]
        forgotten = http.post(f"/memory/blocks/{new}/forget", json={"reason": "wrong: keys never rotate"})
        gone = http.get(f"/memory/blocks/{new}")
        empty = http.post(f"/memory/blocks/{old}/forget", json={"reason": ""})
    assert replaced.status_code == 200 and forgotten.status_code == 200
    assert forgotten.json() == {
        "block_id": new,
        "reason": "wrong: keys never rotate",
        "position": ledger.store.head()[0],
    }
    assert gone.status_code == 404 and empty.status_code == 422
