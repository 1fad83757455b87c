"""The fair write lock of a SQLite file: writers of several processes queue on ``<db>.writelock`` (flock) instead
of sleeping in SQLite's busy handler; it is released on every path, bounded by the lock timeout, and absent where
it has no meaning (PostgreSQL, in-memory SQLite)."""

from __future__ import annotations

import fcntl
import multiprocessing
import multiprocessing.connection
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.core.chain import verify_chain
from ledger.core.errors import ConcurrencyError, StoreBusy
from ledger.core.limits import Timeouts
from ledger.core.storage import SqlEventStore, _write_lock_path, make_engine
from tests.integration.test_store_contract import META, count_rows, install_insert_trigger, searched, started
from tests.store_support import TEST_ROW_KEY

READY_WAIT = 120.0  # a readiness bound for a loaded machine, not a timing expectation
PROCESSES, THREADS, APPENDS = 4, 3, 10


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


def open_store(db_file: Path, lock_seconds: float = 5.0) -> SqlEventStore:
    timeouts = Timeouts(lock=lock_seconds)
    store = SqlEventStore(make_engine(str(db_file), timeouts), timeouts=timeouts, row_key=TEST_ROW_KEY)
    store.create_schema()
    return store


@contextmanager
def lock_file_held(db_file: Path) -> Iterator[None]:
    """Hold the fair lock from an open file of this test (the kernel sees another owner than any store)."""
    fd = os.open(f"{db_file}.writelock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def lock_is_free(db_file: Path) -> bool:
    fd = os.open(f"{db_file}.writelock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_the_lock_file_sits_beside_a_sqlite_file_and_nowhere_else(db_file: Path) -> None:
    assert _write_lock_path(make_engine(str(db_file))) == f"{db_file}.writelock"
    uri = make_engine(f"sqlite:///file:{db_file}?mode=rwc&uri=true")
    assert _write_lock_path(uri) == f"{db_file}.writelock"
    assert _write_lock_path(make_engine(f"sqlite:///file:{db_file}?mode=ro&uri=true")) is None
    memory = "sqlite:///file:shared?mode=memory&cache=shared&uri=true"
    assert _write_lock_path(sa.create_engine(memory, poolclass=sa.pool.StaticPool)) is None
    assert _write_lock_path(sa.create_engine("sqlite://")) is None  # in-memory
    assert _write_lock_path(make_engine("postgresql://postgres@127.0.0.1:1/none")) is None


def test_an_append_takes_the_lock_file_and_is_busy_past_the_timeout_recording_nothing(db_file: Path) -> None:
    store = open_store(db_file, lock_seconds=0.2)
    store.append("session:a", 0, [started("a")], META)
    with lock_file_held(db_file), pytest.raises(StoreBusy) as busy:
        store.append("session:a", 1, [searched("a")], META)
    assert "writelock" in str(busy.value) and "again" in busy.value.hint
    assert count_rows(store) == 1
    assert store.append("session:a", 1, [searched("a")], META)[0].position == 2  # free again: it proceeds
    store.dispose()


def test_a_waiting_append_goes_through_when_the_holder_lets_go(db_file: Path) -> None:
    store = open_store(db_file, lock_seconds=600)  # far beyond the test: only the release can end the wait
    outcome: list[Any] = []
    with lock_file_held(db_file):
        waiter = threading.Thread(target=lambda: outcome.append(store.append("session:w", 0, [started("w")], META)))
        waiter.start()
        deadline = time.monotonic() + READY_WAIT
        while not (store._write_lock is not None and store._write_lock._wanted):  # readiness: it waits on flock
            assert time.monotonic() < deadline and waiter.is_alive(), "the append never waited for the lock"
            time.sleep(0.001)
        assert count_rows(store) == 0
    waiter.join(READY_WAIT)
    assert not waiter.is_alive() and outcome[0][0].position == 1
    assert lock_is_free(db_file)
    store.dispose()


def test_appends_queued_behind_a_leader_that_never_gets_the_lock_are_busy_too_and_record_nothing(
    db_file: Path,
) -> None:
    store = open_store(db_file, lock_seconds=0.3)
    outcomes: list[BaseException | None] = [None] * 4

    def append(n: int) -> None:
        try:
            store.append(f"session:q{n}", 0, [started(f"q{n}")], META)
        except BaseException as exc:  # the outcome is what the test checks
            outcomes[n] = exc

    with lock_file_held(db_file):
        threads = [threading.Thread(target=append, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(READY_WAIT)
            assert not t.is_alive()
    assert all(isinstance(o, StoreBusy) for o in outcomes)
    assert count_rows(store) == 0 and lock_is_free(db_file)
    store.dispose()


def test_the_lock_is_released_after_a_lost_race_a_refused_row_and_a_failed_transaction(db_file: Path) -> None:
    store = open_store(db_file)
    store.append("session:a", 0, [started("a")], META)
    with pytest.raises(ConcurrencyError):
        store.append("session:a", 0, [started("a")], META)
    assert lock_is_free(db_file)
    install_insert_trigger(store, "poisoned-query", "")
    with pytest.raises(Exception, match="poisoned"):
        store.append("session:a", 1, [searched("a", "poisoned-query")], META)
    assert lock_is_free(db_file)
    with pytest.raises(RuntimeError), store.write_transaction():
        raise RuntimeError("the caller failed inside the transaction")
    assert lock_is_free(db_file)
    assert count_rows(store) == 1 and verify_chain(store.iter_records()).ok
    store.dispose()


def test_a_store_on_postgresql_takes_no_lock_file(pg_url: str) -> None:
    store = SqlEventStore(make_engine(pg_url), row_key=None)
    assert store._write_lock is None


def writer_process(url: str, tag: str, barrier: Any, conn: multiprocessing.connection.Connection) -> None:
    """Worker process: THREADS threads each append APPENDS events to a stream of their own and try as often to
    extend one stream shared by every writer; reports its successes, lost races and any other error."""
    from ledger.core.errors import ConcurrencyError
    from ledger.core.limits import Timeouts
    from ledger.core.storage import SqlEventStore, make_engine
    from tests.integration.test_store_contract import META, searched, started
    from tests.store_support import TEST_ROW_KEY

    timeouts = Timeouts()  # the default lock timeout
    store = SqlEventStore(make_engine(url, timeouts), timeouts=timeouts, row_key=TEST_ROW_KEY)
    store.head()  # connect before the start, so every process starts on equal terms
    counts = {"own": 0, "shared": 0, "lost": 0}
    errors: list[str] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        stream = f"session:{tag}-{n}"
        try:
            store.append(stream, 0, [started(f"{tag}-{n}")], META)
            for i in range(APPENDS):
                store.append(stream, i + 1, [searched(f"{tag}-{n}", f"q{i}")], META)
                version = store.load_stream("session:shared").version
                try:
                    store.append("session:shared", version, [searched("shared", f"{tag}-{n}-{i}")], META)
                    won = True
                except ConcurrencyError:
                    won = False
                with lock:
                    counts["own"] += 1
                    counts["shared" if won else "lost"] += 1
        except BaseException as exc:  # reported to the parent, which fails the test
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")

    barrier.wait(timeout=READY_WAIT)
    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.dispose()
    conn.send({**counts, "errors": errors, "fair": store._write_lock is not None})
    conn.close()


def test_several_processes_appending_to_one_sqlite_file_all_land_on_one_verified_chain(db_file: Path) -> None:
    store = open_store(db_file)
    store.append("session:shared", 0, [started("shared")], META)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES + 1)
    procs, conns = [], []
    for p in range(PROCESSES):
        parent_end, child_end = ctx.Pipe()
        proc = ctx.Process(target=writer_process, args=(str(db_file), f"p{p}", barrier, child_end), daemon=True)
        proc.start()
        child_end.close()
        procs.append(proc)
        conns.append(parent_end)
    barrier.wait(timeout=READY_WAIT)  # readiness: every process is connected
    reports = []
    for conn, proc in zip(conns, procs, strict=True):
        assert conn.poll(READY_WAIT), "a writer process did not finish"
        reports.append(conn.recv())
        proc.join(READY_WAIT)
        assert proc.exitcode == 0
    assert [r["errors"] for r in reports] == [[]] * PROCESSES  # no StoreBusy, nothing else either
    assert all(r["fair"] for r in reports)  # each queued on the lock file (none fell back to the busy handler)
    own = sum(r["own"] for r in reports)
    shared = sum(r["shared"] for r in reports)
    assert own == PROCESSES * THREADS * APPENDS
    assert shared + sum(r["lost"] for r in reports) == own
    assert store.load_stream("session:shared").version == 1 + shared
    for p in range(PROCESSES):
        for n in range(THREADS):
            assert store.load_stream(f"session:p{p}-{n}").version == 1 + APPENDS
    assert count_rows(store) == 1 + PROCESSES * THREADS + own + shared
    report = store.verify()
    assert report.ok and report.head_position == count_rows(store)
    assert lock_is_free(db_file)
    store.dispose()
