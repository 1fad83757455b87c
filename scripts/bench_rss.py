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
import sys
import tempfile
import time
from pathlib import Path

import httpx
from benchkit import BENCHMARKS_MD, ROOT, docs, markdown
from benchkit.env import BM25_ONLY
from benchkit.fmt import yes_no
from benchkit.server import free_port, running, status_mb
from ledger_bench.log import build, rebuild_snapshots

WORDS = ["release", "checklist", "deploy", "migrate", "events", "table", "session", "default", "server", "hash"]


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
    env = {**os.environ, **BM25_ONLY, "PYTHONPATH": str(ROOT), "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url}
    env["LEDGER_RATE_LIMIT"] = "0"  # a load from one caller: the per-key rate limit would answer most of it
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "api", "serve", "--port", str(port)]
    with running(command, env, f"{base}/health") as proc:
        started = status_mb(proc.pid, "VmRSS")
        requests = asyncio.run(load(base, clients, seconds))
        return {
            "started": started,
            "after": status_mb(proc.pid, "VmRSS"),
            "peak": status_mb(proc.pid, "VmHWM"),
            "requests": requests,
        }


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
                build(db, n)
            print(f"  {rebuild_snapshots(home, url)} snapshots written", file=sys.stderr, flush=True)
            results[n] = measure(home, url, seconds, args.clients)
            print(f"  {n:,}: {results[n]}", file=sys.stderr, flush=True)
    b, s = results[big], results[small]
    growth = b["after"] - s["after"]
    lines = [
        docs.RSS,
        "",
        f"Generated by `scripts/bench_rss.py`: `serve` (search by BM25 alone, `LEDGER_SEMANTIC=false`: hybrid search"
        " holds the embedding model and onnxruntime besides, ~190 MB, see the Hybrid search section) in a fresh"
        " process on a SQLite ledger with snapshots, then"
        f" {args.clients} clients looping search + assert + recall for {seconds:g} s. RSS from `/proc/PID/status`.",
        "",
        *markdown.table(
            ("Ledger", "RSS when it first answers", "RSS after the load", "peak RSS (VmHWM)", "requests served"),
            (
                (
                    f"{n:,} events",
                    f"{results[n]['started']:.0f} MB",
                    f"{results[n]['after']:.0f} MB",
                    f"{results[n]['peak']:.0f} MB",
                    f"{results[n]['requests']:,.0f}",
                )
                for n in (small, big)
            ),
        ),
    ]
    checks = [
        (f"after the {big:,}-event cold start and the load: ≤ 110 MB", b["after"] <= 110, f"{b['after']:.0f} MB"),
        (f"growth from {small:,} to {big:,} events: ≤ 10 MB", growth <= 10, f"{growth:.1f} MB"),
    ]
    lines += ["", *markdown.table(("Target", "Measured", "Met"), ((w, m, yes_no(ok)) for w, ok, m in checks))]
    lines += [
        "",
        "What the growth is made of (measured on these ledgers on 2026-11-26, not by this run): the 1M-event ledger"
        " holds 44,653 memory blocks and 17,832 sessions against about a tenth of each at 100k; the state that"
        " scoring reads (per block: decay rate, confidence, four counts, three moments, two positions, coded tags,"
        " category, tier, author and successor; per session: its active span) is 6.2 MB of Python objects at 1M"
        " (tracemalloc, after the block ids were packed as bytes), and the same calls made in-process by 8 threads"
        " grow the process by 5.8 MB from 100k to 1M; the rest under `serve` (4-5 MB, varying by 2-4 MB from run"
        " to run) was not pinned to one allocation: periodic malloc_trim, a 64 KiB SQLite page cache and restoring"
        " the graph before the first request each moved it by 1 MB or less.",
    ]
    text = "\n".join(lines) + "\n"
    if not args.quick:
        docs.write_section(BENCHMARKS_MD, docs.RSS, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
