"""Three ``serve`` nodes on one PostgreSQL ledger behind a real nginx (the shipped docs/nginx-ledger.conf), driven
with search → assert rounds from several client threads while one node is killed (``kill -9``) and another is
frozen (SIGSTOP) while it holds the ledger's write lock, then resumed (SIGCONT).

What must hold (issue 27): no false PASS (a PASS only for a search the session made, each search earning one),
no lost acknowledged answer (every PASS or FAIL a client got is in the log, at the position it was given, and a
retried request id is decided once), and writes resume within 10 s of the freeze — shown without timing the
load: the frozen node is held stopped until acknowledged writes went through nginx, so they happened while it
was still frozen, and the gap is read from the ledger's own clock (the first event after the freeze against the
start of the frozen transaction), where the client threads' waits on the frozen node do not count."""

from __future__ import annotations

import datetime as _dt
import json
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx
import psycopg
import pytest

from ledger.core.storage import APPEND_LOCK
from tests.nginx_support import nginx_binary, nginx_in_front_of
from tests.server_support import (
    HTTP_TIMEOUT,
    READY_WITHIN,
    compliance_ledger_serve,
    homes_sharing_keys,
    ledger_cli,
    wait_until,
)

pytestmark = pytest.mark.postgres

IDLE_LIMIT = 2  # seconds a node may sit idle in a transaction before PostgreSQL ends its session
# What every node runs with (one set of settings for the whole cluster). The idle-in-transaction limit is short
# so that the frozen node loses the write lock within a couple of seconds; BM25 search starts fast; no rate
# limit (the client threads are one keyless caller).
NODE_ENV = {
    "LEDGER_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS": str(IDLE_LIMIT),
    "LEDGER_SEMANTIC": "false",
    "LEDGER_RATE_LIMIT": "0",
    "LEDGER_LOG_JSON": "1",
}
CLIENTS = 4
RETRY = {502, 503, 504}  # the node died or froze (nginx), or the store was busy or lost (the node): send it again
RESUME_WITHIN = _dt.timedelta(seconds=10)  # the bound on writes resuming after a node froze


def cli(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return ledger_cli(home, url, *args, **NODE_ENV)


def with_param(url: str, name: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{name}={value}"


@dataclass
class Answer:
    """One assert a client got an answer to (after its retries), and what the client knew before sending it."""

    session_id: str
    request_id: str
    status: str
    position: int
    searched: bool  # the session's last search was acknowledged and no PASS came after it
    doubtful: bool  # a search of this session was never acknowledged (it may still be recorded, late)


@dataclass
class Load:
    """What the client threads saw, shared with the test's main thread."""

    base: str
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: list[Answer] = field(default_factory=list)
    searches: dict[str, int] = field(default_factory=dict)  # acknowledged searches per session
    unexpected: list[str] = field(default_factory=list)

    def acknowledged(self, after: int = 0) -> int:
        with self.lock:
            return sum(1 for a in self.answers if a.position > after)


def send(client: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response | None:
    """One POST through nginx; None when no node answered it (a transport error)."""
    try:
        return client.post(path, json=body)
    except httpx.TransportError:
        return None


def until_answered(load: Load, client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` again until a node answers it (the same body: an assert keeps its request_id)."""
    deadline = time.monotonic() + READY_WITHIN
    while True:
        response = send(client, path, body)
        if response is not None and response.status_code not in RETRY:
            if response.status_code >= 400:
                load.unexpected.append(f"{path} {response.status_code} {response.text}")
            return dict(response.json())
        assert time.monotonic() < deadline, f"{path} was never answered (last: {response and response.text})"
        time.sleep(0.05)  # a pause between tries (nginx answers 502 at once while it has no node left to try)


def client_rounds(load: Load, name: str) -> None:
    """search → assert, and every other round an assert without a search (which must not PASS)."""
    with httpx.Client(base_url=load.base, timeout=HTTP_TIMEOUT) as client:
        session = until_answered(load, client, "/sessions", {"role": "dev"})["session_id"]
        searched = doubtful = False
        round_ = 0
        while not load.stop.is_set():
            round_ += 1
            asserts = 2 if round_ % 2 else 1
            found = send(client, "/memory/search", {"session_id": session, "query": "ranking"})
            if found is not None and found.status_code == 200:
                searched = True
                with load.lock:
                    load.searches[session] = load.searches.get(session, 0) + 1
            elif found is None or found.status_code in RETRY:
                doubtful = True  # it may have been recorded (the node died or froze after it)
            else:
                load.unexpected.append(f"/memory/search {found.status_code} {found.text}")
            for n in range(asserts):
                request_id = f"{name}-{round_}-{n}"
                body = {"session_id": session, "request_id": request_id}
                answer = until_answered(load, client, "/compliance/assert", body)
                with load.lock:
                    load.answers.append(
                        Answer(session, request_id, answer["status"], answer["position"], searched, doubtful)
                    )
                if answer["status"] == "PASS":
                    searched = False


def all_events(node: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    after = 0
    while True:
        page = httpx.get(f"{node}/events", params={"after": after, "limit": 1000}, timeout=HTTP_TIMEOUT).json()
        events.extend(page["events"])
        if page["next_after"] is None:
            return events
        after = page["next_after"]


def lock_holder(conn: psycopg.Connection[Any], application: str) -> tuple[int, str, _dt.datetime] | None:
    """The backend pid, state and transaction start of ``application``'s session holding the write lock."""
    row = conn.execute(
        "SELECT a.pid, a.state, a.xact_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.classid = 'events'::regclass::oid AND l.objid = %s AND l.objsubid = 2 "
        "AND l.granted AND a.application_name = %s",
        (APPEND_LOCK, application),
    ).fetchone()
    return (int(row[0]), str(row[1]), row[2]) if row else None


def head(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()
    assert row is not None
    return int(row[0])


def freeze_holding_the_write_lock(
    proc: subprocess.Popen[str], conn: psycopg.Connection[Any], application: str
) -> tuple[_dt.datetime, int]:
    """SIGSTOP the node at a moment it holds the write lock, and return once PostgreSQL has ended its session for
    sitting idle in that transaction, with the transaction's start and the head of the log while it held the lock
    (nothing commits meanwhile). Once stopped the node sends nothing, but what it sent just before (its COMMIT,
    say) may still reach the server: a stop whose session then let the lock go is undone and tried again."""
    deadline = time.monotonic() + READY_WITHIN
    while True:
        assert time.monotonic() < deadline, "the node was never caught holding the write lock"
        if lock_holder(conn, application) is None:
            continue
        proc.send_signal(signal.SIGSTOP)
        held = lock_holder(conn, application)
        if held is not None:
            backend, since, at = held[0], held[2], head(conn)
            idle_for = 0.0  # how long PostgreSQL last saw the session idle in its transaction (its own clock)
            while (seen := session_state(conn, backend)) is not None and seen[0] != "idle":
                assert time.monotonic() < deadline, f"PostgreSQL kept the stopped node's session ({seen[0]})"
                idle_for = seen[1] if seen[0] == "idle in transaction" else 0.0
                time.sleep(0.01)  # a poll interval: the server ends it after the idle limit (2 s here)
            # Ended by the server for sitting idle in the transaction — not closed by the node just before it
            # stopped (a close sent then arrives at once) — so the write lock went with it, the node still stopped.
            if seen is None and idle_for >= IDLE_LIMIT / 2:
                return since, at
        proc.send_signal(signal.SIGCONT)


def session_state(conn: psycopg.Connection[Any], backend: int) -> tuple[str, float] | None:
    """The session's state and the seconds since it entered it, by the server's clock (``None``: no session)."""
    row = conn.execute(
        "SELECT state, extract(epoch FROM now() - state_change) FROM pg_stat_activity WHERE pid = %s", (backend,)
    ).fetchone()
    return None if row is None else (str(row[0]), float(row[1] or 0.0))


def failing(line: str) -> bool:
    """A node's log line worth showing when a client got an answer it should not have: a line that is not a
    request's JSON record, or a record of a server error (its traceback is in the record's fields)."""
    if not line.startswith("{"):
        return True
    record = json.loads(line)
    return str(record.get("status", "")).startswith("5") or record.get("level") in ("error", "ERROR")


def test_three_nodes_behind_nginx_survive_a_kill_and_a_freeze(tmp_path: Path, pg_url: str) -> None:
    nginx_binary()  # skip (fail in CI) before starting anything
    homes = homes_sharing_keys(tmp_path, pg_url, 3, **NODE_ENV)
    procs: list[list[subprocess.Popen[str]]] = [[] for _ in homes]
    said: list[list[str]] = [[] for _ in homes]
    failures: list[BaseException] = []
    with ExitStack() as stack, ThreadPoolExecutor(len(homes)) as starting:
        nodes = list(
            starting.map(
                lambda n: stack.enter_context(
                    compliance_ledger_serve(
                        homes[n],
                        with_param(pg_url, "application_name", f"node{n}"),
                        said=said[n],
                        started=procs[n],
                        **cast(dict[str, Any], NODE_ENV),  # every node alike
                    )
                ),
                range(len(homes)),
            )
        )
        _, [frozen], [killed] = procs
        load = Load(stack.enter_context(nginx_in_front_of(nodes, tmp_path / "nginx")))
        watcher = stack.enter_context(psycopg.connect(pg_url, autocommit=True))

        def run(name: str) -> None:
            try:
                client_rounds(load, name)
            except BaseException as exc:  # re-raised by the main thread
                failures.append(exc)
                load.stop.set()

        threads = [threading.Thread(target=run, args=(f"c{n}",), daemon=True) for n in range(CLIENTS)]

        def stop_clients() -> None:  # also when the test failed: no thread outlives it
            load.stop.set()
            for thread in threads:
                thread.join(READY_WITHIN)

        stack.callback(stop_clients)
        for thread in threads:
            thread.start()

        def progressed(count: int, after: int = 0) -> Callable[[], bool]:
            return lambda: bool(failures) or load.acknowledged(after) >= count

        wait_until(progressed(10), "answers through nginx from three nodes")
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        before = load.acknowledged()
        wait_until(progressed(before + 10), "answers through nginx after a node was killed")

        direct = stack.enter_context(httpx.Client(base_url=nodes[0], timeout=HTTP_TIMEOUT))
        probe = until_answered(load, direct, "/sessions", {"role": "dev"})["session_id"]
        frozen_since, frozen_head = freeze_holding_the_write_lock(frozen, watcher, "node1")
        try:
            # The server ended the stopped node's session (idle in its transaction) and its write lock went with
            # it. The surviving node writes again: a write sent to it now (not through nginx, where a client can
            # wait for the frozen node until proxy_read_timeout) is recorded; and through nginx the clients'
            # answers are recorded after the freeze while the node is still stopped.
            answer = until_answered(load, direct, "/compliance/assert", {"session_id": probe, "request_id": "probe"})
            with load.lock:
                load.answers.append(Answer(probe, "probe", answer["status"], answer["position"], False, False))
            assert answer["position"] > frozen_head
            wait_until(progressed(3, after=frozen_head), "writes through nginx while a node is frozen")
            written_while_frozen = load.acknowledged(after=frozen_head)
            assert frozen.poll() is None  # still there, still stopped
        finally:
            before_resuming = len(said[1])  # what it logged before the freeze: it logs nothing while stopped
            frozen.send_signal(signal.SIGCONT)
        resumed = load.acknowledged()
        wait_until(progressed(resumed + 10), "answers through nginx after the frozen node resumed")
        wait_until(lambda: httpx.get(f"{nodes[1]}/health", timeout=HTTP_TIMEOUT).status_code == 200, "node1")
        stop_clients()
        # Every answer was an answer (a 5xx other than the retried 502/503/504 is not); the nodes' errors, if not.
        assert not load.unexpected, (load.unexpected, [[x for x in lines if failing(x)] for lines in said])
        assert not failures, failures
        events = all_events(nodes[0])

    assert killed.returncode == -signal.SIGKILL and written_while_frozen >= 3
    by_position = {e["position"]: e for e in events}
    assert sorted(by_position) == list(range(1, len(events) + 1))  # one log, no gap

    # No false PASS: a PASS only for a session whose search was acknowledged (or sent, unacknowledged, and then
    # found in the log below); an acknowledged search is never answered FAIL.
    for a in load.answers:
        assert a.status == "PASS" or not a.searched, a
        assert a.status == "FAIL" or a.searched or a.doubtful, a
    # ... and in the log: every stamp spends a search of its own session, each search at most once.
    stamps = [e for e in events if e["type"] == "ComplianceStamped"]
    spent = [s["data"]["search_position"] for s in stamps]
    assert len(spent) == len(set(spent))
    for s in stamps:
        search = by_position[s["data"]["search_position"]]
        assert search["type"] == "MemorySearched" and search["data"]["session_id"] == s["data"]["session_id"]
        assert search["position"] < s["position"]

    # No lost acknowledged answer: each is in the log where the client was told; each request id decided once.
    decided = [e for e in events if e["type"] in {"ComplianceStamped", "ComplianceRefused"}]
    ids = [e["data"]["request_id"] for e in decided]
    assert len(ids) == len(set(ids))
    kinds = {"PASS": "ComplianceStamped", "FAIL": "ComplianceRefused"}
    for a in load.answers:
        event = by_position[a.position]
        assert (event["type"], event["data"]["session_id"], event["data"]["request_id"]) == (
            kinds[a.status],
            a.session_id,
            a.request_id,
        )
    searched = {e["data"]["session_id"] for e in events if e["type"] == "MemorySearched"}
    for session, count in load.searches.items():
        assert session in searched
        assert sum(1 for e in events if e["type"] == "MemorySearched" and e["data"]["session_id"] == session) >= count

    # Writes resumed within 10 s of the freeze, by the ledger's clock: the first event after the frozen head (the
    # probe's, or a client's before it) against the start of the transaction the node was frozen in (which began
    # before the SIGSTOP).
    resumed_at = _dt.datetime.fromisoformat(by_position[frozen_head + 1]["recorded_at"])
    gap = resumed_at - frozen_since
    statuses = Counter(line.split()[3] for line in (tmp_path / "nginx" / "access.log").read_text().splitlines())
    print(
        f"{len(load.answers)} answers ({sum(a.status == 'PASS' for a in load.answers)} PASS), "
        f"{written_while_frozen} while a node was frozen; writes resumed {gap.total_seconds():.2f} s after the "
        f"frozen node's transaction began; nginx answered {dict(statuses)}"
    )
    assert gap < RESUME_WITHIN, gap

    # The frozen node, resumed, ended what it had been doing with 503 (store_unavailable), never a success, and
    # answered no server error.
    logged = [json.loads(line) for line in said[1][before_resuming:] if line.startswith("{")]
    errors = [str(line["status"]) for line in logged if str(line.get("status", "")).startswith("5")]
    assert "503" in errors and set(errors) == {"503"}, "\n".join(said[1][before_resuming:])
