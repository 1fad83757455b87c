"""Progressive enforcement state: per (agent, tool, action), the fold of the recorded parameter checks."""

from __future__ import annotations

from dataclasses import dataclass

from ledger.core.events import ParameterChecked, RecordedEvent

STREAM_PREFIX = "enforcement:"


@dataclass(frozen=True, slots=True)
class AgentToolStats:
    """The fold of one (agent, tool, action)'s recorded checks (seed 4.2's AgentStats)."""

    checks: int = 0
    passed: int = 0
    consecutive_failures: int = 0

    @property
    def compliance_rate(self) -> float | None:
        return self.passed / self.checks if self.checks else None


def evolve(stats: AgentToolStats, passed: bool) -> AgentToolStats:
    """Fold one recorded check."""
    return AgentToolStats(
        checks=stats.checks + 1,
        passed=stats.passed + int(passed),
        consecutive_failures=0 if passed else stats.consecutive_failures + 1,
    )


def stats_key(rec: RecordedEvent) -> tuple[str, str, str] | None:
    """Keyed by (agent, tool, action) of each recorded check (matched on the exact type, as in the other folds)."""
    e = rec.event
    return (rec.agent or "", e.tool, e.action) if type(e) is ParameterChecked else None


def evolve_checked(stats: AgentToolStats | None, rec: RecordedEvent) -> AgentToolStats:
    e = rec.event
    assert isinstance(e, ParameterChecked)
    return evolve(stats or AgentToolStats(), e.passed)
