"""The command line of ``scripts/bench_limits.py``: run the measures in turn (an error costs only its rows), then
print the section or write it in docs/BENCHMARKS.md."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from benchkit import BENCHMARKS_MD, docs
from benchkit.env import environment

from limits_bench import measures
from limits_bench.measures import FULL, QUICK, Result, Sizes
from limits_bench.report import section

Measure = Callable[[Path, Sizes, str], "Result | list[Result]"]
MEASURES: list[tuple[str, tuple[int, ...], Measure]] = [
    ("writers", (1,), measures.writers),
    ("replay", (2,), measures.replay),
    ("start-up", (3, 4), measures.startup),
    ("serve", (5,), measures.serve),
    ("cold start", (6,), measures.coldstart),
    ("appends", (7,), measures.append),
]


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run; print instead of writing")
    parser.add_argument(
        "--profile",
        choices=("missed", "all", "none"),
        default="missed",
        help="which rows get a profile (default: those that miss their target)",
    )
    parser.add_argument("--only", default="", help="comma-separated row numbers to measure (default: all seven)")
    parser.add_argument(
        "--output", type=Path, default=None, help="write the section here (default: docs/BENCHMARKS.md)"
    )
    args = parser.parse_args(argv)
    only = {int(x) for x in args.only.split(",") if x.strip()}
    sizes = QUICK if args.quick else FULL
    # Processes started without it keep their bytecode caches; see scripts/bench_limits.py's docstring.
    was_set = os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None
    bytecode = (
        "`PYTHONDONTWRITEBYTECODE` was set in the calling environment and cleared for every process this run started"
        if was_set
        else "`PYTHONDONTWRITEBYTECODE` was not set; the processes this run started kept their bytecode caches"
    )
    started = time.perf_counter()
    results: list[Result] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ledger-limits-") as tmp_name:
        tmp = Path(tmp_name)
        env = environment(tmp)
        for name, rows, run in MEASURES:
            if only and not only & set(rows):
                continue
            print(f"{name} (row {', '.join(map(str, rows))}) ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                got = run(tmp, sizes, args.profile)
                results += got if isinstance(got, list) else [got]
            except Exception as exc:
                errors.append(f"{name} (row {', '.join(map(str, rows))}): {type(exc).__name__}: {exc}")
                traceback.print_exc(file=sys.stderr)
            print(f"  {name} took {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    text = section(results, errors, env, sizes, args.quick, time.perf_counter() - started, bytecode)
    output = args.output or (None if args.quick else BENCHMARKS_MD)
    if output is not None:
        docs.write_section(output, docs.LIMITS, text)
        print(f"wrote {output}", file=sys.stderr)
    print(text)
    return 1 if errors else 0
