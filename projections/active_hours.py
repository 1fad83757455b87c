"""Active hours: the measure of the union of the intervals in which any session was active; a pure fold.

A session is active from its clock-in (``SessionStarted``) to its clock-out (``SessionEnded``). A session never
clocked out counts until its last event plus an idle timeout (default 30 minutes). Overlapping sessions count
once, and time in which no session was active (idle time, holidays) does not count at all, so memory decays
with use, not with the calendar.

The fold keeps one small immutable span per session; the union is measured on demand, in
O(sessions · log sessions). For the projection runner: ``Projection("active_time", active_time_key, evolve)``.
"""

from __future__ import annotations

import bisect
import datetime as _dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ledger.core.events import RecordedEvent, SessionEnded, SessionErased, SessionStarted
from projections._copy import with_changes
from projections.sessions import session_key

IDLE_TIMEOUT = _dt.timedelta(minutes=30)
"""How long a session never clocked out stays active after its last event, unless told otherwise."""

ACTIVE_TIME = "active_time"
"""The single key under which the runner holds the state: active time is one fold over every session stream."""


@dataclass(frozen=True, slots=True)
class SessionSpan:
    """When one session clocked in, when it was last seen, and when it clocked out (``None`` while open)."""

    session_id: str
    started_at: _dt.datetime
    last_event_at: _dt.datetime
    ended_at: _dt.datetime | None = None

    def stop(self, idle_timeout: _dt.timedelta) -> _dt.datetime:
        """Where the session's activity ends: its clock-out, or its last event plus the idle timeout."""
        if self.ended_at is not None:
            return self.ended_at
        return self.last_event_at + idle_timeout


@dataclass(frozen=True, slots=True)
class ActiveTime:
    """The span of every session seen so far, in the order the sessions started in the log."""

    spans: tuple[SessionSpan, ...] = ()


def active_time_key(rec: RecordedEvent) -> str | None:
    """Every session-stream event feeds the one active-time state; other events do not touch it."""
    return ACTIVE_TIME if session_key(rec) is not None else None


def evolve_span(span: SessionSpan | None, rec: RecordedEvent) -> SessionSpan | None:
    """Apply one event of a session stream to that session's span.

    Events of a session never started (in the events seen) are ignored, as are events after its clock-out.
    """
    e = rec.event
    if isinstance(e, SessionStarted):
        return SessionSpan(session_id=e.session_id, started_at=rec.recorded_at, last_event_at=rec.recorded_at)
    if span is None or span.ended_at is not None:
        return span
    if isinstance(e, SessionEnded):
        return with_changes(span, last_event_at=rec.recorded_at, ended_at=rec.recorded_at)
    if isinstance(e, SessionErased):
        return span  # a person's erasure of its text is no activity of the session
    return with_changes(span, last_event_at=rec.recorded_at)


def evolve(state: ActiveTime | None, rec: RecordedEvent) -> ActiveTime:
    """Apply one event of any stream; only session-stream events change the state.

    Finding and replacing the session's span is O(sessions) per event. A runner keyed per session can instead
    fold :func:`evolve_span` with ``session_key`` and measure ``ActiveTime(tuple(spans))``.
    """
    state = state if state is not None else ActiveTime()
    key = session_key(rec)
    if key is None:
        return state
    spans = state.spans
    # The newest session is the likeliest to act next: search from the end.
    for i in range(len(spans) - 1, -1, -1):
        if spans[i].session_id == key:
            new = evolve_span(spans[i], rec)
            if new is None or new is spans[i]:
                return state
            return ActiveTime((*spans[:i], new, *spans[i + 1 :]))
    new = evolve_span(None, rec)
    if new is None:
        return state
    return ActiveTime((*spans, new))


def fold(events: Iterable[RecordedEvent]) -> ActiveTime:
    """Fold the log (or any part of it) from the start."""
    state = ActiveTime()
    for rec in events:
        state = evolve(state, rec)
    return state


def _union_seconds(
    spans: Iterable[SessionSpan], lo: _dt.datetime | None, hi: _dt.datetime, idle_timeout: _dt.timedelta
) -> float:
    """Seconds covered by the union of the spans' intervals, clipped to ``[lo, hi]`` (``lo=None``: unbounded)."""
    intervals = sorted(
        (max(s.started_at, lo) if lo is not None else s.started_at, min(s.stop(idle_timeout), hi)) for s in spans
    )
    total = _dt.timedelta(0)
    current: tuple[_dt.datetime, _dt.datetime] | None = None  # the merged interval being grown
    for start, end in intervals:
        if end <= start:
            continue
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = (start, end)
        elif end > current[1]:
            current = (current[0], end)
    if current is not None:
        total += current[1] - current[0]
    return total.total_seconds()


def active_hours(state: ActiveTime | None, at: _dt.datetime, idle_timeout: _dt.timedelta = IDLE_TIMEOUT) -> float:
    """Active hours from the first clock-in up to the moment ``at``.

    An open session counts until ``min(at, last event + idle_timeout)``. For an exact value at a past moment,
    fold the log only up to that moment (``replay --as-of``): the state cannot know an open session's last
    event as of an earlier time.
    """
    if state is None:
        return 0.0
    return _union_seconds(state.spans, None, at, idle_timeout) / 3600


def hours_between(
    state: ActiveTime | None,
    start: _dt.datetime,
    end: _dt.datetime,
    idle_timeout: _dt.timedelta = IDLE_TIMEOUT,
) -> float:
    """Active hours within ``[start, end]``, e.g. since a block was last reinforced; 0 when ``end <= start``."""
    if state is None or end <= start:
        return 0.0
    return _union_seconds(state.spans, start, end, idle_timeout) / 3600


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _micros(delta: _dt.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _merge(intervals: Iterable[tuple[Any, Any]]) -> list[list[Any]]:
    """Sorted ``(start, end)`` intervals merged where they overlap or touch; empty ones dropped."""
    merged: list[list[Any]] = []
    for start, end in intervals:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1][1] = end
        else:
            merged.append([start, end])
    return merged


@dataclass(frozen=True, slots=True)
class ActiveClock:
    """The active-hours clock as of one moment: ``hours_at(t)`` for any earlier ``t`` in O(log sessions).

    Built once per read from the spans (the union merged and prefix-summed), so scoring many blocks costs one
    sort plus one bisection per block instead of one union per block.
    """

    at: _dt.datetime
    starts: tuple[_dt.datetime, ...] = ()
    ends: tuple[_dt.datetime, ...] = ()
    before: tuple[float, ...] = ()  # active seconds before each merged interval starts
    now: float = 0.0  # active hours up to ``at``

    @classmethod
    def of(
        cls, spans: Iterable[SessionSpan], at: _dt.datetime, idle_timeout: _dt.timedelta = IDLE_TIMEOUT
    ) -> ActiveClock:
        merged = _merge(sorted((s.started_at, min(s.stop(idle_timeout), at)) for s in spans))
        before: list[float] = []
        total = 0.0
        for start, end in merged:
            before.append(total)
            total += (end - start).total_seconds()
        return cls(at, tuple(m[0] for m in merged), tuple(m[1] for m in merged), tuple(before), total / 3600)

    @classmethod
    def of_micros(
        cls,
        spans: Iterable[tuple[int, int, int | None]],
        at: _dt.datetime,
        idle_timeout: _dt.timedelta = IDLE_TIMEOUT,
    ) -> ActiveClock:
        """:meth:`of` over ``(started_at, last_event_at, ended_at)`` as microseconds since the epoch (a
        ``ColumnTable`` of spans gives them without building a span object each): the same clock."""
        idle, now = _micros(idle_timeout), _micros(at - _EPOCH)
        pairs = sorted((start, min(ended if ended is not None else last + idle, now)) for start, last, ended in spans)
        merged = _merge(pairs)
        before: list[float] = []
        total = 0
        for start, end in merged:
            before.append(total / 1e6)
            total += end - start
        starts = tuple(_EPOCH + _dt.timedelta(microseconds=m[0]) for m in merged)
        ends = tuple(_EPOCH + _dt.timedelta(microseconds=m[1]) for m in merged)
        return cls(at, starts, ends, tuple(before), total / 1e6 / 3600)

    def hours_at(self, moment: _dt.datetime) -> float:
        """Active hours from the first clock-in up to ``moment`` (clipped to the clock's own moment)."""
        moment = min(moment, self.at)
        i = bisect.bisect_right(self.starts, moment) - 1
        if i < 0:
            return 0.0
        inside = (min(moment, self.ends[i]) - self.starts[i]).total_seconds()
        return (self.before[i] + max(inside, 0.0)) / 3600

    def hours_since(self, moment: _dt.datetime) -> float:
        """Active hours from ``moment`` to the clock's moment (0 for a moment in the future)."""
        return max(self.now - self.hours_at(moment), 0.0)

    def hours_since_micros(self) -> Callable[[int], float]:
        """:meth:`hours_since` for a moment given as microseconds since the epoch (as a ``ColumnTable`` stores
        it), with the same arithmetic, so the same float: for scoring every block without building a moment each.
        """
        at = _micros(self.at - _EPOCH)
        starts = [_micros(s - _EPOCH) for s in self.starts]
        ends = [_micros(e - _EPOCH) for e in self.ends]
        before, now, right = self.before, self.now, bisect.bisect_right

        def hours_since(moment: int) -> float:
            moment = min(moment, at)
            i = right(starts, moment) - 1
            if i < 0:
                return max(now - 0.0, 0.0)
            inside = (min(moment, ends[i]) - starts[i]) / 1_000_000  # = timedelta.total_seconds()
            return max(now - (before[i] + max(inside, 0.0)) / 3600, 0.0)

        return hours_since
