"""The HTTP front end on a real uvicorn server on loopback: REST, plain JSON-RPC MCP, SDK MCP, API keys."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from api.settings import Settings
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.server_support import HTTP_TIMEOUT, running


@pytest.fixture
def serve(tmp_path: Path) -> Callable[..., Any]:
    def start(ledger: Ledger, **overrides: Any) -> Any:
        return running(ledger, Settings(home=tmp_path, **overrides))

    return start


def rpc(
    client: httpx.Client,
    base: str,
    method: str,
    params: dict[str, Any],
    *,
    id: int = 1,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    response = client.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": id, "method": method, "params": params},
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def tool(client: httpx.Client, base: str, name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return rpc(client, base, "tools/call", {"name": name, "arguments": args}, **kw)["result"]


def test_plain_json_rpc_posts_work_as_in_the_seed_ac_b_checks(
    make_ledger: LedgerFactory, db_url: str, serve: Any
) -> None:
    with serve(make_ledger(db_url)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        init = rpc(
            http,
            base,
            "initialize",
            {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1.0"},
            },
        )
        assert "tools" in init["result"]["capabilities"]
        listed = rpc(http, base, "tools/list", {}, id=2)["result"]["tools"]
        assert {
            "clock_in",
            "clock_out",
            "memory_remember",
            "memory_search",
            "assert_compliance",
            "verify_stamp",
        } <= {t["name"] for t in listed}
        session = tool(http, base, "clock_in", {"role": "dev"})["structuredContent"]
        sid = session["session_id"]
        stored = tool(
            http,
            base,
            "memory_remember",
            {
                "content": "Test contribution from MCP wrapper acceptance test — a declarative statement.",
                "session_id": sid,
            },
        )
        assert stored["structuredContent"]["status"] == "created"
        found = tool(http, base, "memory_search", {"query": "acceptance test", "session_id": sid})
        assert found["structuredContent"]["count"] == 1
        stamp = tool(http, base, "assert_compliance", {"session_id": sid})["structuredContent"]
    assert stamp["status"] == "PASS"
    assert stamp["stamp"] == "[COMPLIANCE] YES I HAVE SEARCHED, FOUND 1 RELEVANT MEMORIES, BROUGHT THEM TO AGENT."


def test_over_http_a_tool_without_session_id_says_to_clock_in(make_ledger: LedgerFactory, serve: Any) -> None:
    ledger = make_ledger()
    with serve(ledger) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        head = ledger.store.head()
        result = tool(http, base, "assert_compliance", {})
    assert result["isError"] is True
    assert "call clock_in first" in result["content"][0]["text"]
    assert ledger.store.head() == head


@pytest.mark.anyio
async def test_an_sdk_client_earns_a_stamp_over_streamable_http(make_ledger: LedgerFactory, serve: Any) -> None:
    with serve(make_ledger()) as base:
        async with Client(f"{base}/mcp") as client:
            sid = (await client.call_tool("clock_in", {"role": "qa"})).structured_content["session_id"]  # type: ignore[index]
            refused = (await client.call_tool("assert_compliance", {"session_id": sid})).structured_content
            await client.call_tool("memory_search", {"query": "anything", "session_id": sid})
            passed = (await client.call_tool("assert_compliance", {"session_id": sid})).structured_content
    assert refused is not None and refused["status"] == "FAIL"
    assert passed is not None and passed["status"] == "PASS"


def test_rest_flow_from_clock_in_to_a_verified_stamp(make_ledger: LedgerFactory, db_url: str, serve: Any) -> None:
    with serve(make_ledger(db_url)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        assert http.get("/health").json()["status"] == "ok"
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        assert http.post("/memory/blocks", json={"content": "Use BM25 ranking", "session_id": sid}).status_code == 201
        dup = http.post("/memory/blocks", json={"content": "use  bm25 RANKING", "session_id": sid})
        assert (dup.status_code, dup.json()["status"]) == (200, "duplicate_rejected")
        assert http.post("/memory/search", json={"query": "ranking", "session_id": sid}).json()["count"] == 1
        stamp = http.post("/compliance/assert", json={"session_id": sid}).json()
        verdict = http.post("/stamps/verify", json={"receipt": stamp["receipt"]}).json()
        state = http.get(f"/sessions/{sid}").json()
        report = http.get("/reports/compliance").json()
        page = http.get("/events", params={"stream": f"session:{sid}", "limit": 2}).json()
        rest = http.get("/events", params={"stream": f"session:{sid}", "after": page["next_after"]}).json()
        spec = http.get("/openapi.json").json()
    assert stamp["status"] == "PASS" and verdict["valid"] is True
    assert state["token"]["status"] == "consumed"
    [row] = report["agents"]
    assert {k: row[k] for k in ("agent", "searches", "stamp_requests", "passes", "fails", "pass_rate")} == {
        "agent": "local",
        "searches": 1,
        "stamp_requests": 1,
        "passes": 1,
        "fails": 0,
        "pass_rate": 1.0,
    }
    assert [e["type"] for e in page["events"] + rest["events"]] == [
        "SessionStarted",
        "MemorySearched",
        "ComplianceStamped",
    ]
    assert rest["next_after"] is None
    assert "/compliance/assert" in spec["paths"]


def test_reports_accept_as_of_and_position(make_ledger: LedgerFactory, serve: Any) -> None:
    ledger = make_ledger()
    who = Actor("local", "rest")
    sid = ledger.clock_in(who, "dev").session_id
    ledger.search(who, sid, "x")
    before = ledger.store.head()[0]
    ledger.assert_compliance(who, sid)
    with serve(ledger) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        then = http.get("/reports/compliance", params={"position": before}).json()
        now = http.get("/reports/compliance").json()
        token_then = http.get(f"/sessions/{sid}", params={"position": before}).json()["token"]["status"]
        both = http.get("/reports/compliance", params={"position": 1, "as_of": "2026-01-01T00:00:00Z"})
    assert then["agents"][0]["passes"] == 0 and now["agents"][0]["passes"] == 1
    assert token_then == "valid"
    assert both.status_code == 422 and both.json()["error"]["hint"]


def test_with_api_keys_every_call_needs_one_and_the_agent_comes_from_it(make_ledger: LedgerFactory, serve: Any) -> None:
    ledger = make_ledger()
    alice = ledger.issue_api_key(Actor("admin", admin=True), "alice").api_key
    bob = ledger.issue_api_key(Actor("admin", admin=True), "bob").api_key
    with serve(ledger) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        missing = http.post("/sessions", json={"role": "dev"})
        wrong = http.post("/sessions", json={"role": "dev"}, headers={"Authorization": "Bearer clk_nope"})
        session = http.post("/sessions", json={"role": "dev"}, headers={"Authorization": f"Bearer {alice}"}).json()
        head = ledger.store.head()
        foreign = http.post(
            "/compliance/assert", json={"session_id": session["session_id"]}, headers={"X-API-Key": bob}
        )
        foreign_mcp = tool(
            http,
            base,
            "assert_compliance",
            {"session_id": session["session_id"]},
            headers={"Authorization": f"Bearer {bob}"},
        )
        unkeyed_mcp = http.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        health = http.get("/health")
    assert missing.status_code == 401 and "keys add" in missing.json()["error"]["hint"]
    assert wrong.status_code == 401
    assert session["agent"] == "alice"
    assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "forbidden"
    assert foreign_mcp["isError"] is True and "another agent" in foreign_mcp["content"][0]["text"]
    assert unkeyed_mcp.status_code == 401
    assert health.status_code == 200
    assert ledger.store.head() == head


def test_dns_rebinding_protection_rejects_a_foreign_host_header(make_ledger: LedgerFactory, serve: Any) -> None:
    with serve(make_ledger()) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        response = http.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Host": "evil.example:80"},
        )
    assert response.status_code == 421


def test_with_the_store_unreachable_health_is_503_and_the_gate_stays_closed(
    make_ledger: LedgerFactory, tmp_path: Path, serve: Any
) -> None:
    from api.bootstrap import open_ledger

    make_ledger()  # creates the key
    down = open_ledger(Settings(home=tmp_path, database_url="postgresql://postgres@127.0.0.1:1/test"))
    with serve(down) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        health = http.get("/health")
        gate = http.post("/compliance/assert", json={"session_id": "ses_" + "0" * 20})
        mcp = tool(http, base, "assert_compliance", {"session_id": "ses_" + "0" * 20})
    assert health.status_code == 503 and health.json()["status"] == "unavailable"
    assert gate.status_code == 503 and gate.json()["error"]["code"] == "store_unavailable"
    assert mcp["isError"] is True and mcp["content"][0]["text"].startswith(
        "Error executing tool assert_compliance: ⛔ GATE CLOSED. The ledger store is unreachable"
    )
