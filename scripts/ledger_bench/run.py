"""The command line of ``scripts/bench_ledger.py``: run each benchmark in turn (an error costs only its rows),
then print the report or write it as the top of docs/BENCHMARKS.md."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from benchkit import BENCHMARKS_MD, docs
from benchkit.env import environment

from ledger_bench.batch import bench_batch
from ledger_bench.fixtures import FULL, QUICK, console
from ledger_bench.mcp import bench_mcp
from ledger_bench.postgres import bench_pg, pg_not_measured
from ledger_bench.replay import bench_replay
from ledger_bench.report import Report, print_rows
from ledger_bench.single import bench_single


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes for a smoke run; prints the report instead of writing docs/BENCHMARKS.md",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write the report (default: docs/BENCHMARKS.md; with --quick: stdout)",
    )
    parser.add_argument("--skip-postgres", action="store_true", help="mark the PostgreSQL rows 'not measured'")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    output = args.output or (None if args.quick else BENCHMARKS_MD)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp_name:
        tmp = Path(tmp_name)
        report = Report(env=environment(tmp))
        console.log(f"temporary files in {tmp}; sizes: {'quick' if args.quick else 'full'}")
        sections: list[tuple[str, Callable[[], None]]] = [
            ("single-event appends", lambda: bench_single(tmp, sizes, report)),
            ("batches of 100", lambda: bench_batch(tmp, sizes, report)),
            ("replay", lambda: bench_replay(tmp, sizes, report)),
            ("assert_compliance over MCP", lambda: bench_mcp(tmp, sizes, report)),
        ]
        pg: Callable[[], None] = lambda: bench_pg(sizes, report)  # noqa: E731
        if args.skip_postgres:
            pg = lambda: pg_not_measured(report, "skipped (--skip-postgres)")  # noqa: E731
        sections.append(("PostgreSQL appends", pg))
        for name, run in sections:
            t0 = time.perf_counter()
            try:
                run()
            except Exception as exc:
                report.errors.append(f"{name}: {type(exc).__name__}: {exc} — its rows are missing from the table")
                traceback.print_exc(file=sys.stderr)
            console.log(f"  {name} took {time.perf_counter() - t0:.1f} s")
    text = report.render(args.quick, time.perf_counter() - started)
    print_rows(report)
    if output is None:
        print(text)
    else:
        # The sections the other benchmarks own stay as they are, after this one's.
        docs.write_head(output, text)
        console.log(f"wrote {output}")
    return 1 if report.errors else 0
