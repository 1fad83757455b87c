"""Bad input gets a clear error saying what to send instead, and appends nothing — at every front end. The edges
and the decisions refuse it before the store is reached: the ledgers are on the in-memory store (``MEMORY``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.core.errors import Conflict, Forbidden, InvalidInput, LedgerError, NotFound
from ledger.memory import decisions as memory
from ledger.service import Actor, Ledger
from tests.conftest import MEMORY, LedgerFactory
from tests.server_support import HTTP_TIMEOUT, running

ALICE, BOB = Actor("alice", "cli"), Actor("bob", "cli")
UNKNOWN = "ses_" + "ab" * 10


@pytest.fixture
def setup(make_ledger: LedgerFactory) -> tuple[Ledger, str, str]:
    ledger = make_ledger(MEMORY)
    sid = ledger.clock_in(ALICE, "dev").session_id
    closed = ledger.clock_in(ALICE, "dev").session_id
    ledger.clock_out(ALICE, closed)
    return ledger, sid, closed


CASES: list[tuple[str, Callable[[Ledger, str, str], Any], type[LedgerError], str]] = [
    ("empty query", lambda led, s, c: led.search(ALICE, s, "   "), InvalidInput, "query is empty"),
    (
        "query without words",
        lambda led, s, c: led.search(ALICE, s, "?!*"),
        InvalidInput,
        "no searchable words",
    ),
    ("query too long", lambda led, s, c: led.search(ALICE, s, "x" * 1001), InvalidInput, "longer than 1000"),
    ("limit zero", lambda led, s, c: led.search(ALICE, s, "x", 0), InvalidInput, "out of range"),
    ("limit too big", lambda led, s, c: led.search(ALICE, s, "x", 101), InvalidInput, "out of range"),
    ("unknown session", lambda led, s, c: led.search(ALICE, UNKNOWN, "x"), NotFound, "does not exist"),
    (
        "malformed session id",
        lambda led, s, c: led.assert_compliance(ALICE, "abc"),
        InvalidInput,
        "not a session id",
    ),
    ("foreign session", lambda led, s, c: led.assert_compliance(BOB, s), Forbidden, "another agent"),
    ("foreign session search", lambda led, s, c: led.search(BOB, s, "x"), Forbidden, "another agent"),
    ("closed session", lambda led, s, c: led.assert_compliance(ALICE, c), Conflict, "clocked out"),
    ("foreign clock out", lambda led, s, c: led.clock_out(BOB, s), Forbidden, "another agent"),
    ("empty content", lambda led, s, c: led.remember(ALICE, " \n", [], s), InvalidInput, "content is empty"),
    (
        "content over the limit",
        lambda led, s, c: led.remember(ALICE, "y" * (memory.MAX_CONTENT_CHARS + 1), [], s),
        InvalidInput,
        "the limit is 10000",
    ),
    ("bad tag", lambda led, s, c: led.remember(ALICE, "fine", ["Bad Tag!"], s), InvalidInput, "is not valid"),
    (
        "too many tags",
        lambda led, s, c: led.remember(ALICE, "fine", [f"t{i}" for i in range(21)], s),
        InvalidInput,
        "the limit is 20",
    ),
    (
        "remember on a foreign session",
        lambda led, s, c: led.remember(BOB, "fine", [], s),
        Forbidden,
        "another agent",
    ),
    ("bad role", lambda led, s, c: led.clock_in(ALICE, "  "), InvalidInput, "role"),
    ("empty receipt", lambda led, s, c: led.verify_stamp(""), InvalidInput, "receipt is empty"),
    (
        "as_of and position together",
        lambda led, s, c: led.compliance_report(position=1, as_of=led.clock()),
        InvalidInput,
        "both given",
    ),
]


@pytest.mark.parametrize(("name", "action", "error", "text"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_with_a_hint_and_appends_nothing(
    setup: tuple[Ledger, str, str], name: str, action: Callable[..., Any], error: type[LedgerError], text: str
) -> None:
    ledger, sid, closed = setup
    head = ledger.store.head()
    with pytest.raises(error) as caught:
        action(ledger, sid, closed)
    assert text in caught.value.message
    assert caught.value.hint, "every refusal says what to send instead"
    assert ledger.store.head() == head


def test_content_exactly_at_the_limit_is_accepted(setup: tuple[Ledger, str, str]) -> None:
    ledger, sid, _ = setup
    assert ledger.remember(ALICE, "z" * memory.MAX_CONTENT_CHARS, [], sid).status == "created"


def test_rest_rejects_malformed_json_unknown_fields_and_oversized_content(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger(MEMORY)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        head = ledger.store.head()
        malformed = http.post(
            "/memory/search", content=b'{"query": "x", ', headers={"Content-Type": "application/json"}
        )
        unknown = http.post("/memory/search", json={"query": "x", "session_id": sid, "agent": "root"})
        missing = http.post("/memory/search", json={"session_id": sid})
        oversized = http.post("/memory/blocks", json={"content": "q" * 10_001, "session_id": sid})
        empty = http.post("/memory/search", json={"query": "", "session_id": sid})
        unknown_session = http.post("/compliance/assert", json={"session_id": UNKNOWN})
        after = ledger.store.head()
    assert (malformed.status_code, malformed.json()["error"]["code"]) == (400, "malformed_json")
    assert unknown.status_code == 422 and "unknown field 'agent'" in unknown.json()["error"]["message"]
    assert missing.status_code == 422 and "query" in missing.json()["error"]["message"]
    assert oversized.status_code == 422 and "the limit is 10000" in oversized.json()["error"]["message"]
    assert empty.status_code == 422 and empty.json()["error"]["hint"]
    assert unknown_session.status_code == 404 and "clock_in" in unknown_session.json()["error"]["hint"]
    assert after == head


@pytest.mark.anyio
async def test_mcp_rejects_unknown_arguments_and_bad_values_without_appending(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger(MEMORY)
    async with Client(build_mcp(ledger, agent="alice", open_default_session=True)) as client:
        head = ledger.store.head()
        unknown = await client.call_tool("assert_compliance", {"agent": "root"})
        empty = await client.call_tool("memory_search", {"query": ""})
        foreign = await client.call_tool("memory_search", {"query": "x", "session_id": UNKNOWN})
        schema = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        after = ledger.store.head()
    assert unknown.is_error and "agent" in unknown.content[0].text  # type: ignore[union-attr]
    assert empty.is_error and "query is empty" in empty.content[0].text  # type: ignore[union-attr]
    assert foreign.is_error and "call clock_in" in foreign.content[0].text  # type: ignore[union-attr]
    assert schema["assert_compliance"]["additionalProperties"] is False
    assert after == head


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("field", ["content", "query"])
def test_text_with_a_lone_surrogate_is_refused_not_crashed(setup: tuple[Ledger, str, str], field: str) -> None:
    ledger, sid, _ = setup
    head = ledger.store.head()
    with pytest.raises(InvalidInput) as caught:
        if field == "content":
            ledger.remember(ALICE, "bad \ud800 text", [], sid)
        else:
            ledger.search(ALICE, sid, "bad \ud800 text")
    assert "lone surrogate" in caught.value.message
    assert ledger.store.head() == head
