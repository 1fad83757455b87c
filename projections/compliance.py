"""Compliance counts per agent: searches, stamp requests, passes, fails and pass rate."""

from __future__ import annotations

from dataclasses import dataclass

from ledger.events import (
    AnchorAttempted,
    AnchorLocked,
    ComplianceRefused,
    ComplianceStamped,
    MemoryRecalled,
    MemorySearched,
    RecordedEvent,
    TaskTransitioned,
    TaskTransitionRefused,
)
from projections._copy import with_changes

_COUNTED = (
    MemorySearched,
    MemoryRecalled,
    ComplianceStamped,
    ComplianceRefused,
    AnchorAttempted,
    AnchorLocked,
    TaskTransitioned,
    TaskTransitionRefused,
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


def compliance_key(rec: RecordedEvent) -> str | None:
    """Keyed by the agent the event was recorded for."""
    return rec.agent if isinstance(rec.event, _COUNTED) else None


def evolve(state: AgentCompliance | None, rec: RecordedEvent) -> AgentCompliance:
    state = state or AgentCompliance(agent=rec.agent or "")
    e = rec.event
    if isinstance(e, MemorySearched):
        return with_changes(state, searches=state.searches + 1)
    if isinstance(e, MemoryRecalled):  # a recall with a query is a search that issues a token
        return with_changes(state, searches=state.searches + 1) if e.query is not None else state
    if isinstance(e, ComplianceStamped):
        return with_changes(state, passes=state.passes + 1)
    if isinstance(e, ComplianceRefused):
        return with_changes(state, fails=state.fails + 1)
    if isinstance(e, AnchorAttempted):
        return with_changes(
            state,
            anchor_attempts=state.anchor_attempts + 1,
            anchor_passes=state.anchor_passes + e.validated,
            anchored_sessions=state.anchored_sessions + e.first_in_session,
            first_try_passes=state.first_try_passes + (e.first_in_session and e.validated),
        )
    if isinstance(e, AnchorLocked):
        return with_changes(state, lockouts=state.lockouts + 1)
    if isinstance(e, TaskTransitioned):
        return with_changes(state, transitions=state.transitions + 1)
    if isinstance(e, TaskTransitionRefused):
        codes = dict(state.refusal_codes)
        for code in e.codes:
            codes[code] = codes.get(code, 0) + 1
        return with_changes(
            state, transition_refusals=state.transition_refusals + 1, refusal_codes=tuple(sorted(codes.items()))
        )
    return state
