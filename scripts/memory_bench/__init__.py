"""``scripts/bench_memory.py`` in parts: a synthetic corpus and its fill, recall/search latency against the raw
FTS5 query, where a call's time goes, one full curate, and the docs/BENCHMARKS.md section they make."""

import benchkit  # noqa: F401  (puts this checkout first on sys.path before any ledger import)
