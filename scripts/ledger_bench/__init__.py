"""``scripts/bench_ledger.py`` in parts: appends, replay, assert_compliance over MCP and PostgreSQL appends, each
against a baseline measured in the same run, and the top of docs/BENCHMARKS.md they make together."""

import benchkit  # noqa: F401  (puts this checkout first on sys.path before any ledger import)
