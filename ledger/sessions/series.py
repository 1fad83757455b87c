"""The compliance report as a time series: the gate's counts per agent, per hour or per day, over a window.

Each bucket is the compliance fold (:mod:`projections.compliance`) run from nothing over only the events recorded
in that bucket, so a bucket's numbers are what happened in it, and the buckets of a window add up to the
difference between the cumulative reports (``GET /reports/compliance``) at its end and at its start.

The event types the fold only counts (one field, plus one, whatever the payload: :data:`TALLIED`) are never
decoded: :class:`Tallies` counts them per agent and hour with an aggregate query and keeps the counts, catching up
from where it stopped (the log only grows, and ``recorded_at`` never goes backwards in position order, so an
hour's count up to a position never changes). Only the few types whose payload matters are read and folded.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import threading
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, Field

from ledger.core.errors import InvalidInput
from ledger.kernel import Actor, Kernel
from ledger.keys import access
from ledger.sessions.report import AgentReport
from projections import compliance

Bucket = Literal["hour", "day"]
STEP: dict[str, _dt.timedelta] = {"hour": _dt.timedelta(hours=1), "day": _dt.timedelta(days=1)}
MAX_BUCKETS = 744  # 31 days by the hour, or two years by the day
# The types the fold turns into "field + 1" whatever their payload (tests/unit/test_series.py holds the fold to it).
TALLIED: dict[str, str] = {
    "MemorySearched": "searches",
    "ComplianceStamped": "passes",
    "ComplianceRefused": "fails",
    "AnchorLocked": "lockouts",
    "TaskTransitioned": "transitions",
    "TurnStarted": "turns_started",
}
FOLDED_TYPES = [cls.type_name for cls in compliance.COUNTED if cls.type_name not in TALLIED]
HOUR_CHARS = 13  # the hour's prefix of the fixed-width recorded_at text: 2026-01-31T12


class SeriesPoint(BaseModel):
    """What each agent did in one bucket ``[start, start + bucket)``; agents with nothing recorded are left out."""

    start: _dt.datetime
    agents: list[AgentReport]


class ComplianceSeries(BaseModel):
    """The gate's counts per agent and bucket over ``[start, end)``, and their totals over the window."""

    start: _dt.datetime
    end: _dt.datetime
    bucket: Bucket
    agent: str | None = Field(None, description="the series is limited to this agent")
    first_position: int = Field(description="the first log position the window covers")
    last_position: int = Field(description="the last log position the window covers")
    points: list[SeriesPoint]
    totals: list[AgentReport] = Field(description="each agent's counts over the whole window")


class Tallies:
    """Counts of the :data:`TALLIED` types per hour (the ``recorded_at`` prefix ``2026-01-31T12``), agent and type,
    of every event up to :attr:`position`; one per process, caught up under a lock by whoever reads it."""

    def __init__(self) -> None:
        self.position = 0
        self.by_hour: dict[str, dict[tuple[str, str], int]] = {}
        self.lock = threading.Lock()

    def read(
        self, kernel: Kernel, until: int, hours: list[str], agent: str | None
    ) -> list[tuple[str, str, str, int]] | None:
        """(agent, type, hour, count) of ``hours`` for positions up to ``until``; None when ``until`` is behind the
        counts (an ``as_of`` in the past): the caller then counts that range itself."""
        with self.lock:
            if until < self.position:
                return None
            if until > self.position:
                for who, type_name, hour, n in kernel.store.count_by_agent_and_time(
                    self.position, until, list(TALLIED), prefix_chars=HOUR_CHARS
                ):
                    if who is not None:  # as the fold: an event recorded for no agent is nobody's count
                        row = self.by_hour.setdefault(hour, {})
                        row[(who, type_name)] = row.get((who, type_name), 0) + n
                self.position = until
            return [
                (who, type_name, hour, n)
                for hour in hours
                for (who, type_name), n in self.by_hour.get(hour, {}).items()
                if agent is None or who == agent
            ]


def floor(moment: _dt.datetime, bucket: Bucket) -> _dt.datetime:
    """The start of the bucket holding ``moment`` (UTC)."""
    moment = moment.astimezone(_dt.UTC).replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if bucket == "day" else moment


def check_window(start: _dt.datetime, end: _dt.datetime, bucket: str) -> tuple[_dt.datetime, _dt.datetime, Bucket]:
    """The window aligned to whole buckets, or :class:`InvalidInput` saying what to send instead."""
    if bucket not in STEP:
        raise InvalidInput(f"bucket {bucket!r} is not known", "send bucket=hour or bucket=day")
    if start.tzinfo is None or end.tzinfo is None:
        raise InvalidInput("start and end need a UTC offset", "send ISO times such as 2026-01-31T12:00:00Z")
    if end <= start:
        raise InvalidInput("end is not after start", "send an end later than the start")
    chosen: Bucket = "hour" if bucket == "hour" else "day"
    try:
        first = floor(start, chosen)
        last = floor(end - _dt.timedelta(microseconds=1), chosen) + STEP[chosen]
        first - _dt.timedelta(microseconds=1)  # the position lookup reads just before the window
    except OverflowError:
        raise InvalidInput(
            "start or end is out of the range of times the ledger handles",
            "send ISO times between the years 0002 and 9998",
        ) from None
    buckets = (last - first) // STEP[chosen]
    if buckets > MAX_BUCKETS:
        raise InvalidInput(
            f"the window holds {buckets} {chosen}s, more than {MAX_BUCKETS}",
            "send a shorter window, or bucket=day for a long one",
        )
    return first, last, chosen


def _hours(first: _dt.datetime, last: _dt.datetime) -> Iterator[_dt.datetime]:
    moment = first
    while moment < last:
        yield moment
        moment += STEP["hour"]


def compliance_series(
    kernel: Kernel,
    start: _dt.datetime,
    end: _dt.datetime,
    bucket: str = "hour",
    agent: str | None = None,
    viewer: Actor | None = None,
    tallies: Tallies | None = None,
) -> ComplianceSeries:
    """Fold the counted events recorded in ``[start, end)`` (widened to whole buckets) into one report per
    bucket; an agent key sees only its own rows."""
    if viewer is not None:
        agent = access.report_agent(viewer, agent)
    first, last, chosen = check_window(start, end, bucket)
    step = STEP[chosen]
    after = kernel.store.position_as_of(first - _dt.timedelta(microseconds=1))
    until = kernel.store.position_as_of(last - _dt.timedelta(microseconds=1))
    per_bucket: dict[_dt.datetime, dict[str, compliance.AgentCompliance]] = {}
    whole: dict[str, compliance.AgentCompliance] = {}
    counted = None
    if tallies is not None:
        counted = tallies.read(kernel, until, [h.strftime("%Y-%m-%dT%H") for h in _hours(first, last)], agent)
    if counted is None:
        counted = [
            (who, type_name, hour, n)
            for who, type_name, hour, n in kernel.store.count_by_agent_and_time(
                after, until, list(TALLIED), prefix_chars=HOUR_CHARS, since=first, before=last, agent=agent
            )
            if who is not None  # as the fold: an event recorded for no agent is nobody's count
        ]
    for key, type_name, hour, n in counted:
        moment = floor(_dt.datetime.fromisoformat(f"{hour}:00").replace(tzinfo=_dt.UTC), chosen)
        rows = per_bucket.setdefault(moment, {})
        rows[key] = _add(rows.get(key), key, TALLIED[type_name], n)
        whole[key] = _add(whole.get(key), key, TALLIED[type_name], n)
    for rec in kernel.store.iter_events(after, until, types=FOLDED_TYPES, agent=agent):
        key = compliance.compliance_key(rec)
        if key is None or rec.recorded_at < first or rec.recorded_at >= last:
            continue
        rows = per_bucket.setdefault(floor(rec.recorded_at, chosen), {})
        rows[key] = compliance.evolve(rows.get(key), rec)
        whole[key] = compliance.evolve(whole.get(key), rec)
    points = []
    moment = first
    while moment < last:
        rows = per_bucket.get(moment, {})
        points.append(SeriesPoint(start=moment, agents=[AgentReport.of(a) for _, a in sorted(rows.items())]))
        moment += step
    return ComplianceSeries(
        start=first,
        end=last,
        bucket=chosen,
        agent=agent,
        first_position=after + 1,
        last_position=until,
        points=points,
        totals=[AgentReport.of(a) for _, a in sorted(whole.items())],
    )


def _add(state: compliance.AgentCompliance | None, agent: str, field: str, n: int) -> compliance.AgentCompliance:
    """``state`` with ``n`` more of ``field``: what the fold makes of ``n`` events of a tallied type."""
    state = state or compliance.AgentCompliance(agent=agent)
    return dataclasses.replace(state, **{field: getattr(state, field) + n})
