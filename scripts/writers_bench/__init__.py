"""``scripts/bench_writers.py`` in parts: writer threads in this process (with and without group commit, SQLite
and PostgreSQL), writer processes on one SQLite file (fair lock and busy handler), and the section they make."""

import benchkit  # noqa: F401  (puts this checkout first on sys.path before any ledger import)
