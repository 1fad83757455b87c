"""OpenTelemetry (the ``[otel]`` extra): a span per tool call and per HTTP request, in the caller's trace when it
sends a ``traceparent`` (an HTTP header, or ``_meta`` of the MCP request), carrying the request id, agent and
outcome — recorded with the SDK's in-memory exporter in a process of its own (the tracer provider is global).
Without ``LEDGER_OTEL_EXPORTER`` nothing loads the SDK: not ``--help``, not ``serve``'s start-up."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LedgerFactory
from tests.e2e.test_logs import ROOT, run_stdio

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed: pip install -e '.[otel]'")

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
META_TRACE = "0af7651916cd43dd8448eb211c80319c"

SPANS = f"""
import asyncio, json, sys
from pathlib import Path
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.testclient import TestClient
from api import tracing
from api.bootstrap import open_ledger
from api.mcp.server import build_mcp
from api.rest.app import build_app
from api.settings import Settings

exporter = InMemorySpanExporter()
tracing.install(exporter, batch=False)
home = Path(sys.argv[1])
settings = Settings(home=home, database_url=f"sqlite:///{{home / 'ledger.db'}}")
ledger = open_ledger(settings)
mcp_headers = {{"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}}
with TestClient(build_app(ledger, settings), base_url="http://127.0.0.1") as http:
    http.post("/mcp", headers={{**mcp_headers, "X-Request-ID": "traced-1",
              "traceparent": "00-{TRACE}-00f067aa0ba902b7-01"}}, json={{"jsonrpc": "2.0", "id": 7,
              "method": "tools/call", "params": {{"name": "clock_in", "arguments": {{"role": "dev"}}}}}})
    http.post("/sessions", json={{"role": "dev"}}, headers={{"traceparent": "00-{TRACE}-00f067aa0ba902b8-01"}})
    http.post("/mcp", headers=mcp_headers, json={{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {{
              "name": "clock_in", "arguments": {{"role": "dev"}},
              "_meta": {{"traceparent": "00-{META_TRACE}-b7ad6b7169203331-01"}}}}}})

async def in_memory():
    with trace.get_tracer("test").start_as_current_span("the agent's turn"):
        async with Client(build_mcp(ledger, agent="alice", open_default_session=True)) as client:
            await client.call_tool("memory_search", {{"query": "release"}})

asyncio.run(in_memory())
ledger.store.dispose()
print(json.dumps([{{
    "name": s.name,
    "trace": format(s.context.trace_id, "032x"),
    "id": format(s.context.span_id, "016x"),
    "parent": format(s.parent.span_id, "016x") if s.parent else None,
    "attributes": {{k: v if isinstance(v, (str, int, float, bool)) else str(v) for k, v in s.attributes.items()}},
}} for s in exporter.get_finished_spans()]))
"""

MODULES = """
import json, sys
from pathlib import Path
from starlette.testclient import TestClient
from api.cli import main
home = Path(sys.argv[1])
try:
    sys.argv = ["compliance-ledger", "--help"]
    main()
except SystemExit:
    pass
after_help = sorted(sys.modules)
from api import logs
from api.bootstrap import open_ledger
from api.rest.app import build_app
from api.settings import Settings
settings = Settings(home=home, database_url=f"sqlite:///{home / 'ledger.db'}")
logs.configure(json_lines=True)
with TestClient(build_app(open_ledger(settings), settings), base_url="http://127.0.0.1") as http:
    http.get("/health")
    http.post("/sessions", json={"role": "dev"})
print(json.dumps({"help": after_help, "serve": sorted(sys.modules)}))
"""


def run_script(script: str, home: Path) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", script, str(home)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_each_tool_call_and_request_is_a_span_in_the_callers_trace(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    make_ledger()  # initialised on tmp_path/ledger.db
    spans = run_script(SPANS, tmp_path)
    by_id = {s["id"]: s for s in spans}
    tool_calls = [s for s in spans if s["name"] == "tools/call clock_in"]
    over_header = next(s for s in tool_calls if s["trace"] == TRACE)
    over_meta = next(s for s in tool_calls if s["trace"] == META_TRACE)
    http_span = by_id[over_header["parent"]]
    rest = next(s for s in spans if s["name"] == "POST /sessions")
    memory = next(s for s in spans if s["name"] == "tools/call memory_search")
    turn = next(s for s in spans if s["name"] == "the agent's turn")

    # HTTP: the request's span continues the caller's traceparent; the tool call's span is its child.
    assert http_span["parent"] == "00f067aa0ba902b7" and http_span["trace"] == TRACE
    assert http_span["attributes"]["compliance_ledger.request_id"] == "traced-1"
    assert over_header["attributes"] | {"compliance_ledger.request_id": "traced-1"} == over_header["attributes"]
    assert over_header["attributes"]["compliance_ledger.agent"] == "local"
    assert over_header["attributes"]["compliance_ledger.outcome"] == "ok"
    assert rest["trace"] == TRACE and rest["parent"] == "00f067aa0ba902b8"
    assert rest["attributes"]["compliance_ledger.agent"] == "local"
    # MCP _meta: the tool call's span joins the trace named there.
    assert over_meta["parent"] == "b7ad6b7169203331"
    # In memory: the client passes its current span along, and the server's span is in the same trace.
    assert memory["trace"] == turn["trace"] and memory["attributes"]["compliance_ledger.agent"] == "alice"


def test_without_an_exporter_neither_help_nor_serve_loads_the_sdk(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    make_ledger()
    loaded = run_script(MODULES, tmp_path)
    for phase in ("help", "serve"):
        ours = [m for m in loaded[phase] if m == "api.tracing" or m.startswith("opentelemetry.sdk")]
        assert ours == [], (phase, ours)


def test_the_stdio_server_writes_spans_to_stderr_never_stdout(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    url = str(make_ledger().store.engine.url)
    answers, err = run_stdio(tmp_path, url, LEDGER_OTEL_EXPORTER="console")  # every stdout line is JSON-RPC
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert '"name": "tools/call memory_search"' in err and '"compliance_ledger.agent": "alice"' in err


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


@pytest.mark.skipif(
    installed("opentelemetry.exporter.otlp.proto.http"),
    reason="the OTLP exporter is installed here, so there is no missing package to report",
)
def test_the_otlp_exporter_without_its_package_is_refused_with_what_to_install(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "api", "--home", str(tmp_path), "mcp", "--agent", "alice"],
        env={**os.environ, "PYTHONPATH": str(ROOT), "LEDGER_OTEL_EXPORTER": "otlp"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "opentelemetry-exporter-otlp-proto-http" in done.stderr
