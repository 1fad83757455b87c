"""The official TypeScript MCP clients against the ledger, each run by tests/node/mcp_client.mjs: the v1 SDK
(``@modelcontextprotocol/sdk``, protocol 2025-11-25) and the v2 client (``@modelcontextprotocol/client``, in its
default legacy mode and negotiating 2026-07-28), over Streamable HTTP to ``compliance-ledger serve`` on loopback and
over stdio to ``compliance-ledger mcp``; and the same clients in a page on another origin, through the CORS
protocol a browser runs (a preflight before every request that is not "simple", only exposed headers visible)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.bootstrap import initialise
from api.settings import Settings
from ledger.core.events import ComplianceStamped, MemorySearched
from ledger.service import Ledger
from tests.conftest import LedgerFactory
from tests.e2e.test_brain import compliance_ledger_serve
from tests.node_support import NodeKit, node_kit

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = {"v1": "2025-11-25", "v2": "2025-11-25", "v2-auto": "2026-07-28"}
PAGE = "https://app.example"


@pytest.fixture(scope="module")
def kit() -> NodeKit:
    return node_kit()


@pytest.fixture(scope="module")
def served(kit: NodeKit, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Ledger]]:
    """One `compliance-ledger serve` for the HTTP tests, with CORS allowed for PAGE, and the ledger it writes."""
    home = tmp_path_factory.mktemp("served")
    url = f"sqlite:///{home / 'ledger.db'}"
    ledger, _ = initialise(Settings(home=home, database_url=url))
    try:
        with compliance_ledger_serve(home, url, LEDGER_CORS_ORIGINS=json.dumps([PAGE])) as base:
            yield f"{base}/mcp", ledger
    finally:
        ledger.store.dispose()


def run_client(kit: NodeKit, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the client script; return the JSON line it prints (it prints one even when the client failed)."""
    done = subprocess.run(
        [kit.node, str(kit.script("mcp_client.mjs")), *args],
        cwd=ROOT,  # the stdio server the client starts runs `-m api` from the checkout under test
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def assert_the_flow_worked(seen: dict[str, Any]) -> None:
    assert "error" not in seen, seen.get("error")
    assert seen["server"]["name"] == "compliance-ledger"
    assert {"clock_in", "memory_search", "assert_compliance"} <= set(seen["tools"])
    assert {"compliance_grounding", "memory_guide"} <= set(seen["prompts"])
    assert seen["search"] == {"isError": False, "count": 0}
    assert seen["stamp"]["status"] == "PASS" and seen["stamp"]["stamp"].startswith("[COMPLIANCE] YES I HAVE SEARCHED")
    # the JSON-RPC codes the specification names, as the client sees them
    assert seen["unknownPrompt"]["code"] == -32602 and "compliance_grounding" in seen["unknownPrompt"]["message"]
    assert seen["unknownTool"]["code"] == -32602 and "no_such_tool" in seen["unknownTool"]["message"]
    assert seen["badArgument"]["answered"] is True and seen["badArgument"]["isError"] is True  # a tool error


@pytest.mark.parametrize("sdk", list(CLIENTS))
def test_an_official_typescript_client_earns_a_stamp_over_http(
    kit: NodeKit, served: tuple[str, Ledger], sdk: str
) -> None:
    mcp_url, ledger = served
    seen = run_client(kit, sdk, "http", mcp_url)
    assert_the_flow_worked(seen)
    assert seen["protocolVersion"] == CLIENTS[sdk]
    sid = seen["clockIn"]["session_id"]
    assert seen["clockIn"]["role"] == "ts-sdk" and seen["stamp"]["session_id"] == sid
    types = [MemorySearched.type_name, ComplianceStamped.type_name]
    recorded = {(type(r.event), r.agent) for r in ledger.store.iter_events(types=types) if r.event.session_id == sid}
    assert recorded == {(MemorySearched, "local"), (ComplianceStamped, "local")}


@pytest.mark.parametrize("sdk", list(CLIENTS))
def test_an_official_typescript_client_earns_a_stamp_over_stdio(
    kit: NodeKit, make_ledger: LedgerFactory, sqlite_url: str, tmp_path: Path, sdk: str
) -> None:
    ledger = make_ledger(sqlite_url)
    env = {"LEDGER_HOME": str(tmp_path), "LEDGER_DATABASE_URL": sqlite_url}
    seen = run_client(kit, sdk, "stdio", sys.executable, "-m", "api", "mcp", "--agent", f"ts-{sdk}", env=env)
    assert_the_flow_worked(seen)
    if sdk != "v1":  # the v1 client does not say what it negotiated over stdio
        assert seen["protocolVersion"] == CLIENTS[sdk]
    stamps = [r for r in ledger.store.iter_events(types=[ComplianceStamped.type_name]) if r.agent == f"ts-{sdk}"]
    assert [r.event.session_id for r in stamps] == [seen["stamp"]["session_id"]]


@pytest.mark.parametrize("sdk", list(CLIENTS))
def test_a_page_on_an_allowed_origin_runs_the_typescript_client_through_cors(
    kit: NodeKit, served: tuple[str, Ledger], sdk: str
) -> None:
    seen = run_client(kit, sdk, "--origin", PAGE, "http", served[0])
    assert_the_flow_worked(seen)
    cors = seen["cors"]
    assert cors["refused"] is None and len(cors["preflights"]) == len(cors["requests"]) >= 6
    assert all(p["status"] == 204 and p["allowOrigin"] == PAGE for p in cors["preflights"])
    sent = {header for request in cors["requests"] for header in request["headers"]}
    assert "mcp-protocol-version" in sent  # every request after initialize: what the old CORS refused
    if sdk == "v2-auto":
        assert {"mcp-method", "mcp-name"} <= sent  # SEP-2243 routing headers


def test_a_page_on_another_origin_is_refused_at_its_first_preflight(kit: NodeKit, served: tuple[str, Ledger]) -> None:
    seen = run_client(kit, "v1", "--origin", "https://elsewhere.example", "http", served[0])
    assert "CORS: preflight of POST answered 400" in seen["error"]
    assert len(seen["cors"]["preflights"]) == 1 and "tools" not in seen
