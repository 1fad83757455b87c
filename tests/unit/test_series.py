"""The compliance series: the compliance fold keyed per hour and agent, added up per bucket. Summed over the hours,
it is the compliance fold itself; a window is widened to whole buckets or refused with what to send."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

from ledger.core.errors import InvalidInput
from ledger.core.events import EVENT_TYPES, RecordedEvent
from ledger.sessions import series
from projections import compliance

T = _dt.datetime(2026, 3, 2, 9, 30, tzinfo=_dt.UTC)


def recorded(position: int, type_name: str, agent: str | None, at: _dt.datetime, **payload: Any) -> RecordedEvent:
    event = EVENT_TYPES[type_name].model_construct(**payload)  # only what the fold reads
    return RecordedEvent(position, "s", position, at, {"agent": agent} if agent else {}, event, "h")


LOG = [
    recorded(1, "MemorySearched", "alice", T),
    recorded(2, "ComplianceStamped", "alice", T + _dt.timedelta(minutes=5)),
    recorded(3, "ComplianceRefused", "bob", T + _dt.timedelta(minutes=40)),
    recorded(4, "AnchorAttempted", "bob", T + _dt.timedelta(hours=1), validated=True, first_in_session=True),
    recorded(5, "TaskTransitionRefused", "alice", T + _dt.timedelta(hours=1), codes=["dna_missing"]),
    recorded(6, "TaskTransitionRefused", "alice", T + _dt.timedelta(hours=3), codes=["dna_missing", "role"]),
    recorded(7, "MemoryRecalled", "alice", T + _dt.timedelta(hours=3), query="db"),
    recorded(8, "StopHookDecided", "bob", T + _dt.timedelta(hours=26), outcome="blocked"),
    recorded(9, "MemorySearched", None, T + _dt.timedelta(hours=26)),  # no agent: nobody's count
    recorded(10, "SessionStarted", "alice", T + _dt.timedelta(hours=26)),  # not counted
]


def fold(key: Any) -> dict[Any, compliance.AgentCompliance]:
    states: dict[Any, compliance.AgentCompliance] = {}
    for rec in LOG:
        k = key(rec)
        if k is not None:
            states[k] = compliance.evolve(states.get(k), rec)
    return states


def test_the_hourly_fold_added_up_over_its_hours_is_the_compliance_fold() -> None:
    hourly = fold(compliance.hourly_key)
    assert sorted(hourly) == [
        "2026-03-02T09|alice",
        "2026-03-02T10|alice",
        "2026-03-02T10|bob",
        "2026-03-02T12|alice",
        "2026-03-03T11|bob",
    ]
    summed: dict[str, compliance.AgentCompliance] = {}
    for key, state in hourly.items():
        agent = key.partition("|")[2]
        summed[agent] = compliance.combined(summed[agent], state) if agent in summed else state
    assert summed == fold(compliance.compliance_key)


def test_the_series_puts_each_hour_in_its_bucket() -> None:
    class Store:
        def position_as_of(self, _moment: _dt.datetime) -> int:
            return 0

    class Kernel:
        store = Store()

    hourly = fold(compliance.hourly_key)
    by_hour = series.compliance_series(Kernel(), hourly, T, T + _dt.timedelta(hours=4))  # type: ignore[arg-type]
    got = [{a.agent: (a.searches, a.passes, a.fails, a.transition_refusals) for a in p.agents} for p in by_hour.points]
    assert got == [
        {"alice": (1, 1, 0, 0)},
        {"alice": (0, 0, 0, 1), "bob": (0, 0, 1, 0)},
        {},
        {"alice": (1, 0, 0, 1)},
        {},  # 13:00: the window 09:30-13:30 is widened to whole hours
    ]
    assert {a.agent: a.refusal_reasons for a in by_hour.totals}["alice"] == {"dna_missing": 2, "role": 1}
    by_day = series.compliance_series(Kernel(), hourly, T, T + _dt.timedelta(days=1), "day", agent="bob")  # type: ignore[arg-type]
    assert [[(a.agent, a.fails, a.stop_hook.stops_blocked) for a in p.agents] for p in by_day.points] == [
        [("bob", 1, 0)],
        [("bob", 0, 1)],
    ]


def test_a_window_is_widened_to_whole_buckets() -> None:
    first, last, bucket = series.check_window(T, T + _dt.timedelta(hours=2), "hour")
    assert (first, last, bucket) == (T.replace(minute=0), T.replace(minute=0) + _dt.timedelta(hours=3), "hour")
    first, last, _ = series.check_window(T, T + _dt.timedelta(hours=2), "day")
    assert (first, last) == (T.replace(hour=0, minute=0), T.replace(hour=0, minute=0) + _dt.timedelta(days=1))


@pytest.mark.parametrize(
    ("start", "end", "bucket", "hint"),
    [
        (T, T, "hour", "later than the start"),
        (T, T + _dt.timedelta(days=32), "hour", "bucket=day"),
        (T, T + _dt.timedelta(hours=1), "week", "bucket=hour or bucket=day"),
        (T.replace(tzinfo=None), T + _dt.timedelta(hours=1), "hour", "2026-01-31T12:00:00Z"),
        (_dt.datetime.min.replace(tzinfo=_dt.UTC), T, "day", "between the years"),
    ],
)
def test_a_window_it_cannot_draw_is_refused_with_what_to_send(
    start: _dt.datetime, end: _dt.datetime, bucket: str, hint: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        series.check_window(start, end, bucket)
    assert hint in refused.value.hint
