"""Compliance over time for the enforcement report (seed 004 §7.2's ``trending`` and ``improving_agents``): a fold
of the recorded checks' times, so it replays like the rest of the report.

Definitions (the seed names the fields, not their meaning):

* **trending** — compliance per UTC hour or day over a window ending at the report's moment (``as_of``, else
  now): the last :data:`WINDOWS` ``["hour"]`` (24) hours or ``["day"]`` (7) days, every bucket listed, empty ones
  with ``checks: 0`` and no rate.
* **improving agents** — agents whose compliance inside that window is higher than before it, each side with at
  least :data:`MIN_CHECKS` checks; the biggest rise first.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import BaseModel, Field

from ledger.core.events import ParameterChecked, RecordedEvent

TrendUnit = Literal["hour", "day"]
WINDOWS: Final[Mapping[str, int]] = {"hour": 24, "day": 7}
MIN_CHECKS: Final = 3


class TrendBucket(BaseModel):
    """The checks recorded in one hour or day (``start`` inclusive, UTC)."""

    start: _dt.datetime
    checks: int
    passed: int
    blocked: int
    compliance_rate: float | None


class Trending(BaseModel):
    """Compliance per hour or day over the window ending at the report's moment, oldest first."""

    unit: TrendUnit
    window_start: _dt.datetime
    window_end: _dt.datetime
    buckets: list[TrendBucket]


class ImprovingAgent(BaseModel):
    """An agent complying more inside the trend window than before it."""

    agent: str
    earlier_checks: int = Field(description="checks before the window")
    earlier_rate: float
    recent_checks: int = Field(description="checks inside the window")
    recent_rate: float
    change: float = Field(description="recent_rate - earlier_rate")


def _rate(passed: int, checks: int) -> float | None:
    return round(passed / checks, 4) if checks else None


def _floor(moment: _dt.datetime, unit: TrendUnit) -> _dt.datetime:
    moment = moment.astimezone(_dt.UTC).replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if unit == "day" else moment


def _starts(last: _dt.datetime, step: _dt.timedelta, count: int) -> list[_dt.datetime]:
    """The window's bucket starts, oldest first, ending at ``last``; those before the calendar's first day (an
    ``as_of`` in the first days of year 1) do not exist and are left out."""
    starts = []
    for i in reversed(range(count)):
        with contextlib.suppress(OverflowError):
            starts.append(last - step * i)
    return starts


@dataclass
class TimeTally:
    """Checks per (agent, UTC hour): checks, passed, blocked. Hours fold into days when the report asks for days."""

    hours: dict[tuple[str, _dt.datetime], list[int]] = field(default_factory=dict)

    def apply(self, rec: RecordedEvent) -> None:
        e = rec.event
        if isinstance(e, ParameterChecked):
            cell = self.hours.setdefault((rec.agent or "", _floor(rec.recorded_at, "hour")), [0, 0, 0])
            cell[0] += 1
            cell[1] += int(e.passed)
            cell[2] += int(not e.allowed)

    def trending(self, end: _dt.datetime, unit: TrendUnit) -> Trending:
        step = _dt.timedelta(hours=1) if unit == "hour" else _dt.timedelta(days=1)
        last = _floor(end, unit)
        starts = _starts(last, step, WINDOWS[unit])
        sums = {s: [0, 0, 0] for s in starts}
        for (_, hour), (n, ok, blocked) in self.hours.items():
            cell = sums.get(_floor(hour, unit))
            if cell is not None and hour <= end:
                cell[0], cell[1], cell[2] = cell[0] + n, cell[1] + ok, cell[2] + blocked
        buckets = [
            TrendBucket(start=s, checks=n, passed=ok, blocked=b, compliance_rate=_rate(ok, n))
            for s, (n, ok, b) in sums.items()
        ]
        return Trending(unit=unit, window_start=starts[0], window_end=end, buckets=buckets)

    def improving(self, window_start: _dt.datetime, end: _dt.datetime) -> list[ImprovingAgent]:
        sides: dict[str, list[int]] = {}  # agent -> earlier checks, earlier passed, recent checks, recent passed
        for (agent, hour), (n, ok, _) in self.hours.items():
            if hour > end:
                continue
            cell = sides.setdefault(agent, [0, 0, 0, 0])
            at = 2 if hour >= window_start else 0
            cell[at], cell[at + 1] = cell[at] + n, cell[at + 1] + ok
        found = []
        for agent, (en, eok, rn, rok) in sides.items():
            if en >= MIN_CHECKS and rn >= MIN_CHECKS and rok * en > eok * rn:
                earlier, recent = round(eok / en, 4), round(rok / rn, 4)
                found.append(
                    ImprovingAgent(
                        agent=agent, earlier_checks=en, earlier_rate=earlier, recent_checks=rn, recent_rate=recent,
                        change=round(recent - earlier, 4),
                    )
                )  # fmt: skip
        return sorted(found, key=lambda a: (-a.change, a.agent))
