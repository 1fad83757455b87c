#!/usr/bin/env python
"""``serve`` under concurrent clients: search + assert_compliance over HTTP, against a no-op FastAPI app.

Run from the repository root::

    .venv/bin/python scripts/bench_serve.py            # writes its section of docs/BENCHMARKS.md
    .venv/bin/python scripts/bench_serve.py --quick    # short slices; prints the section

Starts ``compliance-ledger serve`` on loopback (a fresh SQLite ledger with 500 memory blocks) and, as the
baseline, a FastAPI app with one no-op POST route under the same uvicorn, each in its own process. A load
process of asyncio clients (httpx, one connection each) clocks each client in once, then loops: search, then
assert (two requests per loop); the baseline's clients post to the no-op route. Rounds are interleaved; the
figures are requests per second and p50/p99 latency per request. Targets (issue 11): at 32 clients p99 ≤ 200 ms
and req/s ≥ the 8-client rate; at one client ≥ 0.5× the no-op app. Both servers are stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import _bench_util  # noqa: E402

MARKER = "\n## Serve under concurrent clients (scripts/bench_serve.py)"
NOOP_APP = """
import sys
import fastapi
import uvicorn

app = fastapi.FastAPI()


@app.post("/noop")
def noop(body: dict) -> dict:
    return {"ok": True}


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""
WORDS = ["migration", "hash", "chain", "token", "session", "replay", "index", "deploy", "review", "anchor"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120  # readiness on a loaded machine, not a measurement
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server at {url} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=5)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"the server at {url} did not answer")


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


async def client_loop(base: str, ours: bool, stop_at: float, latencies: list[float], n: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=httpx.Limits(max_connections=1)) as client:
        session = None
        if ours:
            r = await client.post("/sessions", json={"role": "dev", "focus": f"client {n}"})
            r.raise_for_status()
            session = r.json()["session_id"]
        i = 0
        while time.perf_counter() < stop_at:
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
    t0 = time.perf_counter()
    stop_at = t0 + seconds
    await asyncio.gather(*(client_loop(base, ours, stop_at, latencies, n) for n in range(clients)))
    return len(latencies) / (time.perf_counter() - t0), latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short slices; print instead of writing")
    args = parser.parse_args(argv)
    seconds, rounds = (2.0, 1) if args.quick else (8.0, 3)
    levels = (1, 8, 32)
    results: dict[tuple[str, int], list[tuple[float, list[float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="ledger-serve-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LEDGER_HOME": str(home)}
        seed(home, env)
        ours_port, noop_port = free_port(), free_port()
        servers = {
            "ours": subprocess.Popen(
                [sys.executable, "-m", "api", "serve", "--port", str(ours_port)], env=env, stderr=subprocess.DEVNULL
            ),
            "noop": subprocess.Popen([sys.executable, "-c", NOOP_APP, str(noop_port)], env=env),
        }
        try:
            wait_ready(f"http://127.0.0.1:{ours_port}/health", servers["ours"])
            wait_ready(f"http://127.0.0.1:{noop_port}/docs", servers["noop"])
            for _ in range(rounds):  # interleaved: every configuration once per round
                for clients in levels:
                    for name, port in (("ours", ours_port), ("noop", noop_port)):
                        if name == "noop" and clients == 8:
                            continue
                        outcome = asyncio.run(load(f"http://127.0.0.1:{port}", name == "ours", clients, seconds))
                        results.setdefault((name, clients), []).append(outcome)
                        print(f"{name} {clients}: {outcome[0]:.0f} req/s", file=sys.stderr, flush=True)
        finally:
            for proc in servers.values():
                proc.terminate()
                proc.wait(timeout=30)

    def summary(key: tuple[str, int]) -> tuple[float, float, float]:
        runs = results[key]
        lat = [x for _, xs in runs for x in xs]
        return (
            statistics.median(r for r, _ in runs),
            _bench_util.percentile(lat, 50) * 1000,
            _bench_util.percentile(lat, 99) * 1000,
        )

    rows = {key: summary(key) for key in results}
    ours1, ours8, ours32, noop1 = rows[("ours", 1)], rows[("ours", 8)], rows[("ours", 32)], rows[("noop", 1)]
    lines = [
        MARKER.strip(),
        "",
        f"Generated by `scripts/bench_serve.py`: {rounds} interleaved rounds of {seconds:g} s per configuration;",
        "SQLite; ours = search + assert_compliance per loop (both counted as requests), baseline = a no-op",
        "FastAPI POST under the same uvicorn. The load generator runs on the same 2 cores as the server.",
        "",
        "| Server | Clients | req/s | p50 | p99 |",
        "|---|---|---|---|---|",
    ]
    for (name, clients), (rate, p50, p99) in sorted(rows.items()):
        label = "serve (search + assert)" if name == "ours" else "no-op FastAPI"
        lines.append(f"| {label} | {clients} | {rate:,.0f} | {p50:.1f} ms | {p99:.1f} ms |")
    checks = [
        ("32 clients: p99 ≤ 200 ms", ours32[2] <= 200, f"{ours32[2]:.0f} ms"),
        ("32 clients: req/s ≥ the 8-client rate", ours32[0] >= ours8[0], f"{ours32[0]:,.0f} vs {ours8[0]:,.0f}"),
        ("1 client: ≥ 0.5× the no-op app", ours1[0] >= 0.5 * noop1[0], f"{ours1[0] / noop1[0]:.2f}×"),
    ]
    lines += ["", "| Target | Measured | Met |", "|---|---|---|"]
    lines += [f"| {what} | {measured} | {'yes' if ok else 'no'} |" for what, ok, measured in checks]
    text = "\n".join(lines) + "\n"
    if not args.quick:
        _bench_util.write_section(ROOT / "docs" / "BENCHMARKS.md", MARKER, text)
    print(text)
    print(json.dumps({f"{k[0]}-{k[1]}": v for k, v in rows.items()}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
