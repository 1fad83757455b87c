"""Compliance counts per agent: searches, stamp requests, passes, fails and pass rate."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ledger.events import ComplianceRefused, ComplianceStamped, MemorySearched, RecordedEvent

_COUNTED = (MemorySearched, ComplianceStamped, ComplianceRefused)


@dataclass(frozen=True, slots=True)
class AgentCompliance:
    """One agent's record at the gate."""

    agent: str
    searches: int = 0
    passes: int = 0
    fails: int = 0

    @property
    def stamp_requests(self) -> int:
        return self.passes + self.fails

    @property
    def pass_rate(self) -> float | None:
        return round(self.passes / self.stamp_requests, 4) if self.stamp_requests else None


def compliance_key(rec: RecordedEvent) -> str | None:
    """Keyed by the agent the event was recorded for."""
    return rec.agent if isinstance(rec.event, _COUNTED) else None


def evolve(state: AgentCompliance | None, rec: RecordedEvent) -> AgentCompliance:
    state = state or AgentCompliance(agent=rec.agent or "")
    e = rec.event
    if isinstance(e, MemorySearched):
        return replace(state, searches=state.searches + 1)
    if isinstance(e, ComplianceStamped):
        return replace(state, passes=state.passes + 1)
    if isinstance(e, ComplianceRefused):
        return replace(state, fails=state.fails + 1)
    return state
