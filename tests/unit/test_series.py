"""The compliance series counts some event types in SQL instead of folding them: the fold must do exactly that to
them (one field, plus one, whatever the payload), and must fold every other counted type itself."""

from __future__ import annotations

import dataclasses
import datetime as _dt

import pytest

from ledger.core.errors import InvalidInput
from ledger.core.events import EVENT_TYPES, RecordedEvent
from ledger.sessions import series
from projections import compliance

T = _dt.datetime(2026, 3, 2, 9, 30, tzinfo=_dt.UTC)


def recorded(type_name: str) -> RecordedEvent:
    event = EVENT_TYPES[type_name].model_construct()  # no payload: a tallied type's count must not need one
    return RecordedEvent(1, "s", 1, T, {"agent": "alice"}, event, "h")


@pytest.mark.parametrize("type_name", sorted(series.TALLIED))
def test_the_fold_adds_one_to_the_tallied_field_and_changes_nothing_else(type_name: str) -> None:
    folded = compliance.evolve(None, recorded(type_name))
    field = series.TALLIED[type_name]
    expected = dataclasses.replace(compliance.AgentCompliance(agent="alice"), **{field: 1})
    assert folded == expected


def test_every_counted_type_is_either_tallied_or_folded() -> None:
    counted = {cls.type_name for cls in compliance.COUNTED}
    assert set(series.TALLIED) | set(series.FOLDED_TYPES) == counted
    assert not set(series.TALLIED) & set(series.FOLDED_TYPES)


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
