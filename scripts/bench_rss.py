#!/usr/bin/env python
"""Resident memory of ``serve`` on a large ledger: after a cold start and a minute of load, at two sizes.

Run from the repository root::

    .venv/bin/python scripts/bench_rss.py                      # 100k and 1M events; writes its section
    .venv/bin/python scripts/bench_rss.py --keep /tmp/ledgers  # build the ledgers there, reuse them next time
    .venv/bin/python scripts/bench_rss.py --quick              # 20k and 2k events, 10 s of load; prints

For each size: builds a SQLite ledger with the event mix of ``scripts/bench_ledger.py`` (or reuses one kept),
writes its projection snapshots (``replay --rebuild`` does the same), starts ``compliance-ledger serve`` on
loopback in a fresh process, and reads its ``VmRSS`` from ``/proc`` once it answers ``/health``; then 8 clients
(httpx, one connection each) clock in and loop memory search, assert_compliance and recall for ``--seconds``;
then ``VmRSS`` again and the process's peak (``VmHWM``). Targets (issue 11): after the 1M-event cold start and
a minute of load ≤ 110 MB; growth from 100k to 1M events ≤ 10 MB. The server is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import _bench_util  # noqa: E402
import bench_coldstart  # noqa: E402

MARKER = "\n## Serve memory on a large ledger (scripts/bench_rss.py)"
WORDS = ["release", "checklist", "deploy", "migrate", "events", "table", "session", "default", "server", "hash"]


def free_port() -> int:
    return _bench_util.free_port()


def status_mb(pid: int, field: str) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(text.split(f"{field}:")[1].split()[0]) / 1024


def wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    _bench_util.wait_http(url, proc)


async def client(base: str, n: int, stop_at: float, counts: list[int]) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=httpx.Limits(max_connections=1)) as http:
        r = await http.post("/sessions", json={"role": "dev", "focus": f"rss client {n}"})
        r.raise_for_status()
        session = r.json()["session_id"]
        i = 0
        while time.perf_counter() < stop_at:
            i += 1
            query = f"{WORDS[(n + i) % len(WORDS)]} {WORDS[(n * 3 + i) % len(WORDS)]}"
            for path, body in (
                ("/memory/search", {"session_id": session, "query": query, "limit": 5}),
                ("/compliance/assert", {"session_id": session}),
                ("/memory/recall", {"query": query, "top_k": 5}),
            ):
                r = await http.post(path, json=body)
                r.raise_for_status()
                counts[0] += 1
        (await http.post(f"/sessions/{session}/clock-out")).raise_for_status()


async def load(base: str, clients: int, seconds: float) -> int:
    counts = [0]
    stop_at = time.perf_counter() + seconds
    await asyncio.gather(*(client(base, n, stop_at, counts) for n in range(clients)))
    return counts[0]


def measure(home: Path, url: str, seconds: float, clients: int) -> dict[str, float]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "api", "serve", "--port", str(port)], env=env, stderr=subprocess.DEVNULL
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/health", proc)
        started = status_mb(proc.pid, "VmRSS")
        requests = asyncio.run(load(base, clients, seconds))
        return {
            "started": started,
            "after": status_mb(proc.pid, "VmRSS"),
            "peak": status_mb(proc.pid, "VmHWM"),
            "requests": requests,
        }
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20k and 2k events, 10 s of load; print only")
    parser.add_argument("--seconds", type=float, default=None, help="length of the load (default 60)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--keep", type=Path, default=None, help="build the ledgers here and keep them")
    args = parser.parse_args(argv)
    small, big = (2_000, 20_000) if args.quick else (100_000, 1_000_000)
    seconds = args.seconds or (10.0 if args.quick else 60.0)
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="ledger-rss-") as tmp_name:
        base = args.keep or Path(tmp_name)
        for n in (small, big):
            home = base / f"ledger-{n}"
            home.mkdir(parents=True, exist_ok=True)
            db = home / "ledger.db"
            url = f"sqlite:///{db}"
            if not db.exists():
                print(f"building a ledger of {n:,} events in {home}", file=sys.stderr, flush=True)
                bench_coldstart.build(db, n)
            print(f"  {bench_coldstart.rebuild_snapshots(home, url)} snapshots written", file=sys.stderr, flush=True)
            results[n] = measure(home, url, seconds, args.clients)
            print(f"  {n:,}: {results[n]}", file=sys.stderr, flush=True)
    b, s = results[big], results[small]
    growth = b["after"] - s["after"]
    lines = [
        MARKER.strip(),
        "",
        f"Generated by `scripts/bench_rss.py`: `serve` in a fresh process on a SQLite ledger with snapshots, then"
        f" {args.clients} clients looping search + assert + recall for {seconds:g} s. RSS from `/proc/PID/status`.",
        "",
        "| Ledger | RSS when it first answers | RSS after the load | peak RSS (VmHWM) | requests served |",
        "|---|---|---|---|---|",
    ]
    for n in (small, big):
        r = results[n]
        lines.append(
            f"| {n:,} events | {r['started']:.0f} MB | {r['after']:.0f} MB | {r['peak']:.0f} MB"
            f" | {r['requests']:,.0f} |"
        )
    checks = [
        (f"after the {big:,}-event cold start and the load: ≤ 110 MB", b["after"] <= 110, f"{b['after']:.0f} MB"),
        (f"growth from {small:,} to {big:,} events: ≤ 10 MB", growth <= 10, f"{growth:.1f} MB"),
    ]
    lines += ["", "| Target | Measured | Met |", "|---|---|---|"]
    lines += [f"| {what} | {measured} | {'yes' if ok else 'no'} |" for what, ok, measured in checks]
    text = "\n".join(lines) + "\n"
    if not args.quick:
        _bench_util.write_section(ROOT / "docs" / "BENCHMARKS.md", MARKER, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
