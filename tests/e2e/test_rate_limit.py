"""The per-key rate limit on real front ends: a 429 with ``Retry-After`` over REST, a tool error that says when to
retry over MCP (HTTP, in memory and stdio), one budget per API key (or agent) across both, and off at 0.

Windows are long (an hour) where time must not move, and time moves only through freezegun where it must."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import httpx
import pytest
from freezegun import freeze_time
from mcp import Client

from api.mcp.server import build_mcp
from api.ratelimit import RateLimiter
from api.rest.app import build_app
from api.settings import Settings
from ledger.service import Actor
from tests.conftest import LedgerFactory
from tests.e2e.test_http import running, tool
from tests.e2e.test_logs import run_stdio

OPERATOR = Actor("operator", "cli", admin=True)
HOUR = 3600.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_rest_answers_429_with_retry_after_past_the_limit_and_each_key_has_its_own_budget(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    alice = {"Authorization": f"Bearer {ledger.issue_api_key(OPERATOR, 'alice').api_key}"}
    bob = {"X-API-Key": ledger.issue_api_key(OPERATOR, "bob").api_key}
    settings = Settings(home=tmp_path, rate_limit=2, rate_limit_window_seconds=HOUR)
    with running(ledger, settings) as base, httpx.Client(base_url=base) as http:
        statuses = [http.get("/reports/compliance", headers=alice).status_code for _ in range(2)]
        refused = http.get("/reports/compliance", headers=alice)
        bobs = http.get("/reports/compliance", headers=bob)
        health = [http.get("/health").status_code for _ in range(4)]
        docs = http.get("/openapi.json").json()
    assert statuses == [200, 200] and bobs.status_code == 200 and health == [200] * 4
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "1800"  # one request's share of the hour
    error = refused.json()["error"]
    assert error["code"] == "rate_limited" and "2 requests per 3600 s" in error["message"]
    assert error["hint"] == "retry after 1800 s"
    assert "429" in docs["paths"]["/reports/compliance"]["get"]["responses"]
    assert "429" not in docs["paths"]["/health"]["get"]["responses"]


def test_mcp_over_http_answers_a_tool_error_past_the_limit_on_the_same_budget_as_rest(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    settings = Settings(home=tmp_path, rate_limit=3, rate_limit_window_seconds=HOUR)
    with running(ledger, settings) as base, httpx.Client() as http:
        sid = http.post(f"{base}/sessions", json={"role": "dev"}).json()["session_id"]  # 1 of 3, REST
        listed = http.post(  # not a tool call: not counted
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Content-Type": "application/json"},
        )
        searched = tool(http, base, "memory_search", {"session_id": sid, "query": "release"})  # 2 of 3
        again = tool(http, base, "memory_search", {"session_id": sid, "query": "release"}, id=2)  # 3 of 3
        refused = tool(http, base, "memory_search", {"session_id": sid, "query": "release"}, id=3)
        rest_refused = http.get(f"{base}/sessions/{sid}")
    assert listed.status_code == 200 and not searched["isError"] and not again["isError"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"].endswith("retry after 1200 s")
    assert rest_refused.status_code == 429


@pytest.mark.anyio
async def test_an_in_memory_server_refuses_a_tool_call_past_the_limit_until_the_clock_moves(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger()
    with freeze_time("2026-01-05T09:00:00Z", real_asyncio=True) as clock:
        server = build_mcp(ledger, agent="alice", open_default_session=True, limiter=RateLimiter(2, 60))
        async with Client(server) as client:
            results = [await client.call_tool("memory_search", {"query": "release"}) for _ in range(3)]
            clock.tick(_dt.timedelta(seconds=29))
            still = await client.call_tool("memory_search", {"query": "release"})
            clock.tick(_dt.timedelta(seconds=1))
            after = await client.call_tool("memory_search", {"query": "release"})
    assert [r.is_error for r in results] == [False, False, True]
    text: Any = results[2].content[0]
    assert "at most 2 requests per 60 s" in text.text and text.text.endswith("retry after 30 s")
    assert still.is_error is True and still.content[0].text.endswith("retry after 1 s")  # type: ignore[union-attr]
    assert after.is_error is False


def test_the_stdio_server_takes_its_limit_from_the_settings(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    url = str(make_ledger().store.engine.url)
    answers, err = run_stdio(tmp_path, url, LEDGER_RATE_LIMIT="1", LEDGER_RATE_LIMIT_WINDOW_SECONDS="3600")
    second = answers[2]["result"]
    assert answers[1]["result"]["isError"] is False
    assert second["isError"] is True and second["content"][0]["text"].endswith("retry after 3600 s")
    assert "outcome=rate_limited" in err


def test_a_limit_of_zero_turns_the_limit_off(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    ledger = make_ledger()
    seen: dict[int, tuple[list[int], bool]] = {}
    for limit in (1, 0):
        app = build_app(ledger, Settings(home=tmp_path, rate_limit=limit))
        with TestClient(app, base_url="http://127.0.0.1") as http:
            statuses = [http.get("/reports/compliance").status_code for _ in range(3)]
            documented = "429" in http.get("/openapi.json").json()["paths"]["/reports/compliance"]["get"]["responses"]
        seen[limit] = (statuses, documented)
    assert seen == {1: ([200, 429, 429], True), 0: ([200, 200, 200], False)}
