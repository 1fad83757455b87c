"""Active hours: the union of session intervals, folded from explicit events; no clock, no sleeps."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core import events as ev
from projections import active_hours as ah
from projections.active_hours import ActiveTime, active_hours, evolve, fold, hours_between

T0 = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.UTC)
_positions = itertools.count(1)


def at(hours: float) -> _dt.datetime:
    return T0 + _dt.timedelta(hours=hours)


def rec(stream: str, event: ev.DomainEvent, hours: float) -> ev.RecordedEvent:
    return ev.RecordedEvent(
        position=next(_positions),
        stream=stream,
        version=1,
        recorded_at=at(hours),
        meta={},
        event=event,
        hash="0" * 64,
    )


def start(sid: str, hours: float) -> ev.RecordedEvent:
    return rec(f"session:{sid}", ev.SessionStarted(session_id=sid, agent="alice", role="dev"), hours)


def end(sid: str, hours: float) -> ev.RecordedEvent:
    return rec(f"session:{sid}", ev.SessionEnded(session_id=sid), hours)


def search(sid: str, hours: float) -> ev.RecordedEvent:
    event = ev.MemorySearched(session_id=sid, query="q", limit=5, result_ids=[], count=0)
    return rec(f"session:{sid}", event, hours)


def by_time(*recs: ev.RecordedEvent) -> list[ev.RecordedEvent]:
    return sorted(recs, key=lambda r: r.recorded_at)


def test_nothing_folded_is_zero_active_hours() -> None:
    assert active_hours(None, at(10)) == 0.0
    assert active_hours(ActiveTime(), at(10)) == 0.0


def test_a_closed_session_counts_from_clock_in_to_clock_out() -> None:
    state = fold([start("a", 0), search("a", 0.5), end("a", 2)])
    assert active_hours(state, at(5)) == 2.0


def test_idle_time_inside_a_clocked_out_session_still_counts() -> None:
    state = fold([start("a", 0), search("a", 0.1), end("a", 3)])
    assert active_hours(state, at(3)) == 3.0


def test_overlapping_sessions_count_once() -> None:
    state = fold(by_time(start("a", 0), start("b", 1), end("a", 2), end("b", 3)))
    assert active_hours(state, at(10)) == 3.0


def test_a_session_inside_another_adds_nothing() -> None:
    state = fold(by_time(start("a", 0), start("b", 1), end("b", 2), end("a", 4)))
    assert active_hours(state, at(4)) == 4.0


def test_gaps_between_sessions_do_not_count() -> None:
    state = fold([start("a", 0), end("a", 1), start("b", 5), end("b", 6)])
    assert active_hours(state, at(6)) == 2.0
    assert active_hours(state, at(3)) == 1.0


def test_back_to_back_sessions_add_up() -> None:
    state = fold([start("a", 0), end("a", 1), start("b", 1), end("b", 2)])
    assert active_hours(state, at(2)) == 2.0


def test_a_session_never_clocked_out_counts_until_its_last_event_plus_the_idle_timeout() -> None:
    state = fold([start("a", 0), search("a", 1)])
    assert active_hours(state, at(10)) == 1.5
    assert active_hours(state, at(10), idle_timeout=_dt.timedelta(minutes=15)) == 1.25
    assert active_hours(state, at(10), idle_timeout=_dt.timedelta(0)) == 1.0


def test_a_session_never_clocked_out_does_not_count_past_the_moment_asked() -> None:
    state = fold([start("a", 0), search("a", 1)])
    assert active_hours(state, at(1.25)) == 1.25
    assert active_hours(state, at(0.5)) == 0.5


def test_the_moment_before_the_first_clock_in_has_no_active_hours() -> None:
    state = fold([start("a", 2), end("a", 3)])
    assert active_hours(state, at(1)) == 0.0


def test_an_agent_on_holiday_for_a_week_adds_no_active_hours() -> None:
    before = fold([start("a", 0), end("a", 8)])
    after_holiday = at(8 + 7 * 24)
    assert active_hours(before, after_holiday) == active_hours(before, at(8)) == 8.0
    back = fold([start("a", 0), end("a", 8), start("b", 8 + 7 * 24), end("b", 8 + 7 * 24 + 1)])
    assert active_hours(back, at(8 + 7 * 24 + 1)) == 9.0
    assert hours_between(back, at(8), at(8 + 7 * 24)) == 0.0


def test_hours_between_measures_only_the_active_part_of_the_window() -> None:
    state = fold([start("a", 0), end("a", 2), start("b", 5), search("b", 6)])
    # active: [0, 2] and [5, 6.5]
    assert hours_between(state, at(1), at(5.5)) == 1.5
    assert hours_between(state, at(0), at(100)) == 3.5
    assert hours_between(state, at(2), at(5)) == 0.0
    assert hours_between(state, at(3), at(1)) == 0.0


def test_hours_between_is_the_difference_of_active_hours() -> None:
    state = fold(by_time(start("a", 0), start("b", 1.5), end("a", 2), search("b", 4), start("c", 7), end("c", 8)))
    for lo, hi in [(0.5, 3), (1, 7.5), (2.5, 9), (0, 0.25)]:
        assert hours_between(state, at(lo), at(hi)) == pytest.approx(
            active_hours(state, at(hi)) - active_hours(state, at(lo))
        )


def test_events_after_clock_out_do_not_extend_the_session() -> None:
    state = fold([start("a", 0), end("a", 1), search("a", 3)])
    assert active_hours(state, at(5)) == 1.0


def test_events_of_a_session_never_started_are_ignored() -> None:
    state = fold([search("ghost", 1), end("ghost", 2)])
    assert state == ActiveTime()
    assert active_hours(state, at(3)) == 0.0


def test_events_outside_session_streams_are_ignored() -> None:
    state = fold([start("a", 0)])
    other = rec("memory:blk_1", ev.MemoryRemembered(block_id="blk_1", content="x", tags=[]), 5)
    assert evolve(state, other) is state
    assert ah.active_time_key(other) is None
    assert ah.active_time_key(start("b", 0)) == ah.ACTIVE_TIME


def test_the_fold_never_mutates_a_previous_state() -> None:
    first = fold([start("a", 0)])
    second = evolve(first, end("a", 1))
    assert first.spans[0].ended_at is None
    assert second.spans[0].ended_at == at(1)


# --- properties ----------------------------------------------------------------------------------------------

SESSION = st.tuples(
    st.integers(min_value=0, max_value=2000),  # clock-in, minutes after T0
    st.lists(st.integers(min_value=0, max_value=300), max_size=4),  # later events, minutes after clock-in
    st.one_of(st.none(), st.integers(min_value=0, max_value=600)),  # clock-out, minutes after clock-in
)


def _log(sessions: list[tuple[int, list[int], int | None]]) -> list[ev.RecordedEvent]:
    recs: list[ev.RecordedEvent] = []
    for i, (begin, offsets, stop) in enumerate(sessions):
        sid = f"s{i}"
        recs.append(start(sid, begin / 60))
        recs.extend(search(sid, (begin + o) / 60) for o in offsets if stop is None or o <= stop)
        if stop is not None:
            recs.append(end(sid, (begin + stop) / 60))
    return sorted(recs, key=lambda r: (r.recorded_at, r.event.type_name != "SessionStarted"))


@given(st.lists(SESSION, min_size=1, max_size=8), st.lists(st.integers(min_value=-60, max_value=3000), min_size=2))
def test_active_hours_never_exceed_the_wall_clock_span_and_never_decrease(
    sessions: list[tuple[int, list[int], int | None]], moments: list[int]
) -> None:
    state = fold(_log(sessions))
    first_clock_in = min(s.started_at for s in state.spans)
    previous = 0.0
    for minutes in sorted(moments):
        moment = T0 + _dt.timedelta(minutes=minutes)
        hours = active_hours(state, moment)
        span = max((moment - first_clock_in).total_seconds() / 3600, 0.0)
        assert 0.0 <= hours <= span + 1e-9
        assert hours >= previous - 1e-9
        previous = hours


@given(st.lists(SESSION, min_size=1, max_size=8))
def test_active_hours_never_exceed_the_sum_of_the_sessions(sessions: list[tuple[int, list[int], int | None]]) -> None:
    state = fold(_log(sessions))
    timeout = ah.IDLE_TIMEOUT
    total = sum((s.stop(timeout) - s.started_at).total_seconds() for s in state.spans) / 3600
    assert active_hours(state, T0 + _dt.timedelta(days=30)) <= total + 1e-9


@given(
    st.lists(SESSION, min_size=1, max_size=8),
    st.integers(min_value=0, max_value=3000),
    st.lists(st.integers(min_value=-60, max_value=3000), min_size=1, max_size=10),
)
def test_the_active_clock_agrees_with_the_union_it_summarises(
    sessions: list[tuple[int, list[int], int | None]], now: int, moments: list[int]
) -> None:
    """``ActiveClock`` (merged once, bisected per block) gives what measuring the union each time gives."""
    state = fold(_log(sessions))
    at_now = T0 + _dt.timedelta(minutes=now)
    clock = ah.ActiveClock.of(state.spans, at_now)
    assert clock.now == pytest.approx(active_hours(state, at_now), abs=1e-9)
    for minutes in moments:
        moment = T0 + _dt.timedelta(minutes=minutes)
        assert clock.hours_since(moment) == pytest.approx(hours_between(state, moment, at_now), abs=1e-9)
        assert clock.hours_at(moment) == pytest.approx(active_hours(state, min(moment, at_now)), abs=1e-9)


def test_an_empty_active_clock_reads_zero() -> None:
    clock = ah.ActiveClock.of([], T0)
    assert (clock.now, clock.hours_at(T0), clock.hours_since(T0 - _dt.timedelta(days=1))) == (0.0, 0.0, 0.0)


@given(st.lists(SESSION, max_size=8), st.integers(min_value=-60, max_value=3000), st.integers(min_value=1, max_value=4))
def test_the_clock_from_a_column_table_of_spans_is_the_clock_from_the_spans(
    sessions: list[tuple[int, list[int], int | None]], now: int, hot: int
) -> None:
    """The live path reads spans from a ColumnTable as microseconds (``ActiveClock.of_micros``); it must be the
    clock :meth:`ActiveClock.of` builds from the span objects, whatever the table keeps hot."""
    from projections.columns import ColumnTable

    table: ColumnTable[str, ah.SessionSpan] = ColumnTable(ah.SessionSpan, "session_id", hot=hot)
    for rec in _log(sessions):
        key = rec.stream.split(":", 1)[1]
        table[key] = ah.evolve_span(table.get(key), rec)
    at_now = T0 + _dt.timedelta(minutes=now)
    spans = [s for s in table.values() if s is not None]
    expected = ah.ActiveClock.of(spans, at_now)
    got = ah.ActiveClock.of_micros(table.raw("started_at", "last_event_at", "ended_at"), at_now)
    assert (got.at, got.starts, got.ends) == (expected.at, expected.starts, expected.ends)
    assert got.before == pytest.approx(expected.before, abs=1e-6)
    assert got.now == pytest.approx(expected.now, abs=1e-9)


@given(st.lists(SESSION, max_size=8), st.integers(min_value=-60, max_value=3000))
def test_the_runners_clock_is_the_clock_from_the_spans(
    sessions: list[tuple[int, list[int], int | None]], now: int
) -> None:
    from projections.runner import ACTIVE_TIME, ProjectionRunner

    runner = ProjectionRunner([ACTIVE_TIME])
    for position, recorded in enumerate(_log(sessions), 1):
        runner.apply(dataclasses.replace(recorded, position=position))  # in log order, as a runner is fed
    at_now = T0 + _dt.timedelta(minutes=now)
    expected = ah.ActiveClock.of(runner.active_spans(), at_now)
    got = runner.active_clock(at_now, ah.IDLE_TIMEOUT)
    assert (got.starts, got.ends) == (expected.starts, expected.ends)
    assert got.now == pytest.approx(expected.now, abs=1e-9)
