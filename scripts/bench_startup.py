#!/usr/bin/env python
"""Start-up: ``compliance-ledger --help`` and the time ``compliance-ledger mcp`` takes to answer ``initialize``.

Run from the repository root::

    .venv/bin/python scripts/bench_startup.py            # writes its section of docs/BENCHMARKS.md
    .venv/bin/python scripts/bench_startup.py --quick    # fewer runs; prints the section

Every figure is the median of fresh processes, measured from exec to the answer. The MCP baseline is a
minimal server of the same SDK (one no-op tool) on stdio, started and asked the same ``initialize`` in the
same run, interleaved with ours. Ours starts on a real SQLite ledger (created by a warm-up run), as an agent's
client would see it; it answers before it opens the ledger and clocks in its default session (api/mcp/opening.py:
:func:`answer_first_call` measures the whole wait). Targets (issue 11): ``initialize`` ≤ 2× the minimal server;
``--help`` ≤ 0.5 s; ``serve`` idle RSS ≤ 100 MB (median of 3 starts).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchkit import BENCHMARKS_MD, ROOT, docs, markdown
from benchkit.fmt import yes_no
from benchkit.server import free_port, running, status_mb
from benchkit.stats import median

MINIMAL = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("minimal")


@server.tool()
def noop() -> str:
    return "ok"


server.run()
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench_startup", "version": "1"},
    },
}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
FIRST_CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "task_list", "arguments": {}}}


def _initialized(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """Start ``command`` and send it ``initialize``; return the process and its answer's line."""
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE) + "\n")
    proc.stdin.flush()
    return proc, proc.stdout.readline()


def answer_first_call(command: list[str], env: dict[str, str]) -> float:
    """Seconds from exec to the answer of the first ``tools/call`` (``task_list``: it needs the ledger open), sent
    as a client sends it: once ``initialize`` is answered, after ``notifications/initialized``. What an agent waits
    for in all; ``mcp`` opens its ledger after the handshake, so this is the figure that must not get worse."""
    t0 = time.perf_counter()
    proc, _ = _initialized(command, env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZED) + "\n" + json.dumps(FIRST_CALL) + "\n")
    proc.stdin.flush()
    reply: dict[str, object] = {}
    while reply.get("id") != 2:
        reply = json.loads(proc.stdout.readline())
    elapsed = time.perf_counter() - t0
    proc.stdin.close()
    proc.stdout.close()
    proc.wait(timeout=60)
    result = reply.get("result")
    assert isinstance(result, dict) and not result.get("isError"), reply
    return elapsed


def answer_initialize(command: list[str], env: dict[str, str]) -> float:
    """Seconds from exec to the ``initialize`` answer on stdout."""
    t0 = time.perf_counter()
    proc, line = _initialized(command, env)
    elapsed = time.perf_counter() - t0
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.stdout.close()
    proc.wait(timeout=60)
    reply = json.loads(line)
    assert reply.get("id") == 1 and "result" in reply, reply
    return elapsed


def serve_idle_rss(env: dict[str, str]) -> float:
    """Resident memory (MB) of ``serve`` on an empty SQLite ledger once it has answered ``/health``."""
    port = free_port()
    command = [sys.executable, "-m", "api", "serve", "--port", str(port)]
    health = f"http://127.0.0.1:{port}/health"
    with running(command, env, health, stdout=subprocess.DEVNULL, patience_s=120, stop_timeout_s=30) as proc:
        return status_mb(proc.pid, "VmRSS")


def wall(command: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 runs each; print instead of writing")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else 11
    with tempfile.TemporaryDirectory(prefix="ledger-startup-") as home:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LEDGER_HOME": home}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # with it every start would compile every module again
        ours = [sys.executable, "-m", "api", "mcp", "--agent", "bench"]
        minimal = [sys.executable, "-c", MINIMAL]
        answer_initialize(ours, env)  # creates the ledger: later runs measure a start on an existing one
        answer_initialize(minimal, env)
        ours_s, minimal_s, help_s = [], [], []
        for _ in range(runs):  # interleaved, so load on the machine falls on both alike
            ours_s.append(answer_initialize(ours, env))
            minimal_s.append(answer_initialize(minimal, env))
            help_s.append(wall([sys.executable, "-m", "api", "--help"], env))
        rss = [serve_idle_rss(env) for _ in range(3)]
    o, m, h = median(ours_s), median(minimal_s), median(help_s)
    idle = median(rss)
    ratio = o / m
    rows = [
        (
            "`compliance-ledger mcp` answers `initialize`",
            f"{o:.2f} s (min {min(ours_s):.2f})",
            f"{m:.2f} s (minimal SDK server)",
            f"{ratio:.2f}×",
            "≤ 2×",
            yes_no(ratio <= 2),
        ),
        ("`compliance-ledger --help`", f"{h:.2f} s (min {min(help_s):.2f})", "—", "—", "≤ 0.5 s", yes_no(h <= 0.5)),
        (
            "`serve` resident memory, idle (empty SQLite ledger, after one `/health`)",
            f"{idle:.0f} MB",
            "—",
            "—",
            "≤ 100 MB",
            yes_no(idle <= 100),
        ),
    ]
    text = "\n".join(
        [
            docs.STARTUP,
            "",
            f"Generated by `scripts/bench_startup.py`: median of {runs} fresh processes each, interleaved; exec to",
            "answer. Ours starts on an existing SQLite ledger, which it opens (and clocks in) after it answers.",
            "",
            *markdown.table(("Measurement", "Ours", "Baseline", "Ratio", "Target", "Met"), rows),
        ]
    )
    if not args.quick:
        docs.write_section(BENCHMARKS_MD, docs.STARTUP, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
