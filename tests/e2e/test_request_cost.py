"""What one HTTP request asks of the database, on a real loopback server: no database call on the event loop, and
the caller's key checked against the log once per request (REST and MCP alike)."""

from __future__ import annotations

import asyncio
import traceback
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from api.settings import Settings
from ledger.service import API_KEYS_STREAM, Actor
from tests.conftest import LedgerFactory
from tests.e2e.test_http import tool
from tests.server_support import HTTP_TIMEOUT, running

OPERATOR = Actor("operator", "cli", admin=True)


def test_no_route_runs_a_database_call_on_the_event_loop(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    on_loop: list[str] = []

    def checkout(*_: Any) -> None:  # every pooled connection taken, by any code path
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a worker thread: no event loop runs here
        on_loop.append("".join(traceback.format_stack(limit=15)))

    for engine in (ledger.store.engine, ledger.store._probe_engine()):
        sa.event.listen(engine, "checkout", checkout)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        block = http.post("/memory/blocks", json={"content": "Migrations run before deploys.", "session_id": sid})
        answers = [
            block,
            http.post("/memory/search", json={"session_id": sid, "query": "migrations"}),
            http.post("/compliance/assert", json={"session_id": sid}),
            http.post("/memory/recall", json={"query": "deploys"}),
            http.get(f"/sessions/{sid}"),
            http.get("/memory/blocks"),
            http.get(f"/memory/blocks/{block.json()['block_id']}"),
            http.get("/events", params={"limit": 5}),
            http.get("/reports/compliance"),
            http.get("/reports/enforcement"),
            http.get("/metrics"),
            http.get("/health"),
            http.get("/admin/keys"),
            http.post("/tasks", json={"task_id": "t-1", "title": "A task"}),
            http.get("/tasks"),
            http.post("/api/v1/memory", json={"prompt": "What runs before deploys?"}),
            http.get("/api/v1/health"),
            http.get("/keys/public"),
        ]
        checkpoint = http.get("/checkpoints/latest")
        mcp = tool(http, base, "memory_search", {"session_id": sid, "query": "deploys"})
        closed = http.post(f"/sessions/{sid}/clock-out")
    assert [a.status_code for a in answers] == [201] + [200] * 12 + [201, 200, 200, 200, 200]
    assert not mcp.get("isError") and closed.status_code == 200 and checkpoint.status_code in (200, 404)
    assert on_loop == [], on_loop[0]


@pytest.mark.parametrize("path", ["/memory/search", "/compliance/assert", "mcp"])
def test_a_request_checks_its_key_against_the_log_once(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    ledger = make_ledger(db_url)
    alice = {"Authorization": f"Bearer {ledger.issue_api_key(OPERATOR, 'alice').api_key}"}
    reads: list[int] = []
    load_stream = ledger.store.load_stream

    def counted(stream: str, after_version: int = 0) -> Any:
        if stream == API_KEYS_STREAM:
            reads.append(after_version)
        return load_stream(stream, after_version)

    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}, headers=alice).json()["session_id"]
        http.post("/memory/search", json={"session_id": sid, "query": "warm"}, headers=alice)
        monkeypatch.setattr(ledger.store, "load_stream", counted)
        if path == "mcp":
            result = tool(http, base, "memory_search", {"session_id": sid, "query": "x"}, headers=alice)
            ok = not result.get("isError")
        else:
            body = {"session_id": sid, "query": "x"} if path == "/memory/search" else {"session_id": sid}
            ok = http.post(path, json=body, headers=alice).status_code == 200
    assert ok and len(reads) == 1
