"""Hybrid search over HTTP: REST and MCP show both scores; /health says what search ranks by."""

from __future__ import annotations

from pathlib import Path

import httpx

from api.settings import Settings
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
