"""Compliance counts per agent: searches, stamp requests, passes, fails and pass rate, anchors, transitions, and
the client hooks' turns and stop decisions."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, fields

from ledger.core.events import (
    AnchorAttempted,
    AnchorLocked,
    ComplianceRefused,
    ComplianceStamped,
    MemoryRecalled,
    MemorySearched,
    RecordedEvent,
    StopHookDecided,
    TaskTransitioned,
    TaskTransitionRefused,
    TurnStarted,
)
from projections._copy import in_place, with_changes

# The event types an agent's record counts: the only ones `compliance_key` names an agent for.
COUNTED = (
    MemorySearched,
    MemoryRecalled,
    ComplianceStamped,
    ComplianceRefused,
    AnchorAttempted,
    AnchorLocked,
    TaskTransitioned,
    TaskTransitionRefused,
    TurnStarted,
    StopHookDecided,
)


@dataclass(frozen=True, slots=True)
class AgentCompliance:
    """One agent's record at the gate."""

    agent: str
    searches: int = 0
    passes: int = 0
    fails: int = 0
    anchor_attempts: int = 0
    anchor_passes: int = 0
    anchored_sessions: int = 0  # sessions with at least one anchor attempt
    first_try_passes: int = 0
    lockouts: int = 0
    transitions: int = 0
    transition_refusals: int = 0
    refusal_codes: tuple[tuple[str, int], ...] = ()  # workflow refusal code -> count, sorted by code
    turns_started: int = 0  # the client's UserPromptSubmit hook
    stops_blocked: int = 0  # the client's Stop hook: held at the gate
    stops_allowed: int = 0  # ... let through with a stamp earned in the turn
    stop_loop_guard_passes: int = 0  # ... let through without one, as the client was already held once

    @property
    def stamp_requests(self) -> int:
        return self.passes + self.fails

    @property
    def pass_rate(self) -> float | None:
        return round(self.passes / self.stamp_requests, 4) if self.stamp_requests else None

    @property
    def first_try_pass_rate(self) -> float | None:
        """Share of anchored sessions whose first anchor attempt validated."""
        return round(self.first_try_passes / self.anchored_sessions, 4) if self.anchored_sessions else None


_COUNTED_TYPES = frozenset(COUNTED)
_IN_PLACE = in_place(AgentCompliance)


def compliance_key(rec: RecordedEvent) -> str | None:
    """Keyed by the agent the event was recorded for (events match on their exact type, as in
    ``sessions._evolve``)."""
    return rec.agent if type(rec.event) in _COUNTED_TYPES else None


def hourly_key(rec: RecordedEvent) -> str | None:
    """``2026-01-31T12|agent``: the hour (UTC) the event was recorded in and the agent, for the counts per hour (the
    same fold, keyed finer). ``recorded_at`` never goes backwards in position order, so an hour's count up to a
    position never changes once a later hour has begun."""
    agent = compliance_key(rec)
    return None if agent is None else f"{rec.recorded_at.astimezone(_dt.UTC):%Y-%m-%dT%H}|{agent}"


def combined(a: AgentCompliance, b: AgentCompliance) -> AgentCompliance:
    """One agent's counts over two disjoint stretches of the log (e.g. two hours): every count added up."""
    codes = dict(a.refusal_codes)
    for code, n in b.refusal_codes:
        codes[code] = codes.get(code, 0) + n
    summed = {f.name: getattr(a, f.name) + getattr(b, f.name) for f in fields(AgentCompliance) if f.type == "int"}
    return AgentCompliance(agent=a.agent, refusal_codes=tuple(sorted(codes.items())), **summed)


def evolve(state: AgentCompliance | None, rec: RecordedEvent) -> AgentCompliance:
    return _evolve(state, rec, with_changes)


def evolve_owned(state: AgentCompliance | None, rec: RecordedEvent) -> AgentCompliance:
    """:func:`evolve` for bulk replay: changes ``state`` in place, so only for a state made by
    :func:`own` or by this fold itself and shown to no one yet. Equal to what :func:`evolve` returns."""
    return _evolve(state, rec, _IN_PLACE)


def own(state: AgentCompliance) -> AgentCompliance:
    """A private copy of ``state`` for :func:`evolve_owned` (its fields are immutable values)."""
    return with_changes(state)


def _evolve(
    state: AgentCompliance | None, rec: RecordedEvent, change: Callable[..., AgentCompliance]
) -> AgentCompliance:
    """The fold itself; ``change(obj, **fields)`` makes the next state (a copy, or the same object changed)."""
    state = state or AgentCompliance(agent=rec.agent or "")
    e = rec.event
    if type(e) is MemorySearched:
        return change(state, searches=state.searches + 1)
    if type(e) is MemoryRecalled:  # a recall with a query is a search that issues a token
        return change(state, searches=state.searches + 1) if e.query is not None else state
    if type(e) is ComplianceStamped:
        return change(state, passes=state.passes + 1)
    if type(e) is ComplianceRefused:
        return change(state, fails=state.fails + 1)
    if type(e) is AnchorAttempted:
        return change(
            state,
            anchor_attempts=state.anchor_attempts + 1,
            anchor_passes=state.anchor_passes + e.validated,
            anchored_sessions=state.anchored_sessions + e.first_in_session,
            first_try_passes=state.first_try_passes + (e.first_in_session and e.validated),
        )
    if type(e) is AnchorLocked:
        return change(state, lockouts=state.lockouts + 1)
    if type(e) is TaskTransitioned:
        return change(state, transitions=state.transitions + 1)
    if type(e) is TaskTransitionRefused:
        codes = dict(state.refusal_codes)
        for code in e.codes:
            codes[code] = codes.get(code, 0) + 1
        return change(
            state, transition_refusals=state.transition_refusals + 1, refusal_codes=tuple(sorted(codes.items()))
        )
    if type(e) is TurnStarted:
        return change(state, turns_started=state.turns_started + 1)
    if type(e) is StopHookDecided:
        if e.outcome == "blocked":
            return change(state, stops_blocked=state.stops_blocked + 1)
        if e.outcome == "allowed":
            return change(state, stops_allowed=state.stops_allowed + 1)
        return change(state, stop_loop_guard_passes=state.stop_loop_guard_passes + 1)
    return state
