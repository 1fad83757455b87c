"""Shared fixtures: a real SQLite file and a real PostgreSQL schema per test.

PostgreSQL comes from ``LEDGER_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``).
When it cannot be reached the PostgreSQL tests are skipped on a developer machine, but they FAIL when
``CI`` or ``LEDGER_REQUIRE_POSTGRES`` is set, so CI can never pass without them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import hypothesis
import pytest

from api.bootstrap import initialise
from api.settings import Settings
from ledger.core import clock as _clock
from ledger.service import Ledger
from tests import go_support
from tests.anchor_support import git

# Hypothesis times each example (a 200 ms deadline) and its data generation (the too_slow health check): on a
# loaded machine that measures the machine, and one slow example fails the run as "flaky". Off for every
# property test; their example counts still bound them.
hypothesis.settings.register_profile("ledger", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow])
hypothesis.settings.load_profile("ledger")

# Hybrid search is on by default when the [semantic] extra is installed (it is in the dev install). The suite's
# tests pin full-text behaviour (query analysis, index versions, exact rankings), so ledgers they build search by
# BM25 alone; tests of hybrid search and consolidation ask for it (``semantic=True``), and share one loaded model.
os.environ.setdefault("LEDGER_SEMANTIC", "false")

# pytest-xdist's workers run with COLUMNS=80 and LINES=24 in their environment (execnet sets them), which a
# developer's pipe or CI's never has: the CLI would fold its records at 80 columns there and nowhere else. The
# suite runs as the single process does; tests of folding set COLUMNS themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)

PG_URL = os.environ.get("LEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REQUIRE_PG = bool(os.environ.get("CI") or os.environ.get("LEDGER_REQUIRE_POSTGRES"))


def _pg_reachable() -> str | None:
    import psycopg

    try:
        with psycopg.connect(PG_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return None
    except Exception as exc:  # any failure means "not reachable" here
        return str(exc).strip()


@pytest.fixture(scope="session")
def pg_server() -> str:
    problem = _pg_reachable()
    if problem:
        message = f"PostgreSQL at {PG_URL} is unreachable: {problem}"
        if REQUIRE_PG:
            pytest.fail(message + " (CI / LEDGER_REQUIRE_POSTGRES is set, so this is a failure)")
        pytest.skip(message)
    return PG_URL


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh schema on the PostgreSQL server, dropped afterwards."""
    import psycopg

    schema = "t_" + secrets.token_hex(6)
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in pg_server else "?"
    yield f"{pg_server}{sep}options={quote('-csearch_path=' + schema)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(scope="session")
def go_checker() -> Iterator[go_support.GoChecker]:
    """The Go team's sumdb/note and sumdb/tlog checking this project's notes and proofs (tests/go_support.py): one
    process per session; skips without Go, fails in CI."""
    checker = go_support.start()
    yield checker
    checker.close()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """The same test, once on a SQLite file and once on a PostgreSQL schema."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


LedgerFactory = Callable[..., Ledger]
MEMORY = "memory"
"""``make_ledger(MEMORY)``: a ledger whose log is a :class:`~ledger.core.storage.MemoryStore` (no database file)."""


@pytest.fixture
def make_ledger(tmp_path: Path) -> Iterator[LedgerFactory]:
    """Build initialised ledgers on a URL (``MEMORY``: on a :class:`MemoryStore`); their engines are disposed after
    the test."""
    built: list[Ledger] = []

    def factory(url: str | None = None, clock: _clock.Clock = _clock.now, **settings: object) -> Ledger:
        in_memory = url == MEMORY
        database = None if in_memory else url
        cfg = Settings(home=tmp_path, database_url=database or f"sqlite:///{tmp_path / 'ledger.db'}", **settings)
        ledger, _ = initialise(cfg, clock=clock, in_memory=in_memory)
        built.append(ledger)
        return ledger

    yield factory
    for ledger in built:
        ledger.store.dispose()


@pytest.fixture
def ledger(make_ledger: LedgerFactory, db_url: str) -> Ledger:
    """An initialised ledger on each backend."""
    return make_ledger(db_url)


@pytest.fixture
def memory_ledger(make_ledger: LedgerFactory) -> Ledger:
    """An initialised ledger on the in-memory store, for tests of handlers and decisions that do not test storage
    (the store contract is tested on every backend by ``tests/integration/test_store_contract.py``)."""
    return make_ledger(MEMORY)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository on branch main, phase B1, with one uncommitted change (FILES::1)."""
    repo = tmp_path / "projects" / "app"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 41)))
    (repo / "PROJECT-CONTEXT.oct.md").write_text("===PROJECT_CONTEXT===\nMETA:\n  PHASE::B1\n===END===\n")
    # lines long enough for an anchor challenge to ask about (ledger.anchor.challenge.MIN_LINE_CHARS)
    (repo / "README.md").write_text("# app\n\nThe app serves refresh tokens to the mobile client.\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    (repo / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 43)))
    return repo
