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

With ``--tlog`` (issue 24): appends with the transparency-log tree and the row authenticators against the same
store built without them (``_tlog=False``), 1 and 16 writers, SQLite and PostgreSQL, interleaved; the gate's read
(``load_stream`` of a 50-event session) with and without the authenticator check; an inclusion proof at 1M leaves
against 10k. Targets: appends with ≥ 0.9× without; the proof at 1M ≤ 2× at 10k. It writes its own section.
The parts are in ``scripts/writers_bench/``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchkit import BENCHMARKS_MD, docs
from writers_bench.processes import measure_processes
from writers_bench.report import section
from writers_bench.threads import measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short slices; print instead of writing")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-processes", action="store_true", help="no cross-process rows")
    parser.add_argument("--tlog", action="store_true", help="the tree and authenticators' cost (its own section)")
    parser.add_argument("--rounds", type=int, default=None, help="--tlog: interleaved rounds (default 5)")
    args = parser.parse_args(argv)
    if args.tlog:
        return tlog_main(args)
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
        docs.write_section(BENCHMARKS_MD, docs.WRITERS, text)
    print(text)
    return 0


def tlog_main(args: argparse.Namespace) -> int:
    from benchkit.env import git_revision
    from writers_bench import tlog
    from writers_bench.tlog_report import section as tlog_section

    seconds, rounds = (0.5, 1) if args.quick else (3.0, args.rounds or 5)
    backends = ["sqlite"] + ([] if args.skip_postgres else ["postgresql"])
    names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
    t0, start = time.perf_counter(), tlog.load_average()
    appends, gate, proofs = {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="ledger-tlog-") as tmp:
        for backend in backends:
            print(f"{names[backend]}: appends ...", file=sys.stderr, flush=True)
            appends[names[backend]] = tlog.measure_appends(backend, Path(tmp), seconds, rounds)
            print(f"{names[backend]}: the gate's read ...", file=sys.stderr, flush=True)
            gate[names[backend]] = tlog.measure_gate_read(backend, Path(tmp), rounds)
            print(f"{names[backend]}: proofs at 10k and 1M leaves ...", file=sys.stderr, flush=True)
            proofs[names[backend]] = tlog.measure_proofs(backend, Path(tmp), rounds)
        print("SQLite: commit cost of the two more tables ...", file=sys.stderr, flush=True)
        pages = tlog.measure_commit_pages(Path(tmp), rounds)
    text = tlog_section(
        appends,
        gate,
        proofs,
        pages,
        seconds,
        rounds,
        (start, tlog.load_average()),
        time.perf_counter() - t0,
        git_revision(),
    )
    if not args.quick:
        docs.write_section(BENCHMARKS_MD, docs.TLOG, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
