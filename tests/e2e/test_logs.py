"""Structured logs from real processes: ``compliance-ledger serve`` writes one line per HTTP request and per MCP
tool call on stderr (key=value text, or JSON with ``--log-json``), and the stdio ``mcp`` server writes its lines
on stderr only — its stdout carries nothing but the protocol. No line holds an API key."""

from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import PIPE
from typing import Any

import httpx

from ledger.service import Actor
from tests.conftest import LedgerFactory
from tests.unit.test_logs import parse_text

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = Actor("operator", "cli", admin=True)
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@contextmanager
def serve_process(home: Path, url: str, *args: str, **env: str) -> Iterator[tuple[str, Path]]:
    """``compliance-ledger serve`` on a free loopback port with its stderr in a file; yields the base URL and the
    file, and stops the server (so every line is written) before the caller reads it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = home / f"serve-{port}.log"
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url, **env}
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "api", "serve", "--port", str(port), *args],
            env=environ,
            cwd=str(home),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:  # readiness wait for the subprocess, not a timing assumption
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited: {log.read_text()}")
            try:
                if httpx.get(f"{base}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("serve did not start")
            time.sleep(0.05)
        yield base, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def tool_call(name: str, arguments: dict[str, Any], id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def exercise(base: str, key: str) -> dict[str, Any]:
    """One of each kind of request: a REST write with a request id, a read, a refusal, an unknown route, the
    health probe and two MCP tool calls (one refused); returns what the client saw."""
    auth = {"Authorization": f"Bearer {key}"}
    seen: dict[str, Any] = {}
    with httpx.Client(base_url=base, headers=auth, timeout=60) as http:
        opened = http.post("/sessions", json={"role": "dev"}, headers={"X-Request-ID": "client-chosen.1"})
        seen["echoed"] = opened.headers["X-Request-ID"]
        seen["sid"] = sid = opened.json()["session_id"]
        seen["read_id"] = http.get(f"/sessions/{sid}").headers["X-Request-ID"]
        http.get("/sessions/ses_00000000000000000000")  # 404
        http.get("/no/such/route")
        httpx.get(f"{base}/health")  # no key
        called = http.post(
            "/mcp",
            headers={**MCP_HEADERS, "X-Request-ID": "mcp-call-1"},
            json=tool_call("clock_out", {"session_id": sid}, 41),
        )
        seen["tool_ok"] = called.json()["result"]["isError"] is False
        refused = http.post("/mcp", headers=MCP_HEADERS, json=tool_call("clock_out", {"session_id": sid}, 42))
        seen["tool_refused"] = refused.json()["result"]["isError"] is True
    return seen


def check_lines(lines: list[dict[str, Any]], seen: dict[str, Any], key: str, raw: str) -> None:
    """What both formats must say about the same requests."""
    http = [line for line in lines if line["event"] == "http_request"]
    tools = [line for line in lines if line["event"] == "tool_call"]
    by_id = {line["request_id"]: line for line in http}
    write = by_id["client-chosen.1"]
    assert seen["echoed"] == "client-chosen.1"
    assert (write["method"], write["route"], str(write["status"]), write["outcome"], write["agent"]) == (
        "POST",
        "/sessions",
        "201",
        "ok",
        "alice",
    )
    read = by_id[seen["read_id"]]
    assert read["route"] == "/sessions/{session_id}" and read["agent"] == "alice" and read["outcome"] == "ok"
    assert any(line["route"] == "/no/such/route" and str(line["status"]) == "404" for line in http)
    assert any(line["route"] == "/health" and line["agent"] in (None, "-") for line in http)
    assert {line["outcome"] for line in http} >= {"ok", "refused"}
    for line in http + tools:
        assert line["time"].endswith("Z") and float(line["duration_ms"]) >= 0
    first, second = sorted(tools, key=lambda line: int(line["rpc_id"]))
    assert (first["tool"], first["outcome"], first["agent"], first["transport"]) == ("clock_out", "ok", "alice", "http")
    assert first["request_id"] == "mcp-call-1" and by_id["mcp-call-1"]["route"] == "/mcp"  # one id, both lines
    assert second["outcome"] == "refused" and seen["tool_ok"] and seen["tool_refused"]
    assert key not in raw and "Bearer" not in raw  # no credential in any line


def test_serve_logs_each_request_and_tool_call_as_key_value_text(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    key = ledger.issue_api_key(OPERATOR, "alice").api_key
    with serve_process(tmp_path, str(ledger.store.engine.url)) as (base, log):
        seen = exercise(base, key)
    raw = log.read_text()
    lines = [parse_text(line) for line in raw.splitlines() if " http_request " in line or " tool_call " in line]
    check_lines(lines, seen, key, raw)


def test_serve_logs_json_lines_with_log_json(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    key = ledger.issue_api_key(OPERATOR, "alice").api_key
    with serve_process(tmp_path, str(ledger.store.engine.url), "--log-json") as (base, log):
        seen = exercise(base, key)
    raw = log.read_text()
    records = [json.loads(line) for line in raw.splitlines() if line.startswith("{")]
    lines = [r for r in records if r.get("event") in ("http_request", "tool_call")]
    check_lines(lines, seen, key, raw)
    assert all(
        isinstance(r["duration_ms"], float | int) and isinstance(r["status"], int) for r in lines if "status" in r
    )


def run_stdio(home: Path, url: str, *args: str, **env: str) -> tuple[list[dict[str, Any]], str]:
    """Drive ``compliance-ledger mcp`` over stdio with raw JSON-RPC, one request at a time, each answer read before
    the next is sent, then close stdin; return every stdout line parsed as JSON and the whole stderr."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        tool_call("memory_search", {"query": "release checklist"}, 2),
        tool_call("memory_search", {"query": "release checklist", "no_such_argument": 1}, 3),
    ]
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url, **env}
    err_file = home / "mcp-stderr.log"
    command = [sys.executable, "-m", "api", "mcp", "--agent", "alice", *args]
    answers: list[dict[str, Any]] = []
    with (
        err_file.open("w") as err,
        subprocess.Popen(command, env=environ, cwd=home, stdin=PIPE, stdout=PIPE, stderr=err, text=True) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        try:
            with selectors.DefaultSelector() as ready:
                ready.register(proc.stdout, selectors.EVENT_READ)
                for message in requests:
                    proc.stdin.write(json.dumps(message) + "\n")
                    proc.stdin.flush()
                    if "id" in message:  # wait for its answer (readiness; bounded only against a hung server)
                        assert ready.select(timeout=300), f"no answer to {message['method']}: {err_file.read_text()}"
                        answers.append(json.loads(proc.stdout.readline()))
            proc.stdin.close()
            rest = proc.stdout.read()  # anything else on stdout must be protocol too
            assert proc.wait(timeout=120) == 0, err_file.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
    answers += [json.loads(line) for line in rest.splitlines()]
    return answers, err_file.read_text()


def test_stdio_mcp_logs_each_tool_call_on_stderr_and_nothing_but_the_protocol_on_stdout(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    url = str(make_ledger().store.engine.url)
    answers, text_err = run_stdio(tmp_path, url)
    _, json_err = run_stdio(tmp_path, url, "--log-json")
    _, env_err = run_stdio(tmp_path, url, LEDGER_LOG_JSON="1")

    assert [a["id"] for a in answers] == [1, 2, 3] and all(a["jsonrpc"] == "2.0" for a in answers)
    assert answers[1]["result"]["isError"] is False and answers[2]["result"]["isError"] is True
    as_text = [parse_text(line) for line in text_err.splitlines() if " tool_call " in line]
    as_json = [json.loads(line) for line in json_err.splitlines() if '"tool_call"' in line]
    from_env = [json.loads(line) for line in env_err.splitlines() if '"tool_call"' in line]
    for lines in (as_text, as_json, from_env):
        assert [(str(x["rpc_id"]), x["tool"], x["outcome"], x["agent"], x["transport"]) for x in lines] == [
            ("2", "memory_search", "ok", "alice", "stdio"),
            ("3", "memory_search", "refused", "alice", "stdio"),
        ]
        assert len({x["request_id"] for x in lines}) == 2
