"""The gate's pure decisions and texts (seed 000)."""

from __future__ import annotations

import datetime as _dt

from ledger.core.events import ComplianceRefused, ComplianceStamped, MemorySearched, RecordedEvent, SessionStarted
from ledger.memory import decisions as memory
from ledger.sessions import gate
from projections.sessions import SessionView, fold

T0 = _dt.datetime(2026, 1, 1, 12, tzinfo=_dt.UTC)


def rec(position: int, event: object, at: _dt.datetime = T0) -> RecordedEvent:
    return RecordedEvent(position, "session:s", position, at, {"agent": "a"}, event, "h")  # type: ignore[arg-type]


def session(*events: object) -> SessionView:
    view = fold(
        [rec(1, SessionStarted(session_id="s", agent="a", role="dev"))] + [rec(i + 2, e) for i, e in enumerate(events)]
    )
    assert view is not None
    return view


def searched(count: int, expires: _dt.datetime | None = None) -> MemorySearched:
    return MemorySearched(
        session_id="s",
        query="q",
        limit=10,
        result_ids=[f"b{i}" for i in range(count)],
        count=count,
        token_expires_at=expires,
    )


def test_the_stamp_texts_are_exactly_the_seeds() -> None:
    assert gate.stamp_text(3) == "[COMPLIANCE] YES I HAVE SEARCHED, FOUND 3 RELEVANT MEMORIES, BROUGHT THEM TO AGENT."
    assert gate.stamp_text(0) == (
        "[COMPLIANCE] YES I HAVE SEARCHED, I HAVE FOUND ZERO RELEVANT MEMORIES, NOTHING WAS BROUGHT TO AGENT."
    )


def test_without_a_search_the_gate_refuses_and_names_memory_search() -> None:
    decision = gate.decide_assert(session(), T0)
    assert isinstance(decision, ComplianceRefused)
    assert decision.reason == "no_search"
    assert decision.message.startswith("⛔ GATE CLOSED.") and "'memory_search'" in decision.message


def test_a_valid_token_is_consumed_by_the_stamp_it_earns() -> None:
    decision = gate.decide_assert(session(searched(2)), T0)
    assert isinstance(decision, ComplianceStamped)
    assert (decision.search_position, decision.count) == (2, 2)
    after = session(searched(2), decision)
    assert after.token_status(T0) == "consumed"
    assert isinstance(gate.decide_assert(after, T0), ComplianceRefused)


def test_a_token_expires_at_its_recorded_expiry() -> None:
    view = session(searched(1, expires=T0 + _dt.timedelta(minutes=30)))
    assert view.token_status(T0 + _dt.timedelta(minutes=29, seconds=59)) == "valid"
    refused = gate.decide_assert(view, T0 + _dt.timedelta(minutes=30))
    assert isinstance(refused, ComplianceRefused) and refused.reason == "token_expired"


def test_a_newer_search_replaces_the_unused_token() -> None:
    view = session(searched(5), searched(1))
    decision = gate.decide_assert(view, T0)
    assert isinstance(decision, ComplianceStamped) and decision.count == 1 and decision.search_position == 3


def test_a_stamp_for_an_older_search_does_not_consume_a_newer_token() -> None:
    old_stamp = ComplianceStamped(session_id="s", search_position=2, count=1, stamp=gate.stamp_text(1))
    view = session(searched(1), searched(4), old_stamp)
    assert view.token_status(T0) == "valid"


def test_search_records_the_ttl_as_an_expiry_time() -> None:
    [event] = gate.decide_search(session(), query="q", limit=5, result_ids=["a"], now=T0, ttl=_dt.timedelta(minutes=30))
    assert isinstance(event, MemorySearched) and event.token_expires_at == T0 + _dt.timedelta(minutes=30)
    [forever] = gate.decide_search(session(), query="q", limit=5, result_ids=[], now=T0, ttl=None)
    assert isinstance(forever, MemorySearched) and forever.token_expires_at is None


def test_normalised_content_decides_duplicates() -> None:
    assert memory.block_id_for("Use  WAL\nmode") == memory.block_id_for("use wal mode")
    assert memory.block_id_for("use wal mode") != memory.block_id_for("use wal modes")
