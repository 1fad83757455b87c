"""A held write lock: the stamp request is a 503 that changes nothing, health keeps answering, a retry with the
same request_id gets the same answer. Real uvicorn on loopback, real SQLite file and PostgreSQL schema; the lock
is held by another connection through the store's own write transaction."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest
from mcp import Client

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.core.limits import Timeouts
from ledger.core.storage import SqlEventStore, make_engine
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, serving, wait_until

AGENT = Actor(agent="local", source="rest")


@contextmanager
def append_lock_held(url: str) -> Iterator[None]:
    """Hold the ledger's append lock from another connection (an open write transaction) until the block ends."""
    holder = SqlEventStore(make_engine(url, Timeouts(idle_in_transaction=0)), row_key=None)  # held as long as asked
    try:
        with holder.write_transaction():
            yield
    finally:
        holder.engine.dispose()


def searched_session(ledger: Ledger) -> str:
    sid = ledger.clock_in(AGENT, "dev").session_id
    ledger.search(AGENT, sid, "anything")
    return sid


def test_a_held_append_lock_makes_assert_a_503_that_changes_nothing_and_a_retry_with_the_request_id_passes_once(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url, lock_timeout_seconds=0.5)
    sid = searched_session(ledger)
    body = {"session_id": sid, "request_id": "req-7f3a"}
    settings = Settings(home=tmp_path, lock_timeout_seconds=0.5)
    with serving(ledger, settings) as (base, _), httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        head = ledger.store.head()
        with append_lock_held(db_url):
            refused = http.post("/compliance/assert", json=body)
            assert refused.status_code == 503, refused.text
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["code"] == "store_busy"
            assert "retry" in refused.json()["error"]["hint"] or "again" in refused.json()["error"]["hint"]
            health = http.get("/health")  # answers while the lock is held, and says so: this node is up
            assert health.status_code == 200 and health.json()["status"] == "busy" and health.json()["store_busy"]
            assert health.json()["head_position"] == head[0]
        assert ledger.store.head() == head  # the refused request appended nothing
        assert ledger.session_state(sid).token.status == "valid"
        assert http.get("/health").json()["status"] == "ok"

        passed = http.post("/compliance/assert", json=body)
        assert passed.status_code == 200 and passed.json()["status"] == "PASS", passed.text
        assert passed.json()["request_id"] == "req-7f3a" and not passed.json()["repeated"]
        after_pass = ledger.store.head()

        again = http.post("/compliance/assert", json=body)  # the reply was lost, say: the same request again
        assert again.status_code == 200
        assert again.json()["status"] == "PASS" and again.json()["repeated"] is True
        assert again.json()["receipt"] == passed.json()["receipt"]
        assert again.json()["position"] == passed.json()["position"]
        assert ledger.store.head() == after_pass  # answered from the ledger: nothing new recorded
        assert http.post("/stamps/verify", json={"receipt": again.json()["receipt"]}).json()["valid"] is True

        other = http.post("/compliance/assert", json={"session_id": sid, "request_id": "req-other"})
        assert other.json()["status"] == "FAIL" and other.json()["reason"] == "token_consumed"


def test_health_answers_while_every_request_thread_waits_for_a_held_lock(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    # A lock timeout far beyond the test: the stuck requests end because the lock is released, not by time.
    ledger = make_ledger(db_url, lock_timeout_seconds=600)
    sessions = [searched_session(ledger) for _ in range(3)]
    settings = Settings(home=tmp_path, lock_timeout_seconds=600)
    with serving(ledger, settings) as (base, server), httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        loop = server.servers[0].get_loop()

        async def shrink() -> Any:
            limiter = anyio.CapacityLimiter(len(sessions))  # the request threads, as if exhausted by a crowd
            server.config.app.state.request_threads = limiter
            return limiter

        limiter = asyncio.run_coroutine_threadsafe(shrink(), loop).result(timeout=READY_WITHIN)
        answers: dict[str, int] = {}

        def stamp(sid: str) -> None:
            with httpx.Client(base_url=base, timeout=None) as client:
                answers[sid] = client.post("/compliance/assert", json={"session_id": sid}).status_code

        with append_lock_held(db_url):
            stuck = [threading.Thread(target=stamp, args=(sid,)) for sid in sessions]
            for t in stuck:
                t.start()
            wait_until(lambda: limiter.borrowed_tokens == len(sessions), "every request thread to be taken")
            health = http.get("/health")
            assert health.status_code == 200 and health.json()["status"] == "busy" and health.json()["store_busy"]
        for t in stuck:
            t.join(timeout=READY_WITHIN)
        assert answers == dict.fromkeys(sessions, 200)  # the lock came free, and the waiting stamps went through
        assert http.get("/health").json()["status"] == "ok"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_held_lock_makes_the_mcp_tool_an_error_that_says_retry_and_records_nothing(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    ledger = make_ledger(db_url, lock_timeout_seconds=0.5)
    sid = searched_session(ledger)
    head = ledger.store.head()
    async with Client(build_mcp(ledger, agent="local")) as client:
        with append_lock_held(db_url):
            result = await client.call_tool("assert_compliance", {"session_id": sid, "request_id": "r1"})
        assert result.is_error
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert "busy" in text and "token is unused" in text
        assert ledger.store.head() == head
        ok = await client.call_tool("assert_compliance", {"session_id": sid, "request_id": "r1"})
        assert not ok.is_error and ok.structured_content is not None
        assert ok.structured_content["status"] == "PASS"
        bad = await client.call_tool("assert_compliance", {"session_id": sid, "request_id": "no spaces please"})
        assert bad.is_error and "request_id" in " ".join(getattr(c, "text", "") for c in bad.content)
