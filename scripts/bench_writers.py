#!/usr/bin/env python
"""Concurrent writers: events/s and latency of 1 and 16 threads appending, with and without group commit, and
of several processes appending to one SQLite file, with the fair write lock and with SQLite's busy handler.

Run from the repository root::

    .venv/bin/python scripts/bench_writers.py            # SQLite and PostgreSQL, writes its docs/BENCHMARKS.md section
    .venv/bin/python scripts/bench_writers.py --quick    # short slices; prints the section

Each writer is a thread of this process appending one event per call to a stream of its own (its own
``expected_version``, a real hash-chained append through ``SqlEventStore.append``). The baseline is the same
store with ``group_limit=1`` (every append its own transaction and fsync, as before group commit), measured in
the same run, interleaved round by round. Targets (issue 11): 16 writers ≥ 2.5× one writer's events/s on
SQLite and ≥ 2× on PostgreSQL, p99 ≤ 50 ms.

Across processes: worker processes (started once, ``spawn``) each run threads appending the same way to one
SQLite file, with the fair lock (``<db>.writelock``, the default) and with ``_fair_lock=False`` (SQLite's busy
handler alone, as before), interleaved round by round; one process with one thread is the baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import _bench_util  # noqa: E402

from ledger.core.errors import StoreBusy  # noqa: E402
from ledger.core.events import MemorySearched, SessionStarted  # noqa: E402
from ledger.core.storage import MAX_GROUP, SqlEventStore, make_engine  # noqa: E402

PG_URL = os.environ.get("LEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
MARKER = "\n## Concurrent writers (scripts/bench_writers.py)"
META = {"agent": "bench", "source": "cli"}


def run_writers(
    store: SqlEventStore,
    writers: int,
    ready: Callable[[], object],
    start: Any,
    stop: Any,
    busy: list[int] | None = None,
) -> list[float]:
    """``writers`` threads each create a stream of their own, call ``ready`` once all have, then from
    ``start.wait()`` until ``stop`` is set append one event per call; return every append's latency.

    ``busy`` (cross-process runs) counts StoreBusy refusals per thread: the append is tried again, and the
    time it waited counts in its latency."""
    latencies: list[list[float]] = [[] for _ in range(writers)]
    all_set = threading.Barrier(writers, action=ready)

    def work(n: int) -> None:
        sid = uuid.uuid4().hex
        stream = f"session:{sid}"
        store.append(stream, 0, [SessionStarted(session_id=sid, agent="bench", role="dev")], META)
        version = 1
        mine = latencies[n]
        all_set.wait()
        start.wait()
        while not stop.is_set():
            event = MemorySearched(session_id=sid, query="q", limit=10, result_ids=[], count=0)
            t0 = time.perf_counter()
            while True:
                try:
                    store.append(stream, version, [event], META)
                    break
                except StoreBusy:
                    if busy is None or stop.is_set():
                        raise
                    busy[n] += 1
            mine.append(time.perf_counter() - t0)
            version += 1

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [x for xs in latencies for x in xs]


def slice_run(store: SqlEventStore, writers: int, seconds: float) -> tuple[float, list[float]]:
    """``writers`` threads append for ``seconds``; return events/s and every append's latency."""
    ready, start, stop = threading.Event(), threading.Event(), threading.Event()
    result: list[list[float]] = []
    runner = threading.Thread(target=lambda: result.append(run_writers(store, writers, ready.set, start, stop)))
    runner.start()
    ready.wait()
    start.set()
    t0 = time.perf_counter()
    time.sleep(seconds)  # the measuring window of a benchmark, not a wait for readiness
    stop.set()
    runner.join()
    elapsed = time.perf_counter() - t0
    return len(result[0]) / elapsed, result[0]


# --- several processes on one SQLite file ----------------------------------------------------------------------


def process_worker(start: Any, stop: Any, conn: multiprocessing.connection.Connection) -> None:
    """A worker process: for each ``(url, fair, threads)`` it gets, open a store on ``url`` and run ``threads``
    writers between the shared ``start`` and ``stop`` events; send back the latencies and StoreBusy count."""
    while True:
        message = conn.recv()
        if message is None:
            conn.close()
            return
        url, fair, threads = message
        store = SqlEventStore(make_engine(url), _fair_lock=fair)
        transactions, groups = TransactionTimes(store), GroupCount(store)
        busy = [0] * threads
        try:
            latencies = run_writers(store, threads, lambda: conn.send("ready"), start, stop, busy)
            conn.send((latencies, sum(busy), transactions.seconds, (groups.groups, groups.appends)))
        finally:
            store.dispose()


class TransactionTimes:
    """Records how long each of a store's write transactions ran, from after BEGIN IMMEDIATE to after COMMIT (the
    time the write lock is held for the work itself; wraps the store's ``write_transaction``)."""

    def __init__(self, store: SqlEventStore) -> None:
        self.seconds: list[float] = []
        inner = store.write_transaction

        @contextlib.contextmanager
        def timed(*args: Any) -> Iterator[Any]:
            with inner(*args) as cur:
                t0 = time.perf_counter()
                yield cur
            self.seconds.append(time.perf_counter() - t0)

        store.write_transaction = timed  # type: ignore[method-assign]


class Workers:
    """Worker processes started once (``spawn``) and given one configuration per slice."""

    def __init__(self, size: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.start, self.stop = ctx.Event(), ctx.Event()
        self.procs: list[Any] = []
        self.conns: list[multiprocessing.connection.Connection] = []
        for _ in range(size):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=process_worker, args=(self.start, self.stop, child_end), daemon=True)
            proc.start()
            child_end.close()
            self.procs.append(proc)
            self.conns.append(parent_end)

    def slice(self, url: str, fair: bool, processes: int, threads: int, seconds: float) -> dict[str, Any]:
        self.start.clear()
        self.stop.clear()
        used = self.conns[:processes]
        for conn in used:
            conn.send((url, fair, threads))
        for conn in used:
            assert conn.recv() == "ready"  # every thread of every process has its stream and waits for start
        self.start.set()
        t0 = time.perf_counter()
        time.sleep(seconds)  # the measuring window of a benchmark, not a wait for readiness
        self.stop.set()
        results = [conn.recv() for conn in used]
        elapsed = time.perf_counter() - t0
        latencies = [x for lat, _, _, _ in results for x in lat]
        return {
            "rate": len(latencies) / elapsed,
            "latencies": latencies,
            "busy": sum(b for _, b, _, _ in results),
            "transactions": [x for _, _, txn, _ in results for x in txn],
            "groups": [sum(g[0] for _, _, _, g in results), sum(g[1] for _, _, _, g in results)],
        }

    def close(self) -> None:
        for conn in self.conns:
            conn.send(None)
        for proc in self.procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
        for conn in self.conns:
            conn.close()


# (processes, threads per process); the first is the baseline
PROCESS_CONFIGS = ((1, 1), (8, 1), (4, 4))


def measure_processes(tmp: Path, seconds: float, rounds: int) -> dict[tuple[bool, int, int], dict[str, float]]:
    """Per (fair, processes, threads): median events/s over rounds, p50/p99/max of all latencies, StoreBusy, and
    the appends per commit and the median time of a write transaction."""
    urls = {}
    for fair in (True, False):
        url = f"sqlite:///{tmp / ('processes-fair.db' if fair else 'processes-busy.db')}"
        store = SqlEventStore(make_engine(url))
        store.create_schema()
        store.dispose()
        urls[fair] = url
    workers = Workers(max(p for p, _ in PROCESS_CONFIGS))
    rates: dict[tuple[bool, int, int], list[float]] = {}
    lats: dict[tuple[bool, int, int], list[float]] = {}
    busy: dict[tuple[bool, int, int], int] = {}
    transactions: dict[tuple[bool, int, int], list[float]] = {}
    groups: dict[tuple[bool, int, int], list[int]] = {}
    try:
        for r in range(rounds):  # interleaved: every configuration once per round, the order turning
            order = [(fair, p, t) for p, t in PROCESS_CONFIGS for fair in (True, False)]
            for key in order[r % len(order) :] + order[: r % len(order)]:
                fair, processes, threads = key
                got = workers.slice(urls[fair], fair, processes, threads, seconds)
                rates.setdefault(key, []).append(got["rate"])
                lats.setdefault(key, []).extend(got["latencies"])
                busy[key] = busy.get(key, 0) + got["busy"]
                transactions.setdefault(key, []).extend(got["transactions"])
                counted = groups.setdefault(key, [0, 0])
                counted[0] += got["groups"][0]
                counted[1] += got["groups"][1]
    finally:
        workers.close()
    return {
        key: {
            "rate": statistics.median(rates[key]),
            "p50_ms": _bench_util.percentile(lats[key], 50) * 1000,
            "p99_ms": _bench_util.percentile(lats[key], 99) * 1000,
            "max_ms": max(lats[key]) * 1000,
            "busy": busy[key],
            "txn_ms": statistics.median(transactions[key]) * 1000,
            "per_group": groups[key][1] / max(1, groups[key][0]),
        }
        for key in rates
    }


def pg_schema_url(schema: str) -> str:
    return f"{PG_URL}{'&' if '?' in PG_URL else '?'}options=-csearch_path%3D{schema}"


def open_store(backend: str, tmp: Path, group_limit: int) -> tuple[SqlEventStore, str | None]:
    if backend == "sqlite":
        engine = make_engine(f"sqlite:///{tmp / f'writers-{group_limit}.db'}")
        schema = None
    else:
        import psycopg

        schema = f"bench_writers_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        engine = make_engine(pg_schema_url(schema))
    store = SqlEventStore(engine, group_limit=group_limit)
    store.create_schema()
    return store, schema


def drop_schema(schema: str | None) -> None:
    if schema:
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


class GroupCount:
    """Counts the groups a store commits and the appends in them (wraps the store's ``_commit_queued``)."""

    def __init__(self, store: SqlEventStore) -> None:
        self.groups = self.appends = 0
        inner = store._commit_queued

        def counted() -> list[Any]:
            group = inner()
            self.groups += 1
            self.appends += len(group)
            return group

        store._commit_queued = counted  # type: ignore[method-assign]


def measure(backend: str, tmp: Path, seconds: float, rounds: int) -> dict[tuple[int, int], dict[str, float]]:
    """Per (group_limit, writers): median events/s over rounds, p50/p99 of all latencies, and where the time
    went: appends per commit, and this process's CPU time per append (all threads; the GIL lets about one
    core run Python at a time)."""
    stores = {limit: open_store(backend, tmp, limit) for limit in (1, MAX_GROUP)}
    counts = {limit: GroupCount(store) for limit, (store, _) in stores.items()}
    rates: dict[tuple[int, int], list[float]] = {}
    lats: dict[tuple[int, int], list[float]] = {}
    cpu: dict[tuple[int, int], list[float]] = {}
    wall: dict[tuple[int, int], list[float]] = {}
    groups: dict[tuple[int, int], list[int]] = {}
    try:
        for _ in range(rounds):  # interleaved: every configuration once per round
            for writers in (1, 16):
                for limit, (store, _) in stores.items():
                    key = (limit, writers)
                    count, before = counts[limit], (counts[limit].groups, counts[limit].appends)
                    c0, w0 = time.process_time(), time.perf_counter()
                    rate, latency = slice_run(store, writers, seconds)
                    cpu.setdefault(key, []).append(time.process_time() - c0)
                    wall.setdefault(key, []).append(time.perf_counter() - w0)
                    rates.setdefault(key, []).append(rate)
                    lats.setdefault(key, []).extend(latency)
                    got = groups.setdefault(key, [0, 0])
                    got[0] += count.groups - before[0]
                    got[1] += count.appends - before[1]
    finally:
        for store, schema in stores.values():
            store.dispose()
            drop_schema(schema)
    return {
        key: {
            "rate": statistics.median(rates[key]),
            "p50_ms": _bench_util.percentile(lats[key], 50) * 1000,
            "p99_ms": _bench_util.percentile(lats[key], 99) * 1000,
            # the writers' own first appends (stream creation) are in the groups, not in the latencies
            "per_group": groups[key][1] / max(1, groups[key][0]),
            "cpu_us": sum(cpu[key]) / max(1, len(lats[key])) * 1e6,
            "cpu_share": sum(cpu[key]) / sum(wall[key]),
        }
        for key in rates
    }


def time_note(backend: str, one: dict[str, float], many: dict[str, float]) -> list[str]:
    """A paragraph per backend: the CPU ceiling of 16 writers against one writer's rate, and for a missed target
    by how much and where the time went (all from the same runs)."""
    goal = 2.5 if backend == "SQLite" else 2.0
    ratio = many["rate"] / one["rate"]
    ceiling = 1e6 / many["cpu_us"]
    text = (
        f"{backend}, group commit: at 16 writers a commit took {many['per_group']:.1f} appends and this process"
        f" spent {many['cpu_us']:,.0f} µs of CPU per append ({many['cpu_share']:.0%} of a core), a ceiling of"
        f" about {ceiling:,.0f} appends/s for one core of Python: {ceiling / one['rate']:.2f}× this run's one writer"
        f" ({1e6 / one['rate']:,.0f} µs per append, {one['cpu_us']:,.0f} µs of it CPU). The 16 / 1 ratio therefore"
        " rises with the cost of a commit's fsync on the day: the slower the disk, the more a shared commit saves."
        f" At this CPU cost, ≥ {goal:g}× holds only while one writer is slower than about {ceiling / goal:,.0f}"
        f" appends/s ({goal * 1e6 / ceiling:,.0f} µs per append); on a faster disk the 16 writers are bound by"
        " the CPU below the target."
    )
    short = []
    if ratio < goal:
        short.append(f"{ratio:.2f}× against ≥ {goal:g}× (short by {goal - ratio:.2f}×, i.e. {goal / ratio - 1:.0%})")
    if many["p99_ms"] > 50:
        short.append(f"p99 {many['p99_ms']:.1f} ms against ≤ 50 ms")
    if short:
        text = f"**{backend}: target missed** — {' and '.join(short)}. " + text
        if many["cpu_share"] >= 0.8:
            text += (
                " The 16 writers were bound by CPU under the GIL (each append's encoding, hashing, rows and"
                " result, and a thread wake-up per append), not by fsync."
            )
    return ["", text]


def section(
    results: dict[str, dict[tuple[int, int], dict[str, float]]],
    processes: dict[tuple[bool, int, int], dict[str, float]] | None,
    seconds: float,
    rounds: int,
) -> str:
    lines = [
        MARKER.strip(),
        "",
        f"Generated by `scripts/bench_writers.py`: threads of one process, one event per append, {rounds} interleaved",
        f"rounds of {seconds:g} s per configuration (median events/s; p50/p99 over every append). *Without*: the same",
        "store with `group_limit=1`, i.e. one transaction and fsync per append, as before group commit.",
        "",
        "| Backend | Group commit | 1 writer ev/s | 16 writers ev/s | 16 / 1 | p50 (16) | p99 (16) | Target | Met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, by in results.items():
        goal = 2.5 if backend == "SQLite" else 2.0
        for limit, label in ((1, "without"), (MAX_GROUP, "with")):
            one, many = by[(limit, 1)], by[(limit, 16)]
            ratio = many["rate"] / one["rate"]
            met = ratio >= goal and many["p99_ms"] <= 50
            lines.append(
                f"| {backend} | {label} | {one['rate']:,.0f} | {many['rate']:,.0f} | {ratio:.2f}× |"
                f" {many['p50_ms']:.1f} ms | {many['p99_ms']:.1f} ms |"
                + (f" ≥ {goal:g}×, p99 ≤ 50 ms | {'yes' if met else 'no'} |" if limit != 1 else " (baseline) | — |")
            )
    lines += [
        "",
        "Where the time goes (the same runs): appends per commit, and this process's CPU time per append over all",
        "its threads (with the share of one core it used; the GIL runs Python code on about one core at a time).",
        "",
        "| Backend | Group commit | Writers | Appends per commit | CPU per append | CPU used |",
        "|---|---|---|---|---|---|",
    ]
    for backend, by in results.items():
        for limit, label in ((1, "without"), (MAX_GROUP, "with")):
            for writers in (1, 16):
                row = by[(limit, writers)]
                lines.append(
                    f"| {backend} | {label} | {writers} | {row['per_group']:.1f} | {row['cpu_us']:,.0f} µs |"
                    f" {row['cpu_share']:.0%} of a core |"
                )
    for backend, by in results.items():
        lines += time_note(backend, by[(MAX_GROUP, 1)], by[(MAX_GROUP, 16)])
    if processes:
        base = processes[(True, *PROCESS_CONFIGS[0])]["rate"]
        lines += [
            "",
            "Several processes on one SQLite file (worker processes, each with its own store and group commit;",
            f"{rounds} interleaved rounds of {seconds:g} s). *Fair lock*: writers queue on `<db>.writelock` (flock),",
            "the default. *Busy handler*: the same store built with `_fair_lock=False`, so SQLite's sleeping busy",
            "handler alone decides who writes next, as before. Ratio against 1 process × 1 thread with the fair",
            "lock. A StoreBusy (a wait past the 5 s lock timeout) is retried and its wait counted in that append's",
            "latency.",
            "",
            "| Processes × threads | Lock | ev/s | vs 1 × 1 | p50 | p99 | max | StoreBusy | appends per commit |"
            " txn (median) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for processes_n, threads in PROCESS_CONFIGS:
            for fair in (True, False):
                row = processes[(fair, processes_n, threads)]
                lines.append(
                    f"| {processes_n} × {threads} | {'fair lock' if fair else 'busy handler'} | {row['rate']:,.0f} |"
                    f" {row['rate'] / base:.2f}× | {row['p50_ms']:.1f} ms | {row['p99_ms']:.1f} ms |"
                    f" {row['max_ms']:.0f} ms | {row['busy']:,.0f} | {row['per_group']:.1f} | {row['txn_ms']:.2f} ms |"
                )
        one_fair, one_busy = processes[(True, *PROCESS_CONFIGS[0])], processes[(False, *PROCESS_CONFIGS[0])]
        gap = abs(one_fair["rate"] - one_busy["rate"]) / min(one_fair["rate"], one_busy["rate"])
        notes = []
        for processes_n, threads in PROCESS_CONFIGS[1:]:
            fair, busy = processes[(True, processes_n, threads)], processes[(False, processes_n, threads)]
            notes.append(
                f"at {processes_n} × {threads} the fair lock's p99 is {fair['p99_ms']:.1f} ms against"
                f" {busy['p99_ms']:.1f} ms (max {fair['max_ms']:.0f} against {busy['max_ms']:.0f} ms), at"
                f" {fair['rate'] / busy['rate']:.0%} of the busy handler's events/s"
            )
        lines += [
            "",
            f"In this run {'; '.join(notes)}. The busy handler lets the process that just committed write again"
            " while the others sleep out their back-off (fewer hand-overs, long waits for the rest); the fair lock"
            " hands the file to the next process in line each time, which costs a wake-up of that process, and the"
            " other processes' threads keep running (taking their results, preparing their next appends) while one"
            " holds the lock, on the same cores: *txn* is the time from BEGIN IMMEDIATE to COMMIT, i.e. the lock"
            " held for the work itself. The two 1 × 1 rows do the same work (an uncontended fair lock is two"
            f" flock calls per commit), so the gap between them ({gap:.0%}) shows how noisy this run's disk was.",
        ]
    return "\n".join(lines) + "\n"


def write_section(text: str) -> None:
    _bench_util.write_section(ROOT / "docs" / "BENCHMARKS.md", MARKER, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short slices; print instead of writing")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-processes", action="store_true", help="no cross-process rows")
    args = parser.parse_args(argv)
    seconds, rounds = (0.5, 1) if args.quick else (4.0, 3)
    results: dict[str, dict[tuple[int, int], dict[str, float]]] = {}
    processes = None
    with tempfile.TemporaryDirectory(prefix="ledger-writers-") as tmp:
        print("SQLite ...", file=sys.stderr, flush=True)
        results["SQLite"] = measure("sqlite", Path(tmp), seconds, rounds)
        if not args.skip_processes:
            print("SQLite, several processes ...", file=sys.stderr, flush=True)
            processes = measure_processes(Path(tmp), seconds, rounds)
        if not args.skip_postgres:
            print("PostgreSQL ...", file=sys.stderr, flush=True)
            results["PostgreSQL"] = measure("postgresql", Path(tmp), seconds, rounds)
    text = section(results, processes, seconds, rounds)
    if not args.quick:
        write_section(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
