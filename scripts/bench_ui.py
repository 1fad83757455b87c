#!/usr/bin/env python
"""Dashboard page load: each page of ``/ui`` in headless Chromium against ``serve`` on a 100k-event ledger.

Run from the repository root::

    .venv/bin/python scripts/bench_ui.py                        # 100k events; writes its section of BENCHMARKS.md
    .venv/bin/python scripts/bench_ui.py --keep /tmp/ui-ledger  # build the ledger there, reuse it next time
    .venv/bin/python scripts/bench_ui.py --quick                # 10k events, 3 runs; prints the section

Builds a SQLite ledger with the event mix of ``scripts/bench_ledger.py`` (sessions of searches, stamps and
refusals of 16 agents, memory blocks; all recorded in the last minutes, so the Overview's 24-hour window holds the
whole log), adds 40 tasks, writes the projection snapshots (``replay --rebuild``) and starts ``compliance-ledger
serve`` in a process of its own. Debian's Chromium (driven by Playwright, never a downloaded browser) then opens
each page ``--runs`` times, each in a new tab: a page's load is the time from the navigation's start to the page
marking its data drawn (``data-ready-ms`` on ``<body>``: ``performance.now()`` when the last of its requests has
been answered and rendered). The first load of each page is reported apart (it pays the server's first reads);
the median is over the later ones. Target (issue 16): ≤ 1 s per page. The section it writes is its own.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from benchkit import BENCHMARKS_MD, ROOT, docs, markdown
from benchkit.env import git_revision, load_average
from benchkit.fmt import yes_no
from benchkit.server import free_port, running
from benchkit.stats import median
from ledger_bench.log import build, rebuild_snapshots

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PAGES = ("overview", "memory", "audit", "tasks")
TASKS = 40


def chromium_version() -> str:
    import subprocess

    try:
        out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.strip().removeprefix("Chromium ").split(" ")[0] or "unknown"


def window_share(base: str) -> str:
    """How many of the log's searches the Overview's default window holds (all, when the ledger was built in the
    last 24 hours), read through the REST API."""
    import datetime as _dt

    import httpx

    end = _dt.datetime.now(_dt.UTC)
    window = {"start": (end - _dt.timedelta(hours=24)).isoformat(), "end": end.isoformat(), "bucket": "hour"}
    with httpx.Client(base_url=base, timeout=300) as http:
        total = sum(a["searches"] for a in http.get("/reports/compliance").json()["agents"])
        shown = sum(a["searches"] for a in http.get("/reports/compliance/series", params=window).json()["totals"])
    return "all" if shown == total else f"{shown:,} of {total:,}"


def add_tasks(home: Path, url: str) -> None:
    """40 tasks on the board, with DNA (the Tasks page has something to draw)."""
    from api.bootstrap import open_ledger
    from api.settings import Settings
    from ledger.service import Actor

    ledger = open_ledger(Settings(home=home, database_url=url))
    try:
        if ledger.task_list():
            return
        who = Actor("agent-00", "cli")
        for i in range(TASKS):
            ledger.task_create(who, f"bench-{i:03d}", f"Benchmark task {i}", role="dev", dna={"ticket": f"B-{i}"})
    finally:
        ledger.store.engine.dispose()


def measure(base: str, runs: int) -> dict[str, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ui-profile-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1400, "height": 1000}
        )
        try:
            for name in PAGES:
                loads: list[float] = []
                requests = 0
                for _ in range(runs):
                    page = context.new_page()
                    asked: list[str] = []
                    page.on("request", lambda r, asked=asked: asked.append(r.url))
                    page.goto(f"{base}/ui/#/{name}")
                    page.wait_for_selector(f"body[data-ready={name}]", timeout=120_000)
                    loads.append(float(page.get_attribute("body", "data-ready-ms") or "nan"))
                    requests = sum(1 for u in asked if "/ui/" not in u)  # REST calls, not the page's own files
                    page.close()
                results[name] = {"first": loads[0], "median": median(loads[1:] or loads), "requests": requests}
                print(f"  {name}: {results[name]}", file=sys.stderr, flush=True)
        finally:
            context.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10k events, 3 runs; print only")
    parser.add_argument("--events", type=int, default=None, help="events in the ledger (default 100,000)")
    parser.add_argument("--runs", type=int, default=None, help="loads of each page (default 11)")
    parser.add_argument("--keep", type=Path, default=None, help="build the ledger here and keep it")
    args = parser.parse_args(argv)
    events = args.events or (10_000 if args.quick else 100_000)
    runs = args.runs or (3 if args.quick else 11)
    started = time.perf_counter()
    load_at_start = load_average()
    with tempfile.TemporaryDirectory(prefix="ledger-ui-") as tmp_name:
        home = (args.keep or Path(tmp_name)) / f"ledger-{events}"
        home.mkdir(parents=True, exist_ok=True)
        db = home / "ledger.db"
        url = f"sqlite:///{db}"
        if not db.exists():
            print(f"building a ledger of {events:,} events in {home}", file=sys.stderr, flush=True)
            build(db, events)
        add_tasks(home, url)
        print(f"  {rebuild_snapshots(home, url)} snapshots written", file=sys.stderr, flush=True)
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url}
        command = [sys.executable, "-m", "api", "serve", "--host", "127.0.0.1", "--port", str(port)]
        base = f"http://127.0.0.1:{port}"
        with running(command, env, f"{base}/health"):
            results = measure(base, runs)
            in_window = window_share(base)  # after the loads, so the first ones find the server cold
    lines = [
        docs.UI,
        "",
        f"Generated by `scripts/bench_ui.py`: `serve` on a SQLite ledger of {events:,} events (16 agents' sessions"
        f" of searches, stamps and refusals, memory blocks, {TASKS} tasks; snapshots written), each page of `/ui`"
        f" opened {runs} times in a new tab of Debian's headless Chromium. Load = navigation start → the page's"
        f" data drawn (`data-ready-ms`). The Overview's window (the last 24 hours, by hour) held {in_window} of the"
        " log's searches.",
        "",
        *markdown.table(
            ("Page", "first load", f"median of the next {runs - 1}", "REST requests"),
            (
                (name, f"{r['first']:.0f} ms", f"{r['median']:.0f} ms", f"{r['requests']:.0f}")
                for name, r in results.items()
            ),
        ),
    ]
    worst = max(max(r["first"], r["median"]) for r in results.values())
    checks = [(f"every page, first load and median, on {events:,} events: ≤ 1 s", worst <= 1000, f"{worst:.0f} ms")]
    lines += ["", *markdown.table(("Target", "Measured (worst)", "Met"), ((w, m, yes_no(ok)) for w, ok, m in checks))]
    lines += [
        "",
        f"Code measured: {git_revision()}; Chromium {chromium_version()}; load average (1/5/15 min) at start"
        f" {load_at_start}, at end {load_average()}; the run took {time.perf_counter() - started:.0f} s.",
    ]
    text = "\n".join(lines) + "\n"
    if not args.quick:
        docs.write_section(BENCHMARKS_MD, docs.UI, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
