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
The parts are in ``scripts/writers_bench/``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
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
        docs.write_section(BENCHMARKS_MD, docs.WRITERS, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
