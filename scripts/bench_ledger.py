#!/usr/bin/env python
"""Benchmark the Compliance Ledger against raw drivers and the ``eventsourcing`` library; write the report.

Run from the repository root::

    .venv/bin/python scripts/bench_ledger.py            # full run (about 2-4 minutes on 2 cores)
    .venv/bin/python scripts/bench_ledger.py --quick    # smoke run with tiny sizes; prints the report

Every number in the report is measured by this run; every ratio is against a baseline measured in this run.
Nothing here is a test: there are no timed assertions, only sanity checks that each benchmark did the work it
claims (e.g. the replay folded every generated event, every timed assert_compliance returned PASS).
The benchmarks are the modules of ``scripts/ledger_bench/``, on the shared harness ``scripts/benchkit/``.
"""

from __future__ import annotations

import sys

import benchkit  # noqa: F401  (puts this checkout first on sys.path)
from ledger_bench.run import main

if __name__ == "__main__":
    sys.exit(main(description=__doc__))
