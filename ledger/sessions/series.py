"""The compliance report as a time series: the gate's counts per agent, per hour or per day, over a window.

The counts come from the compliance fold itself keyed per hour and agent (``COMPLIANCE_HOURLY``,
:func:`projections.compliance.hourly_key`), a live read model each process restores from its snapshot and
catches up from the log. A bucket's numbers are what happened in it, and the buckets of a window add up to the
difference between the cumulative reports (``GET /reports/compliance``) at its end and at its start: appends stamp
``recorded_at`` in position order, so the hours of a window are exactly the positions between those two reports.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Hashable, Mapping

from ledger.core import access
from ledger.core.errors import InvalidInput
from ledger.kernel import Actor, Kernel
from ledger.sessions.report import AgentReport, Bucket, ComplianceSeries, SeriesPoint
from projections.compliance import AgentCompliance, combined

STEP: dict[str, _dt.timedelta] = {"hour": _dt.timedelta(hours=1), "day": _dt.timedelta(days=1)}
MAX_BUCKETS = 744  # 31 days by the hour, or two years by the day


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


def compliance_series(
    kernel: Kernel,
    hourly: Mapping[Hashable, AgentCompliance],
    start: _dt.datetime,
    end: _dt.datetime,
    bucket: str = "hour",
    agent: str | None = None,
    viewer: Actor | None = None,
) -> ComplianceSeries:
    """Add up the per-hour states ``hourly`` (``COMPLIANCE_HOURLY``, caught up at least to the window's end) of the
    hours in ``[start, end)`` (widened to whole buckets) into one report per bucket; an agent key sees only its own
    rows."""
    if viewer is not None:
        agent = access.report_agent(viewer, agent)
    first, last, chosen = check_window(start, end, bucket)
    step = STEP[chosen]
    since, until = f"{first:%Y-%m-%dT%H}", f"{last:%Y-%m-%dT%H}"
    per_bucket: dict[_dt.datetime, dict[str, AgentCompliance]] = {}
    whole: dict[str, AgentCompliance] = {}
    for key, state in hourly.items():
        hour, _, who = str(key).partition("|")
        if not since <= hour < until or (agent is not None and who != agent):
            continue
        moment = floor(_dt.datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=_dt.UTC), chosen)
        rows = per_bucket.setdefault(moment, {})
        rows[who] = combined(rows[who], state) if who in rows else state
        whole[who] = combined(whole[who], state) if who in whole else state
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
        first_position=kernel.store.position_as_of(first - _dt.timedelta(microseconds=1)) + 1,
        last_position=kernel.store.position_as_of(last - _dt.timedelta(microseconds=1)),
        points=points,
        totals=[AgentReport.of(a) for _, a in sorted(whole.items())],
    )
