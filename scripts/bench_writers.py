#!/usr/bin/env python
"""Concurrent writers: events/s and latency of 1 and 16 threads appending, with and without group commit.

Run from the repository root::

    .venv/bin/python scripts/bench_writers.py            # SQLite and PostgreSQL, writes its docs/BENCHMARKS.md section
    .venv/bin/python scripts/bench_writers.py --quick    # short slices; prints the section

Each writer is a thread of this process appending one event per call to a stream of its own (its own
``expected_version``, a real hash-chained append through ``SqlEventStore.append``). The baseline is the same
store with ``group_limit=1`` (every append its own transaction and fsync, as before group commit), measured in
the same run, interleaved round by round. Targets (issue 11): 16 writers ≥ 2.5× one writer's events/s on
SQLite and ≥ 2× on PostgreSQL, p99 ≤ 50 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import _bench_util  # noqa: E402

from ledger.events import MemorySearched, SessionStarted  # noqa: E402
from ledger.storage import MAX_GROUP, SqlEventStore, make_engine  # noqa: E402

PG_URL = os.environ.get("LEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
MARKER = "\n## Concurrent writers (scripts/bench_writers.py)"
META = {"agent": "bench", "source": "cli"}


def slice_run(store: SqlEventStore, writers: int, seconds: float) -> tuple[float, list[float]]:
    """``writers`` threads append for ``seconds``; return events/s and every append's latency."""
    latencies: list[list[float]] = [[] for _ in range(writers)]
    barrier = threading.Barrier(writers + 1)
    stop = threading.Event()

    def work(n: int) -> None:
        sid = uuid.uuid4().hex
        stream = f"session:{sid}"
        store.append(stream, 0, [SessionStarted(session_id=sid, agent="bench", role="dev")], META)
        version = 1
        mine = latencies[n]
        barrier.wait()
        while not stop.is_set():
            event = MemorySearched(session_id=sid, query="q", limit=10, result_ids=[], count=0)
            t0 = time.perf_counter()
            store.append(stream, version, [event], META)
            mine.append(time.perf_counter() - t0)
            version += 1

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)  # the measuring window of a benchmark, not a wait for readiness
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    flat = [x for xs in latencies for x in xs]
    return len(flat) / elapsed, flat


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


def measure(backend: str, tmp: Path, seconds: float, rounds: int) -> dict[tuple[int, int], dict[str, float]]:
    """Per (group_limit, writers): median events/s over rounds, and p50/p99 of all latencies."""
    stores = {limit: open_store(backend, tmp, limit) for limit in (1, MAX_GROUP)}
    rates: dict[tuple[int, int], list[float]] = {}
    lats: dict[tuple[int, int], list[float]] = {}
    try:
        for _ in range(rounds):  # interleaved: every configuration once per round
            for writers in (1, 16):
                for limit, (store, _) in stores.items():
                    rate, latency = slice_run(store, writers, seconds)
                    rates.setdefault((limit, writers), []).append(rate)
                    lats.setdefault((limit, writers), []).extend(latency)
    finally:
        for store, schema in stores.values():
            store.dispose()
            drop_schema(schema)
    return {
        key: {
            "rate": statistics.median(rates[key]),
            "p50_ms": _bench_util.percentile(lats[key], 50) * 1000,
            "p99_ms": _bench_util.percentile(lats[key], 99) * 1000,
        }
        for key in rates
    }


def section(results: dict[str, dict[tuple[int, int], dict[str, float]]], seconds: float, rounds: int) -> str:
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
    return "\n".join(lines) + "\n"


def write_section(text: str) -> None:
    _bench_util.write_section(ROOT / "docs" / "BENCHMARKS.md", MARKER, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short slices; print instead of writing")
    parser.add_argument("--skip-postgres", action="store_true")
    args = parser.parse_args(argv)
    seconds, rounds = (0.5, 1) if args.quick else (4.0, 3)
    results: dict[str, dict[tuple[int, int], dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="ledger-writers-") as tmp:
        print("SQLite ...", file=sys.stderr, flush=True)
        results["SQLite"] = measure("sqlite", Path(tmp), seconds, rounds)
        if not args.skip_postgres:
            print("PostgreSQL ...", file=sys.stderr, flush=True)
            results["PostgreSQL"] = measure("postgresql", Path(tmp), seconds, rounds)
    text = section(results, seconds, rounds)
    if not args.quick:
        write_section(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
