#!/usr/bin/env python
"""``serve`` under concurrent clients: search + assert_compliance over HTTP, against a no-op FastAPI app.

Run from the repository root::

    .venv/bin/python scripts/bench_serve.py            # writes its section of docs/BENCHMARKS.md
    .venv/bin/python scripts/bench_serve.py --quick    # short slices; prints the section

Starts ``compliance-ledger serve`` on loopback (a fresh SQLite ledger with 500 memory blocks) and, as the
baseline, a FastAPI app with one no-op POST route under the same uvicorn, each in its own process. A load
process of asyncio clients (httpx, one connection each) clocks each client in once, then, once every client is
ready, loops for the timed window: search, then assert (two requests per loop); the baseline's clients post to
the no-op route. Rounds are interleaved; the figures are requests per second, p50/p99 latency per request, and
the CPU the server and the load generator spent per request. Each round also times bare SQLite commits on the
same disk, the wait every append includes, so the section can say where a request's time goes. Targets
(issue 11): at 32 clients p99 ≤ 200 ms and req/s ≥ the 8-client rate; at one client ≥ 0.5× the no-op app. Both
servers are stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from benchkit import BENCHMARKS_MD, ROOT, docs, markdown
from benchkit.env import BM25_ONLY, load_average, pkg_version
from benchkit.fmt import yes_no
from benchkit.server import cpu_seconds, free_port, running
from benchkit.stats import median, percentile

NOOP_APP = """
import sys
import fastapi
import uvicorn

app = fastapi.FastAPI()


@app.post("/noop")
def noop(body: dict) -> dict:
    return {"ok": True}


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)  # as serve
"""
WORDS = ["migration", "hash", "chain", "token", "session", "replay", "index", "deploy", "review", "anchor"]


def seed(home: Path, env: dict[str, str]) -> None:
    script = f"""
import random
from api.bootstrap import initialise
from api.settings import Settings
from ledger.service import Actor
ledger, _ = initialise(Settings(home={str(home)!r}))
rng = random.Random(3)
words = {WORDS!r}
for i in range(500):
    text = "note %d: " % i + " ".join(rng.choice(words) for _ in range(12))
    ledger.remember(Actor("seed", "cli"), text, ["bench"])
ledger.store.dispose()
"""
    subprocess.run([sys.executable, "-c", script], env=env, check=True)


async def client_loop(
    base: str,
    ours: bool,
    ready: asyncio.Barrier,
    go: asyncio.Event,
    window: dict[str, float],
    latencies: list[float],
    n: int,
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=httpx.Limits(max_connections=1)) as client:
        session = None
        if ours:
            r = await client.post("/sessions", json={"role": "dev", "focus": f"client {n}"})
            r.raise_for_status()
            session = r.json()["session_id"]
        else:
            (await client.post("/noop", json={"i": 0})).raise_for_status()  # connected, like ours
        await ready.wait()
        await go.wait()  # the timed window opens once every client is connected (and clocked in)
        i = 0
        while time.perf_counter() < window["stop"]:
            i += 1
            if ours:
                steps = [
                    ("/memory/search", {"session_id": session, "query": WORDS[(n + i) % len(WORDS)], "limit": 5}),
                    ("/compliance/assert", {"session_id": session}),
                ]
            else:
                steps = [("/noop", {"i": i}), ("/noop", {"i": i})]
            for path, body in steps:
                t0 = time.perf_counter()
                r = await client.post(path, json=body)
                latencies.append(time.perf_counter() - t0)
                r.raise_for_status()
                if path == "/compliance/assert" and r.json()["status"] != "PASS":
                    raise RuntimeError(f"assert did not pass: {r.text}")


async def load(base: str, ours: bool, clients: int, seconds: float) -> tuple[float, list[float]]:
    latencies: list[float] = []
    ready, go = asyncio.Barrier(clients + 1), asyncio.Event()
    window: dict[str, float] = {}
    tasks = [asyncio.create_task(client_loop(base, ours, ready, go, window, latencies, n)) for n in range(clients)]
    await ready.wait()
    t0 = time.perf_counter()
    window["stop"] = t0 + seconds
    go.set()
    await asyncio.gather(*tasks)
    return len(latencies) / (time.perf_counter() - t0), latencies


def bare_commits(directory: Path, seconds: float) -> list[float]:
    """Latencies of bare SQLite commits on the disk the ledger uses (WAL, synchronous=FULL, as the ledger's), one
    ~1 KB row each: the wait every append of ours includes, measured in the same run."""
    path = directory / "bare-commits.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, data TEXT)")
    latencies, stop = [], time.perf_counter() + seconds
    while time.perf_counter() < stop:
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (data) VALUES (?)", ("x" * 1000,))
        conn.execute("COMMIT")
        latencies.append(time.perf_counter() - t0)
    conn.close()
    return latencies


@dataclass
class Run:
    """One configuration measured once: requests per second, each request's latency, and the CPU the server and
    the load generator spent per request (``None`` where ``/proc`` cannot tell)."""

    rate: float
    latencies: list[float]
    server_cpu: float | None
    client_cpu: float


@dataclass
class Summary:
    rate: float
    p50_ms: float
    p99_ms: float
    server_cpu_ms: float | None
    client_cpu_ms: float


def summarise(runs: list[Run]) -> Summary:
    lat = [x for run in runs for x in run.latencies]
    cpus = [run.server_cpu for run in runs if run.server_cpu is not None]
    return Summary(
        median([run.rate for run in runs]),
        percentile(lat, 50) * 1000,
        percentile(lat, 99) * 1000,
        median(cpus) * 1000 if cpus else None,
        median([run.client_cpu for run in runs]) * 1000,
    )


def measure(port: int, pid: int, ours: bool, clients: int, seconds: float) -> Run:
    server_before, client_before = cpu_seconds(pid), time.process_time()
    rate, latencies = asyncio.run(load(f"http://127.0.0.1:{port}", ours, clients, seconds))
    server_after, client_after = cpu_seconds(pid), time.process_time()
    count = max(1, len(latencies))
    server = None if server_before is None or server_after is None else (server_after - server_before) / count
    return Run(rate, latencies, server, (client_after - client_before) / count)


def accelerators() -> str:
    """What uvicorn picks for both servers (``http="auto"``, ``loop="auto"``): the C parser and loop if installed."""
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return f"uvicorn {pkg_version('uvicorn')} ({http}, {loop})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short slices; print instead of writing")
    args = parser.parse_args(argv)
    seconds, rounds = (2.0, 1) if args.quick else (8.0, 3)
    levels = (1, 8, 32)
    results: dict[tuple[str, int], list[Run]] = {}
    commits: list[float] = []
    load_at_start = load_average()
    with tempfile.TemporaryDirectory(prefix="ledger-serve-") as tmp, contextlib.ExitStack() as servers:
        home = Path(tmp)
        # A load test from one caller: the per-key rate limit (api/ratelimit.py) would measure itself instead.
        env = {**os.environ, **BM25_ONLY, "PYTHONPATH": str(ROOT), "LEDGER_HOME": str(home), "LEDGER_RATE_LIMIT": "0"}
        seed(home, env)
        ports = {"ours": free_port(), "noop": free_port()}
        commands = {
            "ours": [sys.executable, "-m", "api", "serve", "--port", str(ports["ours"])],
            "noop": [sys.executable, "-c", NOOP_APP, str(ports["noop"])],
        }
        pids = {
            "ours": servers.enter_context(
                running(commands["ours"], env, f"http://127.0.0.1:{ports['ours']}/health", stop_timeout_s=30)
            ).pid,
            "noop": servers.enter_context(
                running(commands["noop"], env, f"http://127.0.0.1:{ports['noop']}/docs", stderr=None, stop_timeout_s=30)
            ).pid,
        }
        for _ in range(rounds):  # interleaved: every configuration once per round
            commits += bare_commits(home, seconds / 4)
            for clients in levels:
                for name in ("ours", "noop"):
                    if name == "noop" and clients == 8:
                        continue
                    run = measure(ports[name], pids[name], name == "ours", clients, seconds)
                    results.setdefault((name, clients), []).append(run)
                    print(f"{name} {clients}: {run.rate:.0f} req/s", file=sys.stderr, flush=True)

    rows = {key: summarise(runs) for key, runs in results.items()}
    ours1, ours8, ours32 = rows[("ours", 1)], rows[("ours", 8)], rows[("ours", 32)]
    noop1, noop32 = rows[("noop", 1)], rows[("noop", 32)]

    def ms(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f} ms"

    lines = [
        docs.SERVE,
        "",
        f"Generated by `scripts/bench_serve.py`: {rounds} interleaved rounds of {seconds:g} s per configuration"
        " (search by BM25 alone, `LEDGER_SEMANTIC=false`; with hybrid search each search also embeds its query,"
        " 4–12 ms, see the Hybrid search section);",
        "SQLite; ours = search + assert_compliance per loop (both counted as requests), baseline = a no-op",
        f"FastAPI POST under the same uvicorn, {accelerators()}. Each client connects (ours: and clocks in) before",
        "the timed window opens. The load generator runs on the same 2 cores as the servers; load average",
        f"{load_at_start} at start, {load_average()} at the end. CPU per request: the server process's",
        "(and the load generator's) user + system time over the window, divided by the requests answered.",
        "",
        *markdown.table(
            (
                "Server",
                "Clients",
                "req/s (median)",
                "req/s by round",
                "p50",
                "p99",
                "server CPU / request",
                "load generator CPU / request",
            ),
            (
                (
                    "serve (search + assert)" if name == "ours" else "no-op FastAPI",
                    clients,
                    f"{row.rate:,.0f}",
                    ", ".join(f"{run.rate:,.0f}" for run in results[(name, clients)]),
                    f"{row.p50_ms:.1f} ms",
                    f"{row.p99_ms:.1f} ms",
                    ms(row.server_cpu_ms),
                    ms(row.client_cpu_ms),
                )
                for (name, clients), row in sorted(rows.items())
            ),
        ),
    ]
    checks = [
        ("32 clients: p99 ≤ 200 ms", ours32.p99_ms <= 200, f"{ours32.p99_ms:.0f} ms"),
        (
            "32 clients: req/s ≥ the 8-client rate",
            ours32.rate >= ours8.rate,
            f"{ours32.rate:,.0f} vs {ours8.rate:,.0f}",
        ),
        ("1 client: ≥ 0.5× the no-op app", ours1.rate >= 0.5 * noop1.rate, f"{ours1.rate / noop1.rate:.2f}×"),
    ]
    lines += ["", *markdown.table(("Target", "Measured", "Met"), ((w, m, yes_no(ok)) for w, ok, m in checks))]
    commit50, commit99 = (percentile(commits, p) * 1000 for p in (50, 99))
    lines += [
        "",
        f"**Where the time goes.** One client: a request of ours took {ours1.p50_ms:.2f} ms (p50) against the",
        f"no-op's {noop1.p50_ms:.2f} ms. Each search and each assert appends one event and answers after its",
        "commit; a bare SQLite commit on the same disk (WAL, synchronous=FULL, one 1 KB row, "
        f"{len(commits):,} of them in this run)",
        f"took {commit50:.2f} ms (p50) and {commit99:.2f} ms (p99). The server spent {ms(ours1.server_cpu_ms)} of "
        f"CPU per request against the no-op's {ms(noop1.server_cpu_ms)},",
        f"and the load generator, whose work is part of every round trip, {ms(ours1.client_cpu_ms)} against "
        f"{ms(noop1.client_cpu_ms)}. At 8 and 32 clients",
        f"the server spent {ms(ours8.server_cpu_ms)} and {ms(ours32.server_cpu_ms)} of CPU per request and the "
        f"load generator {ms(ours8.client_cpu_ms)} and {ms(ours32.client_cpu_ms)}, on 2 cores; with 32 requests",
        f"always in flight a request waits for the 31 others (32 ÷ {ours32.rate:,.0f} req/s = "
        f"{32 / ours32.rate * 1000:.0f} ms on average). The no-op app's own p99 at 32 clients was "
        f"{noop32.p99_ms:.0f} ms in this run.",
    ]
    text = "\n".join(lines) + "\n"
    if not args.quick:
        docs.write_section(BENCHMARKS_MD, docs.SERVE, text)
    print(text)
    print(json.dumps({f"{k[0]}-{k[1]}": vars(v) for k, v in rows.items()}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
