"""A node stopped (SIGSTOP: a long pause, a hung VM) while it holds the write lock loses it: its PostgreSQL session
is idle in a transaction, and the server ends it after ``idle_in_transaction_session_timeout``; another node then
writes again, and the stopped one, resumed, ends its append with StoreUnavailable, never a success."""

from __future__ import annotations

import os
import signal
import textwrap
import time

from ledger.core.errors import StoreBusy
from ledger.core.limits import Timeouts
from ledger.core.storage import APPEND_LOCK, SqlEventStore, make_engine
from ledger.core.storage.engine import keepalive_args, session_settings
from tests.integration.test_store_contract import META, started
from tests.server_support import READY_WITHIN, python_child, resume
from tests.store_support import TEST_ROW_KEY

# The stalled node: its append takes the write lock, says so, and waits for a line on stdin before writing its rows
# (the test freezes it there with SIGSTOP); then prints how the append ended.
STALLED = textwrap.dedent(
    """
    import contextlib, sys
    from ledger.core.limits import Timeouts
    from ledger.core.storage import APPEND_LOCK, SqlEventStore, make_engine
    from tests.integration.test_store_contract import META, started
    from tests.store_support import TEST_ROW_KEY

    store = SqlEventStore(make_engine(sys.argv[1], Timeouts(idle_in_transaction=1)), row_key=TEST_ROW_KEY)
    inner = store.write_transaction

    @contextlib.contextmanager
    def held(*args, **kwargs):
        with inner(*args, **kwargs) as cur:
            print("locked", flush=True)
            sys.stdin.readline()
            yield cur

    store.write_transaction = held
    try:
        store.append("session:stalled", 0, [started("stalled")], META)
    except Exception as exc:
        print(type(exc).__name__, exc, flush=True)
    else:
        print("appended", flush=True)
    """
)


def test_a_node_stopped_holding_the_write_lock_loses_it_and_its_append_fails_when_it_resumes(pg_url: str) -> None:
    other = SqlEventStore(make_engine(pg_url, Timeouts(lock=1)), row_key=TEST_ROW_KEY)
    other.create_schema()
    try:
        with python_child(STALLED, pg_url) as node:
            assert node.stdout is not None and node.stdout.readline().strip() == "locked"
            os.kill(node.pid, signal.SIGSTOP)
            with other.read_cursor() as cur:  # the stopped node holds the write lock
                cur.execute(
                    # this ledger's lock only (its first int is the oid of this schema's events table): other
                    # tests' ledgers on the same database hold write locks of their own
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                    f"AND classid = 'events'::regclass::oid AND objid = {APPEND_LOCK} AND granted"
                )
                assert cur.fetchone()[0] == 1
            # Another node writes again once the server has ended the stopped one's session (polled: each try
            # waits at most its lock timeout; the deadline only turns a hang into a failure).
            deadline = time.monotonic() + READY_WITHIN
            while True:
                try:
                    written = other.append("session:other", 0, [started("other")], META)
                    break
                except StoreBusy:
                    assert time.monotonic() < deadline, "the stopped node kept the write lock"
            outcome = resume(node)
    finally:
        other.dispose()  # also when an assertion failed: no connection left for a later test's garbage collection
    assert written[0].position == 1
    assert outcome.startswith("StoreUnavailable"), outcome
    check = SqlEventStore(make_engine(pg_url), row_key=TEST_ROW_KEY)
    try:
        assert check.load_stream("session:stalled").version == 0  # nothing of the lost write was recorded
        assert check.head()[0] == 1
    finally:
        check.dispose()


def test_the_ledgers_postgresql_sessions_bound_idle_transactions_and_probe_dead_peers(pg_url: str) -> None:
    engine = make_engine(pg_url, Timeouts(idle_in_transaction=3, keepalive=4))
    with engine.connect() as conn:
        shown = {
            name: conn.exec_driver_sql(f"SHOW {name}").scalar()
            for name in ("idle_in_transaction_session_timeout", "tcp_keepalives_idle", "tcp_keepalives_count")
        }
    engine.dispose()
    assert shown["idle_in_transaction_session_timeout"] == "3s"
    # Over TCP the server's end takes them; over a Unix socket PostgreSQL shows 0 (no keepalives to set).
    assert shown["tcp_keepalives_idle"] in {"4", "0"} and shown["tcp_keepalives_count"] in {"3", "0"}
    assert keepalive_args(Timeouts(keepalive=4)) == {
        "keepalives": 1,
        "keepalives_idle": 4,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": 10_000,
    }
    assert "idle_in_transaction_session_timeout = 0" in session_settings(Timeouts(idle_in_transaction=0))


def test_keepalives_can_be_left_to_the_system() -> None:
    assert keepalive_args(Timeouts(keepalive=0)) == {"keepalives": 1}
    assert "tcp_keepalives" not in session_settings(Timeouts(keepalive=0))


def test_the_health_probe_names_its_sessions_apart_from_the_ledgers(pg_url: str) -> None:
    """The probe takes the write lock for a moment: its sessions carry the node's name with "(health probe)", so
    whoever looks for the node that holds the lock (an operator in pg_locks, the cluster test) can tell the two."""
    name = f"node-{os.getpid()}-{time.monotonic_ns()}"
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}application_name={name}"
    store = SqlEventStore(make_engine(url), row_key=TEST_ROW_KEY)
    store.create_schema()
    try:
        store.append("session:p", 0, [started("p")], META)
        assert not store.probe().busy
        with store.read_cursor() as cur:
            cur.execute(
                "SELECT DISTINCT application_name FROM pg_stat_activity WHERE application_name LIKE %s", (f"{name}%",)
            )
            names = {row[0] for row in cur.fetchall()}
        assert names == {name, f"{name} (health probe)"}
    finally:
        store.dispose()
