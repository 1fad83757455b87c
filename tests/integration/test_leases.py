"""Leases (ledger/core/storage/leases.py): one holder among the processes of one ledger, on SQLite (a flock beside
the file) and PostgreSQL (a transaction-level advisory lock); a try that finds it held gets False, a wait past its
patience is StoreBusy; ledgers in other schemas do not share it; and a node stopped while it holds one loses it
after the idle-in-transaction timeout, as it loses the write lock."""

from __future__ import annotations

import os
import signal
import textwrap
import threading
from pathlib import Path

import pytest

from ledger.core.errors import StoreBusy
from ledger.core.limits import Timeouts
from ledger.core.storage import CONSOLIDATE_LEASE, TLOG_LEASE, MemoryStore, SqlEventStore, make_engine
from tests.server_support import READY_WITHIN, python_child, resume
from tests.store_support import TEST_ROW_KEY


def store_on(url: str, **timeouts: float) -> SqlEventStore:
    limits = Timeouts(**timeouts)
    store = SqlEventStore(make_engine(url, limits), timeouts=limits, row_key=TEST_ROW_KEY)
    store.create_schema()
    return store


@pytest.fixture
def two(db_url: str) -> list[SqlEventStore]:
    """Two stores ("nodes") on one database, each with its own engine."""
    stores = [store_on(db_url, lock=0.2), store_on(db_url, lock=0.2)]
    yield stores  # type: ignore[misc]
    for store in stores:
        store.dispose()


def test_one_holder_at_a_time_across_stores_of_one_database(two: list[SqlEventStore]) -> None:
    first, second = two
    with first.lease(CONSOLIDATE_LEASE) as held:
        with second.lease(CONSOLIDATE_LEASE) as also:
            pass
        with second.lease(TLOG_LEASE) as other_key:  # another lease of the same ledger is free
            pass
        with pytest.raises(StoreBusy), second.lease(CONSOLIDATE_LEASE, wait=True):
            pass
    with second.lease(CONSOLIDATE_LEASE) as after:
        pass
    assert (held, also, other_key, after) == (True, False, True, True)


def test_threads_of_one_process_take_turns(two: list[SqlEventStore]) -> None:
    store = two[0]
    inside, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def holder() -> None:
        with store.lease(CONSOLIDATE_LEASE) as held:
            seen.append(held)
            inside.set()
            release.wait(READY_WITHIN)

    thread = threading.Thread(target=holder)
    thread.start()
    assert inside.wait(READY_WITHIN)
    with store.lease(CONSOLIDATE_LEASE) as meanwhile:
        pass
    release.set()
    thread.join(READY_WITHIN)
    assert seen == [True] and meanwhile is False


def test_ledgers_in_other_schemas_do_not_share_a_lease(pg_server: str, pg_url: str, tmp_path: Path) -> None:
    import psycopg

    other_schema = "t_other_" + os.urandom(4).hex()
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {other_schema}")
    mine = store_on(pg_url, lock=0.2)
    theirs = store_on(f"{pg_server}?options=-csearch_path%3D{other_schema}", lock=0.2)
    try:
        with mine.lease(CONSOLIDATE_LEASE) as held, theirs.lease(CONSOLIDATE_LEASE) as also:
            pass
    finally:
        mine.dispose()
        theirs.dispose()
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {other_schema} CASCADE")
    assert (held, also) == (True, True)


def test_a_memory_store_leases_within_its_process() -> None:
    store = MemoryStore()
    with store.lease(CONSOLIDATE_LEASE) as held, store.lease(CONSOLIDATE_LEASE) as also:
        pass
    with pytest.raises(StoreBusy), store.lease(TLOG_LEASE), store.lease(TLOG_LEASE, wait=True, patience=0.01):
        pass
    assert (held, also) == (True, False)


# The stalled node: takes the lease, says so, and waits for a line on stdin (the test freezes it there).
STALLED = textwrap.dedent(
    """
    import sys
    from ledger.core.limits import Timeouts
    from ledger.core.storage import CONSOLIDATE_LEASE, SqlEventStore, make_engine
    from tests.store_support import TEST_ROW_KEY

    limits = Timeouts(idle_in_transaction=1)
    store = SqlEventStore(make_engine(sys.argv[1], limits), timeouts=limits, row_key=TEST_ROW_KEY)
    with store.lease(CONSOLIDATE_LEASE) as held:
        print("held" if held else "not held", flush=True)
        sys.stdin.readline()
    print("released", flush=True)
    """
)


def test_a_node_stopped_holding_a_lease_loses_it(pg_url: str) -> None:
    other = store_on(pg_url)
    try:
        with python_child(STALLED, pg_url) as node:
            assert node.stdout is not None and node.stdout.readline().strip() == "held"
            os.kill(node.pid, signal.SIGSTOP)
            # waits (bounded only to turn a hang into a failure) until the server ends the stopped node's session
            with other.lease(CONSOLIDATE_LEASE, wait=True, patience=READY_WITHIN) as taken:
                pass
            outcome = resume(node)
    finally:
        other.dispose()
    assert taken is True
    assert outcome == "released" and node.returncode == 0  # the lost session is no error of the holder's
