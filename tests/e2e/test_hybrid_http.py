"""Hybrid search over HTTP: REST and MCP show both scores; /health says what search ranks by; the similarity
floor leaves a nonsense query nothing, so the stamp says ZERO."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from api.settings import Settings
from ledger.sessions.gate import STAMP_FOUND, STAMP_ZERO
from tests.conftest import LedgerFactory
from tests.server_support import HTTP_TIMEOUT, running


def test_rest_and_mcp_search_show_bm25_and_cosine_and_health_names_the_retrieval(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    hybrid = make_ledger(f"sqlite:///{tmp_path / 'hybrid.db'}", semantic=True)
    plain = make_ledger(f"sqlite:///{tmp_path / 'plain.db'}", semantic=False)
    with running(hybrid, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        health = http.get("/health").json()
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        http.post(
            "/memory/blocks", json={"content": "Sleep eight hours; recovery happens at night.", "session_id": sid}
        )
        rest = http.post("/memory/search", json={"query": "rest after hard workouts", "session_id": sid}).json()
        call = {"name": "memory_search", "arguments": {"query": "recovery at night", "session_id": sid}}
        mcp = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
            headers={"Accept": "application/json, text/event-stream"},
        ).json()["result"]["structuredContent"]
    with running(plain, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        plain_health = http.get("/health").json()
    assert health["search"] == "hybrid: BM25 + all-MiniLM-L6-v2-onnx-int8 embeddings"
    assert plain_health["search"] == "BM25 alone: turned off by LEDGER_SEMANTIC=false"
    [found] = rest["results"]
    assert found["bm25"] is None and found["cosine"] > 0.3  # a paraphrase: only the embeddings found it
    assert mcp["results"][0]["bm25"] > 0 and mcp["results"][0]["cosine"] > 0.3


def test_over_mcp_nonsense_finds_nothing_and_the_stamp_says_zero_and_a_real_search_counts_its_hits(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    """Issue 23 through the served MCP endpoint: the stamp's count is what memory_search returned."""
    hybrid = make_ledger(f"sqlite:///{tmp_path / 'hybrid.db'}", semantic=True)
    blocks = [
        "Sleep eight hours; recovery happens at night.",
        "Size every position so that one loss cannot sink the account.",
        "Squash merge feature branches so the main history stays readable.",
        "Run the database migrations before deploying the new version.",
    ]

    def tool(http: httpx.Client, name: str, arguments: dict[str, object]) -> dict[str, Any]:
        call = {"name": name, "arguments": arguments}
        answer = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
            headers={"Accept": "application/json, text/event-stream"},
        ).json()["result"]
        assert not answer.get("isError"), answer
        return dict(answer["structuredContent"])

    with running(hybrid, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        for text in blocks:
            assert http.post("/memory/blocks", json={"content": text, "session_id": sid}).status_code == 201
        nonsense = tool(http, "memory_search", {"query": "xylophone quantum banana", "session_id": sid})
        zero = tool(http, "assert_compliance", {"session_id": sid})
        real = tool(http, "memory_search", {"query": "how much rest after hard workouts", "session_id": sid})
        found = tool(http, "assert_compliance", {"session_id": sid})
    assert (nonsense["results"], nonsense["count"]) == ([], 0)
    assert (zero["status"], zero["stamp"]) == ("PASS", STAMP_ZERO)
    assert real["results"][0]["content"].startswith("Sleep eight hours") and real["count"] == len(real["results"])
    assert (found["status"], found["stamp"]) == ("PASS", STAMP_FOUND.format(n=real["count"]))
