#!/usr/bin/env python3
"""Memory recall/search latency at 10,000 and 100,000 blocks next to a raw FTS5 query, and one full curate.

Measures, in one run, on a real ledger in a temporary SQLite file (WAL, ``synchronous=FULL`` as configured),
created through ``api.bootstrap.initialise`` (the normal path, so the schema and its indexes are the product's):
  * the baseline: the service's own FTS5 query (same MATCH string, same ORDER BY, same LIMIT) run on a plain
    ``sqlite3`` connection to the same file — the irreducible cost of asking the index;
  * ``Ledger.search`` (limit 10) and ``Ledger.recall`` (attention frame, top_k 5, so 20 FTS candidates) in a
    session, recall without a session, and a queryless ``recall(frame="self")``; each timed call appends one
    event (one fsync), so a bare ``SqlEventStore.append`` of the event a search appends is timed as well;
  * where a search's time goes: its steps (index catch-up and its probe, FTS query, session load, append) timed
    apart on the current code, a cProfile of recalls, and the SQL the index catch-up issues with its query plans;
  * one manual ``Ledger.curate`` at the largest size, after 500 active hours: the decision + append, the live
    graph folding the curate event, and the FTS index applying it, each timed.
Target (the issue's): recall and search p50 ≤ 3× the raw query's p50 at the matching limit.
Results go to the "Memory (scripts/bench_memory.py)" section of docs/BENCHMARKS.md (replaced on each run).

    .venv/bin/python scripts/bench_memory.py              # 10,000 and 100,000 blocks (a few minutes)
    .venv/bin/python scripts/bench_memory.py --quick      # 2,000 and 10,000 blocks; prints, writes nothing
    .venv/bin/python scripts/bench_memory.py --sizes 5000 50000 --output /tmp/b.md
"""

from __future__ import annotations

import sys

import benchkit  # noqa: F401  (puts this checkout first on sys.path)
from memory_bench.run import main

if __name__ == "__main__":
    sys.exit(main(description=__doc__.splitlines()[0]))
