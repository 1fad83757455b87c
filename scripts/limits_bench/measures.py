"""The seven measures of issue 28, each a ratio against a baseline doing the same work, timed in interleaved rounds
(the contenders take turns, the order rotating round by round) with the existing benchmarks' code; a row that
misses its target (or every row, with ``profile="all"``) gets the profile of ``limits_bench.profiles``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench_coldstart import CHILD, run_child
from bench_serve import accelerators, measure, seed
from bench_startup import INITIALIZE, MINIMAL, answer_first_call, answer_initialize, wall
from benchkit.env import BM25_ONLY
from benchkit.fmt import fmt_rate, fmt_us
from benchkit.server import free_port, running
from benchkit.stats import median, percentile
from benchkit.timing import interleave, interleaved_rates
from ledger_bench.fixtures import new_store
from ledger_bench.log import build, generate_log, rebuild_snapshots
from ledger_bench.replay import raw_scan, replay_all
from ledger_bench.single import append_pair
from writers_bench.threads import GroupCount, open_store, slice_run

from ledger.core.storage import MAX_GROUP
from limits_bench.profiles import (
    Summary,
    clean_env,
    cprofile_child,
    cprofile_process,
    cprofile_summary,
    importtime_summary,
    py_spy,
    py_spy_summary,
)
from projections.runner import ALL, ProjectionRunner

SAME_BODIES_APP = """
import json
import sys

import fastapi
import uvicorn

canned = json.loads(open(sys.argv[2], encoding="utf-8").read())
app = fastapi.FastAPI()


def answer(body):
    def handler(request: dict) -> dict:
        return body

    return handler


for path, reply in canned.items():
    app.add_api_route(path, answer(reply["body"]), methods=["POST"], status_code=reply["status"])

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)  # as serve
"""
"""Row 5's baseline: a no-op FastAPI app on the paths the client posts to (``/sessions``, ``/memory/search``,
``/compliance/assert``), each taking a JSON body and answering the body ``serve`` answered to the same request
(captured once from ``serve`` before the rounds), through FastAPI's usual response encoding; so the one client
(``bench_serve.client_loop``, the same code for both) sends and receives the same bytes on both sides."""


def capture_bodies(port: int, path: Path) -> None:
    """One ``/sessions``, ``/memory/search`` and ``/compliance/assert`` against ``serve``; their answers into
    ``path`` (JSON: path → status and body), for :data:`SAME_BODIES_APP`."""
    import httpx

    replies: dict[str, dict[str, object]] = {}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        r = client.post("/sessions", json={"role": "dev", "focus": "capture"})
        r.raise_for_status()
        replies["/sessions"] = {"status": r.status_code, "body": r.json()}
        session = r.json()["session_id"]
        for route, body in (
            ("/memory/search", {"session_id": session, "query": "migration", "limit": 5}),
            ("/compliance/assert", {"session_id": session}),
        ):
            r = client.post(route, json=body)
            r.raise_for_status()
            replies[route] = {"status": r.status_code, "body": r.json()}
    assert replies["/compliance/assert"]["body"]["status"] == "PASS"  # type: ignore[index]
    path.write_text(json.dumps(replies), encoding="utf-8")


@dataclass(frozen=True)
class Sizes:
    writers_seconds: float
    writers_rounds: int
    replay_events: int
    replay_rounds: int
    startup_runs: int
    serve_seconds: float
    serve_rounds: int
    cold_events: tuple[int, int]
    cold_runs: int
    append_per_round: int
    append_rounds: int
    append_warmup: int
    profile_seconds: float
    profile_events: int
    profile_appends: int

    def describe(self) -> str:
        def n(count: int, word: str) -> str:
            return f"{count:,} {word}{'' if count == 1 else 's'}"

        big, small = self.cold_events
        return (
            f"writers: {n(self.writers_rounds, 'round')} of {self.writers_seconds:g} s per configuration; replay: "
            f"{self.replay_events:,} events, {n(self.replay_rounds, 'round')}; start-up: "
            f"{n(self.startup_runs, 'round')} of fresh processes; serve: {n(self.serve_rounds, 'round')} of "
            f"{self.serve_seconds:g} s per server; cold start: {big:,} vs {small:,} events, "
            f"{n(self.cold_runs, 'round')}; appends: {n(self.append_rounds, 'round')} of "
            f"{self.append_per_round} appends each after {self.append_warmup} warm-up; profiles: "
            f"{self.profile_seconds:g} s sampled, replay of {self.profile_events:,} events, "
            f"{self.profile_appends} appends"
        )


FULL = Sizes(
    writers_seconds=3.0,
    writers_rounds=5,
    replay_events=200_000,
    replay_rounds=5,
    startup_runs=11,
    serve_seconds=5.0,
    serve_rounds=5,
    cold_events=(300_000, 10_000),
    cold_runs=5,
    append_per_round=400,
    append_rounds=15,
    append_warmup=100,
    profile_seconds=5.0,
    profile_events=50_000,
    profile_appends=400,
)
QUICK = Sizes(
    writers_seconds=0.5,
    writers_rounds=1,
    replay_events=3_000,
    replay_rounds=1,
    startup_runs=2,
    serve_seconds=1.5,
    serve_rounds=1,
    cold_events=(5_000, 1_000),
    cold_runs=1,
    append_per_round=30,
    append_rounds=2,
    append_warmup=5,
    profile_seconds=1.0,
    profile_events=3_000,
    profile_appends=30,
)


@dataclass
class Result:
    """One row of the table, the facts under it and, where it was taken, the profile."""

    number: int
    measure: str
    ours: str
    baseline: str
    ratio: str
    target: str
    met: bool
    rounds: str
    details: list[str] = field(default_factory=list)
    profiles: list[Summary] = field(default_factory=list)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def per_round(values: list[float], fmt: Callable[[float], str]) -> str:
    return ", ".join(fmt(v) for v in values)


# 1 ------------------------------------------------------------------------------------------------------------------
def writers(tmp: Path, sizes: Sizes, profile: str) -> Result:
    """16 writer threads against one on the same SQLite store with group commit (``group_limit=MAX_GROUP``)."""
    store, _ = open_store("sqlite", tmp, MAX_GROUP, name="-limits")
    groups = GroupCount(store)
    rates: dict[int, list[float]] = {1: [], 16: []}
    lats: dict[int, list[float]] = {1: [], 16: []}
    per_group: dict[int, list[int]] = {1: [0, 0], 16: [0, 0]}
    try:
        for r, n in interleave((1, 16), sizes.writers_rounds):
            before = (groups.groups, groups.appends)
            rate, latencies = slice_run(store, n, sizes.writers_seconds)
            rates[n].append(rate)
            lats[n].extend(latencies)
            per_group[n][0] += groups.groups - before[0]
            per_group[n][1] += groups.appends - before[1]
            log(f"  writers round {r + 1}: {n} → {rate:,.0f} ev/s")
        ratio = median(rates[16]) / median(rates[1])
        p99 = percentile(lats[16], 99)
        met = ratio >= 4 and p99 <= 0.050
        result = Result(
            1,
            "16 concurrent writers vs one (SQLite, one process, group commit)",
            f"{fmt_rate(median(rates[16]))} ev/s, p99 {ms(p99)}",
            f"{fmt_rate(median(rates[1]))} ev/s (1 writer)",
            f"{ratio:.2f}×",
            "≥ 4×, p99 ≤ 50 ms",
            met,
            f"{sizes.writers_rounds} × {sizes.writers_seconds:g} s each",
            [
                "Each writer is a thread appending one `MemorySearched` per call to a stream of its own through "
                f"`SqlEventStore.append` (`group_limit={MAX_GROUP}`, the transparency-log tree and row "
                "authenticators on), `writers_bench.threads.slice_run`.",
                f"Per round: 16 writers {per_round(rates[16], fmt_rate)} ev/s; 1 writer "
                f"{per_round(rates[1], fmt_rate)} ev/s. Latency p50 / p99: 16 writers "
                f"{ms(percentile(lats[16], 50))} / {ms(p99)}; 1 writer {ms(percentile(lats[1], 50))} / "
                f"{ms(percentile(lats[1], 99))}.",
                "Appends per commit: 16 writers "
                f"{per_group[16][1] / max(1, per_group[16][0]):.1f}, 1 writer "
                f"{per_group[1][1] / max(1, per_group[1][0]):.1f}.",
            ],
        )
        if profile == "all" or (profile == "missed" and not met):
            log("  writers: py-spy on this process, 16 writers")
            with py_spy(os.getpid()) as raw:
                slice_run(store, 16, sizes.profile_seconds)
            result.profiles.append(
                py_spy_summary(raw, f"16 writer threads appending for {sizes.profile_seconds:g} s in this process")
            )
    finally:
        store.dispose()
    return result


# 2 ------------------------------------------------------------------------------------------------------------------
def replay(tmp: Path, sizes: Sizes, profile: str) -> Result:
    """Every event through every projection against ``SELECT data`` + ``json.loads`` on the same file."""
    n = sizes.replay_events
    path = tmp / "replay.db"
    store = new_store(path)
    t0 = time.perf_counter()
    counts = generate_log(store, n)
    gen_s = time.perf_counter() - t0
    try:
        raw_scan(path)  # warm-up: the page cache and our decode path
        ProjectionRunner(ALL).run(store.iter_events(0, min(n, 10_000)))
        times: dict[str, list[float]] = {"ours": [], "raw": []}
        for r, name in interleave(("ours", "raw"), sizes.replay_rounds):
            start = time.perf_counter()
            done = replay_all(store)[0] if name == "ours" else raw_scan(path)
            times[name].append(time.perf_counter() - start)
            assert done == n, f"{name} read {done} of {n} events"
            log(f"  replay round {r + 1}: {name} {times[name][-1]:.2f} s")
        ours_s, raw_s = median(times["ours"]), median(times["raw"])
        ratio = raw_s / ours_s
        met = ratio >= 0.3
        result = Result(
            2,
            "Replay through all projections vs a raw `SELECT data` + `json.loads` scan (SQLite)",
            f"{fmt_rate(n / ours_s)} ev/s ({ours_s:.2f} s)",
            f"{fmt_rate(n / raw_s)} ev/s ({raw_s:.2f} s)",
            f"{ratio:.2f}×",
            "≥ 0.3×",
            met,
            f"{sizes.replay_rounds} of each",
            [
                f"Log: {n:,} events of the realistic mix (`ledger_bench.log.generate_log`, {counts['sessions']:,} "
                f"sessions), generated in {gen_s:.1f} s. Ours: `ProjectionRunner(ALL).run(store.iter_events())` "
                f"({', '.join(p.name for p in ALL)}); raw: `ledger_bench.replay.raw_scan`.",
                f"Per round: ours {per_round(times['ours'], lambda s: f'{s:.2f} s')}; raw "
                f"{per_round(times['raw'], lambda s: f'{s:.2f} s')}; per event ours {fmt_us(ours_s / n)}, raw "
                f"{fmt_us(raw_s / n)}.",
            ],
        )
        if profile == "all" or (profile == "missed" and not met):
            k = min(n, sizes.profile_events)
            log(f"  replay: cProfile of the replay of {k:,} events")
            result.profiles.append(
                cprofile_summary(
                    lambda: ProjectionRunner(ALL).run(store.iter_events(0, k)),
                    f"replay of the first {k:,} events through all projections, in this process",
                )
            )
    finally:
        store.engine.dispose()
    return result


# 3 and 4 ------------------------------------------------------------------------------------------------------------
def initialize_imports(command: list[str], env: dict[str, str]) -> str:
    """``-X importtime`` lines a server wrote up to its ``initialize`` answer (imports still running after the
    answer are not what the client waited for)."""
    proc = subprocess.Popen(
        [command[0], "-X", "importtime", *command[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")))  # type: ignore[union-attr]
    reader.start()
    proc.stdin.write(json.dumps(INITIALIZE) + "\n")
    proc.stdin.flush()
    proc.stdout.readline()
    upto = len(lines)
    proc.stdin.close()
    proc.wait(timeout=60)
    reader.join()
    proc.stdout.close()
    proc.stderr.close()
    return "".join(lines[:upto])


def startup(tmp: Path, sizes: Sizes, profile: str) -> list[Result]:
    home = tmp / "startup"
    home.mkdir()
    env = clean_env({"LEDGER_HOME": str(home)})
    ours = [sys.executable, "-m", "api", "mcp", "--agent", "bench"]
    minimal = [sys.executable, "-c", MINIMAL]
    help_ = [sys.executable, "-m", "api", "--help"]
    # warm-up: creates the ledger (later runs start on an existing one) and writes the bytecode caches
    answer_initialize(ours, env)
    answer_initialize(minimal, env)
    wall(help_, env)
    times: dict[str, list[float]] = {"ours": [], "minimal": [], "help": [], "call": []}
    for r, name in interleave(("ours", "minimal", "help", "call"), sizes.startup_runs):
        if name == "help":
            times[name].append(wall(help_, env))
        elif name == "call":
            times[name].append(answer_first_call(ours, env))
        else:
            times[name].append(answer_initialize(ours if name == "ours" else minimal, env))
        if name == "help" and times["ours"] and times["minimal"]:
            log(f"  start-up round {r + 1}: mcp {times['ours'][-1]:.2f} s, minimal {times['minimal'][-1]:.2f} s")
    o, m, h = median(times["ours"]), median(times["minimal"]), median(times["help"])
    secs = lambda s: f"{s:.3f} s"  # noqa: E731
    mcp = Result(
        3,
        "`compliance-ledger mcp` answers `initialize` vs a minimal MCP SDK stdio server",
        f"{o:.3f} s",
        f"{m:.3f} s (minimal server)",
        f"{o / m:.2f}×",
        "≤ 1.5×",
        o / m <= 1.5,
        f"{sizes.startup_runs} fresh processes each",
        [
            "Exec to the `initialize` answer on stdout (`bench_startup.answer_initialize`); ours starts on an existing "
            "SQLite ledger. The minimal server: the SDK's `MCPServer` with one no-op tool "
            "(`bench_startup.MINIMAL`).",
            f"Per round: ours {per_round(times['ours'], secs)}; minimal {per_round(times['minimal'], secs)}.",
            "Ours opens the ledger (and clocks in) after its `initialize` answer; exec to the answer of the first "
            f"`tools/call` (`task_list`, `bench_startup.answer_first_call`): {secs(median(times['call']))} "
            f"(per round: {per_round(times['call'], secs)}).",
        ],
    )
    help_row = Result(
        4,
        "`compliance-ledger --help`",
        f"{h:.3f} s",
        "—",
        f"{h:.3f} s",
        "≤ 0.3 s",
        h <= 0.3,
        f"{sizes.startup_runs} fresh processes",
        [f"`python -m api --help`, exec to exit. Per round: {per_round(times['help'], secs)}."],
    )
    if profile == "all" or (profile == "missed" and not mcp.met):
        log("  mcp: -X importtime, ours and the minimal server")
        summary = importtime_summary(
            initialize_imports(ours, env),
            "`compliance-ledger mcp` up to its `initialize` answer",
            baseline=initialize_imports(minimal, env),
        )
        mcp.profiles.append(summary)
    if profile == "all" or (profile == "missed" and not help_row.met):
        log("  --help: -X importtime")
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "api", "--help"], env=env, capture_output=True, text=True
        ).stderr
        help_row.profiles.append(importtime_summary(err, "`compliance-ledger --help`"))
        help_row.profiles.append(
            cprofile_process(["-m", "api", "--help"], env, "`compliance-ledger --help`, the whole process")
        )
    return [mcp, help_row]


# 5 ------------------------------------------------------------------------------------------------------------------
def serve(tmp: Path, sizes: Sizes, profile: str) -> Result:
    """One client: search + assert against ``serve`` vs posting the same number of bodies to a no-op FastAPI app
    under the same uvicorn (``bench_serve``)."""
    home = tmp / "serve"
    home.mkdir()
    env = clean_env({**BM25_ONLY, "LEDGER_HOME": str(home), "LEDGER_RATE_LIMIT": "0"})
    seed(home, env)
    ports = {"ours": free_port(), "noop": free_port()}
    bodies = tmp / "serve-bodies.json"
    commands = {
        "ours": [sys.executable, "-m", "api", "serve", "--port", str(ports["ours"])],
        "noop": [sys.executable, "-c", SAME_BODIES_APP, str(ports["noop"]), str(bodies)],
    }
    ready = {"ours": "/health", "noop": "/docs"}
    runs: dict[str, list[float]] = {"ours": [], "noop": []}
    cpu: dict[str, list[float]] = {"ours": [], "noop": []}
    lat: dict[str, list[float]] = {"ours": [], "noop": []}
    with contextlib.ExitStack() as servers:
        pids = {}
        for name in ("ours", "noop"):
            if name == "noop":
                capture_bodies(ports["ours"], bodies)
            url = f"http://127.0.0.1:{ports[name]}{ready[name]}"
            pids[name] = servers.enter_context(running(commands[name], env, url, stop_timeout_s=30)).pid
        for name in ("ours", "noop"):  # warm-up: first requests, imports done lazily, caches
            measure(ports[name], pids[name], True, 1, min(1.0, sizes.serve_seconds))
        for r, name in interleave(("ours", "noop"), sizes.serve_rounds):
            run = measure(ports[name], pids[name], True, 1, sizes.serve_seconds)
            runs[name].append(run.rate)
            lat[name].extend(run.latencies)
            if run.server_cpu is not None:
                cpu[name].append(run.server_cpu)
            log(f"  serve round {r + 1}: {name} {run.rate:,.0f} req/s")
        ratio = median(runs["ours"]) / median(runs["noop"])
        met = ratio >= 0.6
        result = Result(
            5,
            "`serve`, one client, search + assert vs a no-op FastAPI app with the same bodies under the same uvicorn",
            f"{median(runs['ours']):,.0f} req/s",
            f"{median(runs['noop']):,.0f} req/s (no-op app)",
            f"{ratio:.2f}×",
            "≥ 0.6×",
            met,
            f"{sizes.serve_rounds} × {sizes.serve_seconds:g} s each",
            [
                "`bench_serve.measure` with one httpx client (search BM25 only, rate limit off, 500 memory "
                "blocks; the same client code on both sides): it clocks in, then posts `/memory/search` then "
                "`/compliance/assert` per loop, both counted as requests. The no-op app answers the same paths "
                "with the bodies `serve` answered (captured once before the rounds) and does nothing else; both "
                f"under {accelerators()}.",
                f"Per round: ours {per_round(runs['ours'], lambda v: f'{v:,.0f}')}; no-op "
                f"{per_round(runs['noop'], lambda v: f'{v:,.0f}')} req/s. p50 per request: ours "
                f"{ms(percentile(lat['ours'], 50))}, no-op {ms(percentile(lat['noop'], 50))}. Server CPU per "
                "request: ours "
                + (f"{ms(median(cpu['ours']))}" if cpu["ours"] else "—")
                + ", no-op "
                + (f"{ms(median(cpu['noop']))}" if cpu["noop"] else "—")
                + ".",
            ],
        )
        if profile == "all" or (profile == "missed" and not met):
            log("  serve: py-spy on the serve process, one client")
            with py_spy(pids["ours"]) as raw:
                measure(ports["ours"], pids["ours"], True, 1, sizes.profile_seconds)
            result.profiles.append(
                py_spy_summary(
                    raw, f"the `serve` process under one client (search + assert) for {sizes.profile_seconds:g} s"
                )
            )
    return result


# 6 ------------------------------------------------------------------------------------------------------------------
def coldstart(tmp: Path, sizes: Sizes, profile: str) -> Result:
    """A fresh process's first compliance report and first recall on a big ledger vs a small one, snapshots
    written (``bench_coldstart.run_child``)."""
    big, small = sizes.cold_events
    homes: dict[int, tuple[Path, str]] = {}
    built: dict[int, float] = {}
    for n in (big, small):
        home = tmp / f"cold-{n}"
        home.mkdir()
        db = home / "ledger.db"
        log(f"  cold start: building a ledger of {n:,} events")
        t0 = time.perf_counter()
        build(db, n)
        url = f"sqlite:///{db}"
        rebuild_snapshots(home, url)
        built[n] = time.perf_counter() - t0
        homes[n] = (home, url)
    keys = [(kind, n) for kind in ("report", "recall") for n in (big, small)]
    for kind, n in keys:  # warm-up: bytecode caches, the page cache
        run_child(kind, homes[n][0], homes[n][1], True)
    samples: dict[tuple[str, int], list[float]] = {key: [] for key in keys}
    for r, (kind, n) in interleave(keys, sizes.cold_runs):
        samples[(kind, n)].append(run_child(kind, homes[n][0], homes[n][1], True)["wall_s"])
        log(f"  cold start round {r + 1}: {kind} at {n:,} {samples[(kind, n)][-1]:.2f} s")
    med = {key: median(v) for key, v in samples.items()}
    ratios = {kind: med[(kind, big)] / med[(kind, small)] for kind in ("report", "recall")}
    met = all(r <= 1.5 for r in ratios.values())
    secs = lambda s: f"{s:.2f} s"  # noqa: E731
    result = Result(
        6,
        f"First report / recall of a new process (opened as `serve` opens it) at {big:,} vs {small:,} events",
        f"{med[('report', big)]:.2f} s / {med[('recall', big)]:.2f} s",
        f"{med[('report', small)]:.2f} s / {med[('recall', small)]:.2f} s",
        f"{ratios['report']:.2f}× / {ratios['recall']:.2f}×",
        "≤ 1.5× (hold it)",
        met,
        f"{sizes.cold_runs} fresh processes each",
        [
            "Whole process, exec to answer (`bench_coldstart.run_child`: `open_ledger`, as `serve` does at start, "
            "then the first `compliance_report()` or `recall()`; BM25 only; snapshots written by "
            "`rebuild_snapshots`, `LEDGER_SNAPSHOT_EVERY_EVENTS=10000`).",
            f"Ledgers built with `ledger_bench.log.build` and `rebuild_snapshots`: {big:,} events in "
            f"{built[big]:.0f} s, {small:,} in {built[small]:.0f} s.",
            "Per round: "
            + "; ".join(f"{kind} at {n:,} {per_round(samples[(kind, n)], secs)}" for kind, n in keys)
            + ".",
        ],
    )
    if profile == "all" or (profile == "missed" and not met):
        kind = max(ratios, key=lambda k: ratios[k])
        log(f"  cold start: cProfile of a fresh process's first {kind} at {big:,}")
        env = clean_env({**BM25_ONLY, "LEDGER_SNAPSHOT_EVERY_EVENTS": "10000"})
        result.profiles.append(
            cprofile_child(
                CHILD,
                [kind, str(homes[big][0]), homes[big][1]],
                env,
                f"a fresh process's first {kind} at {big:,} events (imports included)",
            )
        )
    return result


# 7 ------------------------------------------------------------------------------------------------------------------
def append(tmp: Path, sizes: Sizes, profile: str) -> Result:
    """One event per transaction through ``SqlEventStore.append`` vs raw sqlite3 writing the same row
    (``ledger_bench.single.append_pair``)."""
    pair = append_pair(tmp, "limits")
    try:
        rates = interleaved_rates(
            {"ours": pair.ours, "raw": pair.raw},
            per_round=sizes.append_per_round,
            rounds=sizes.append_rounds,
            warmup=sizes.append_warmup,
            on_round=lambda r: log(f"  appends round {r}/{sizes.append_rounds}"),
        )
        total = sizes.append_warmup + sizes.append_per_round * sizes.append_rounds
        assert pair.store.head()[0] == total, "ours did not append every event"
        ours_r, raw_r = median(rates["ours"]), median(rates["raw"])
        ratio = ours_r / raw_r
        met = ratio >= 0.75
        result = Result(
            7,
            "Append, one event per transaction, vs raw sqlite3 writing the same row (WAL, synchronous=FULL)",
            f"{fmt_rate(ours_r)} ev/s ({fmt_us(1 / ours_r)})",
            f"{fmt_rate(raw_r)} ev/s ({fmt_us(1 / raw_r)})",
            f"{ratio:.2f}×",
            "≥ 0.75×",
            met,
            f"{sizes.append_rounds} × {sizes.append_per_round} appends",
            [
                "Ours: `SqlEventStore.append(stream, version, [MemorySearched], meta)` across 64 streams; raw: "
                "`BEGIN IMMEDIATE`, read the last position and hash, `INSERT` the same row into a table with the "
                "store's schema and indexes, `COMMIT` (no JSON encoding or hashing in Python).",
                f"Per round: ours {per_round(rates['ours'], fmt_rate)}; raw {per_round(rates['raw'], fmt_rate)} "
                f"ev/s; per append, ours minus raw: {(1 / ours_r - 1 / raw_r) * 1e6:,.0f} µs.",
            ],
        )
        if profile == "all" or (profile == "missed" and not met):
            k = sizes.profile_appends
            log(f"  appends: cProfile of {k} appends")

            def appends() -> None:
                for _ in range(k):
                    pair.ours()

            result.profiles.append(cprofile_summary(appends, f"{k} appends, one event each, in this process"))
    finally:
        pair.close()
    return result
