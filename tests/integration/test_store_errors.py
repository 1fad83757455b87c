"""Driver errors become the ledger's own, by SQLSTATE class (PostgreSQL) or result code (SQLite), in one place;
a database that refuses writes gets a 503 that appends nothing; each ledger has its own write lock."""

from __future__ import annotations

import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import psycopg
import pytest

from api.bootstrap import open_ledger
from api.settings import Settings
from ledger.core.errors import Conflict, InvalidInput, LedgerError, StoreBusy, StoreRefused, StoreUnavailable
from ledger.core.storage import SqlEventStore, classify_driver_error, make_engine
from ledger.core.storage.engine import SQLITE_CACHE_KIB
from ledger.service import Actor
from tests.conftest import LedgerFactory
from tests.e2e.test_store_busy import append_lock_held
from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, serving

AGENT = Actor(agent="local", source="rest")


def driver_error(run: Callable[[], object]) -> BaseException:
    try:
        run()
    except Exception as exc:  # the real driver error, whatever its class
        return exc
    raise AssertionError("the statement did not fail")


# --- classification, from errors the real drivers raise ----------------------------------------------------


def test_sqlite_busy_readonly_and_missing_table_errors_map_to_busy_refused_and_not_initialised(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    first = sqlite3.connect(path, timeout=0, isolation_level=None)
    first.execute("CREATE TABLE t (x)")
    first.execute("BEGIN IMMEDIATE")
    second = sqlite3.connect(path, timeout=0, isolation_level=None)
    locked = driver_error(lambda: second.execute("BEGIN IMMEDIATE"))
    first.execute("ROLLBACK")
    readonly = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    refused = driver_error(lambda: readonly.execute("INSERT INTO t VALUES (1)"))
    missing = driver_error(lambda: second.execute("SELECT * FROM events"))
    for conn in (first, second, readonly):
        conn.close()
    assert type(classify_driver_error(locked, "sqlite")) is StoreBusy
    assert type(classify_driver_error(refused, "sqlite")) is StoreRefused
    assert classify_driver_error(missing, "sqlite").code == "not_initialised"  # type: ignore[union-attr]
    assert classify_driver_error(ValueError("not a driver error"), "sqlite") is None


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("statements", "expected"),
    [
        (["SET lock_timeout = 1", "LOCK TABLE locked IN ACCESS EXCLUSIVE MODE"], StoreBusy),  # 55P03
        (["SET statement_timeout = 1", "SELECT pg_sleep(5)"], StoreBusy),  # 57014
        (["SET TRANSACTION READ ONLY", "INSERT INTO held VALUES (1)"], StoreRefused),  # 25006
        (["SELECT 1 / 0"], InvalidInput),  # 22012
        (["SELECT 'x'::int"], InvalidInput),  # 22P02
        (["INSERT INTO held VALUES (NULL)"], Conflict),  # 23502
        (["SELECT pg_terminate_backend(pg_backend_pid())"], StoreUnavailable),  # 57P01
    ],
    ids=["lock_not_available", "query_canceled", "read_only", "division", "text", "not_null", "terminated"],
)
def test_postgresql_errors_map_by_sqlstate_class(
    pg_url: str, statements: list[str], expected: type[LedgerError]
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as setup:
        setup.execute("CREATE TABLE held (x int NOT NULL)")
        setup.execute("CREATE TABLE locked (x int)")
    with psycopg.connect(pg_url, autocommit=True) as holder, psycopg.connect(pg_url) as conn:
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE locked IN ACCESS EXCLUSIVE MODE")

        def run() -> None:
            for statement in statements:
                conn.execute(statement)

        error = driver_error(run)
        holder.execute("ROLLBACK")
    mapped = classify_driver_error(error, "postgresql")
    assert type(mapped) is expected, (error, mapped)
    assert mapped.status in ((503,) if issubclass(expected, StoreUnavailable) else (409, 422))


# --- a database that refuses the ledger's writes --------------------------------------------------------------


@pytest.fixture
def refusing_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(read-write URL, URL of the same ledger that can read but not write): a read-only SQLite file, or a
    PostgreSQL role granted SELECT but not INSERT."""
    if request.param == "sqlite":
        path = tmp_path / "ledger.db"
        yield f"sqlite:///{path}", f"sqlite:///file:{path}?mode=ro&uri=true"
        return
    pg_url: str = request.getfixturevalue("pg_url")
    role = "ro_" + secrets.token_hex(6)
    reader_url = pg_url.replace("://postgres@", f"://{role}@", 1)
    assert reader_url != pg_url
    yield pg_url, reader_url
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s AND pid <> pg_backend_pid()",
            (role,),
        )
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


def grant_read_only(rw_url: str, reader_url: str) -> None:
    if not rw_url.startswith("postgresql"):
        return
    role = reader_url.split("://", 1)[1].split("@", 1)[0]
    schema = rw_url.rsplit("search_path%3D", 1)[1]
    with psycopg.connect(rw_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")


@pytest.mark.parametrize(
    "refusing_url", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_a_database_that_refuses_writes_makes_assert_a_503_and_appends_nothing(
    make_ledger: LedgerFactory, refusing_url: tuple[str, str], tmp_path: Path
) -> None:
    rw_url, reader_url = refusing_url
    writer = make_ledger(rw_url)
    sid = writer.clock_in(AGENT, "dev").session_id
    writer.search(AGENT, sid, "anything")
    grant_read_only(rw_url, reader_url)
    head = writer.store.head()
    settings = Settings(home=tmp_path, database_url=reader_url)
    reader = open_ledger(settings)
    try:
        with pytest.raises(StoreRefused):
            reader.assert_compliance(AGENT, sid)
        with serving(reader, settings) as (base, _), httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
            response = http.post("/compliance/assert", json={"session_id": sid})
            assert response.status_code == 503, response.text
            assert response.json()["error"]["code"] == "store_refused"
            assert "read and write access" in response.json()["error"]["hint"]
            clock_in = http.post("/sessions", json={"role": "dev"})
            assert clock_in.status_code == 503
    finally:
        reader.store.dispose()
    assert writer.store.head() == head  # nothing was appended by any refused call
    assert writer.session_state(sid).token.status == "valid"


# --- bounded waits, one lock per ledger ------------------------------------------------------------------------


@pytest.mark.postgres
def test_a_read_blocked_by_a_table_lock_ends_as_store_busy_after_the_lock_timeout(
    make_ledger: LedgerFactory, pg_url: str
) -> None:
    ledger = make_ledger(pg_url, lock_timeout_seconds=0.5)
    sid = ledger.clock_in(AGENT, "dev").session_id
    with psycopg.connect(pg_url) as holder:
        holder.execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(StoreBusy):
            ledger.session_state(sid)
    assert ledger.session_state(sid).session_id == sid


@pytest.mark.postgres
def test_ledgers_in_two_schemas_of_one_database_do_not_share_a_write_lock(
    make_ledger: LedgerFactory, pg_url: str, pg_server: str, tmp_path: Path
) -> None:
    first = make_ledger(pg_url, lock_timeout_seconds=0.5)
    schema = "t_" + secrets.token_hex(6)
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        second_url = f"{pg_server}?options={quote('-csearch_path=' + schema)}"
        second = make_ledger(second_url, lock_timeout_seconds=0.5)
        done: list[object] = []

        def clock_in() -> None:
            try:
                done.append(second.clock_in(AGENT, "dev").session_id)
            except Exception as exc:  # reported below
                done.append(exc)

        with append_lock_held(pg_url):
            with pytest.raises(StoreBusy):
                first.clock_in(AGENT, "dev")  # this ledger's lock is held ...
            worker = threading.Thread(target=clock_in)
            worker.start()
            worker.join(timeout=READY_WITHIN)  # ... the other ledger's is not
        assert len(done) == 1 and isinstance(done[0], str), done
        second.store.dispose()
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_a_held_sqlite_write_lock_ends_as_store_busy_after_the_busy_wait(
    make_ledger: LedgerFactory, sqlite_url: str
) -> None:
    ledger = make_ledger(sqlite_url, lock_timeout_seconds=0.5)
    head = ledger.store.head()
    with append_lock_held(sqlite_url), pytest.raises(StoreBusy) as caught:
        ledger.clock_in(AGENT, "dev")
    assert caught.value.status == 503 and caught.value.retry_after == 1
    assert ledger.store.head() == head


def test_the_store_and_its_health_probe_use_the_configured_timeouts(sqlite_url: str) -> None:
    store = SqlEventStore(make_engine(sqlite_url), row_key=None)
    assert store.timeouts.lock == 5.0 and store.timeouts.statement == 30.0  # the documented defaults
    store.dispose()
    assert Settings(lock_timeout_seconds=0.5).timeouts.lock_ms == 500


def test_every_sqlite_connection_gets_wal_full_sync_and_the_small_page_cache(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        with engine.connect() as one, engine.connect() as two:  # two pooled connections, each set up on connect
            for conn in (one, two):
                pragma = conn.exec_driver_sql
                assert pragma("PRAGMA journal_mode").scalar() == "wal"
                assert pragma("PRAGMA synchronous").scalar() == 2  # FULL
                assert pragma("PRAGMA cache_size").scalar() == -SQLITE_CACHE_KIB  # negative: KiB, not pages
    finally:
        engine.dispose()


def test_the_cli_says_the_ledger_is_busy_and_exits_75_when_the_write_lock_is_held(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from api.cli import app
    from api.cli.context import EXIT_BUSY

    ledger = make_ledger(db_url)
    head = ledger.store.head()
    monkeypatch.setenv("LEDGER_LOCK_TIMEOUT_SECONDS", "0.5")
    with append_lock_held(db_url):
        result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", db_url, "keys", "add", "--agent", "carol"])
    assert result.exit_code == EXIT_BUSY == 75, result.output
    assert "busy" in result.output and "again" in result.output
    assert ledger.store.head() == head
