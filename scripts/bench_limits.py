#!/usr/bin/env python
"""Close to the limit (issue 28): seven ratios measured in one run, each against a baseline doing the same work.

Run from the repository root::

    .venv/bin/python scripts/bench_limits.py            # full sizes; writes its section of docs/BENCHMARKS.md
                                                        # (estimated 8-12 minutes on 2 cores, of which building
                                                        # the 300k-event ledger 1-2: 107 s under load 4.5)
    .venv/bin/python scripts/bench_limits.py --quick    # tiny sizes, a smoke run of a minute or two; prints it

1. 16 concurrent writers vs one (SQLite, one process, group commit): ≥ 4×, p99 ≤ 50 ms.
2. Replay through all projections vs a raw ``SELECT data`` + ``json.loads`` scan: ≥ 0.3×.
3. ``compliance-ledger mcp`` answering ``initialize`` vs a minimal MCP SDK stdio server: ≤ 1.5×.
4. ``compliance-ledger --help``: ≤ 0.3 s.
5. ``serve``, one client, search + assert vs a no-op FastAPI app, same bodies, same uvicorn: ≥ 0.6× (req/s).
6. First report / recall of a new process at 300k vs 10k events (snapshots written): ≤ 1.5×.
7. Append, one event per transaction, vs raw sqlite3 writing the same row: ≥ 0.75×.

Every ratio is the median of interleaved rounds; the load average is recorded at the start and the end, and the
commit measured. A row that misses its target gets a profile, summarised under the table (top functions by own
time, our functions by inclusive time, shares of a few named stages): py-spy (``[dev]`` extra) for the writer
threads and the ``serve`` process, cProfile for replay, appends and the cold start, ``python -X importtime`` for
start-up. ``--profile all`` profiles every row, ``--profile none`` none.

``PYTHONDONTWRITEBYTECODE`` is cleared for every process this script starts (a Python process started with it
compiles every module it imports, at each start, which the start-up rows would measure); the section says whether
it was set. The measures are in ``scripts/limits_bench/``.
"""

from __future__ import annotations

import sys

import benchkit  # noqa: F401  (puts this checkout first on sys.path)
from limits_bench.run import main

if __name__ == "__main__":
    sys.exit(main(description=__doc__))
