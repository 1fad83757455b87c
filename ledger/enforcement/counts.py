"""The folds behind the enforcement report and ``/metrics``: parameter checks per (agent, tool, action) and the
gate's decisions, counted from recorded events, so the numbers are the same in every process, after a restart
and when replayed to a past position."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from ledger.core.events import (
    AnchorAttempted,
    AnchorLocked,
    ComplianceRefused,
    ComplianceStamped,
    ParameterChecked,
    RecordedEvent,
    TaskTransitioned,
    TaskTransitionRefused,
)
from projections import enforcement as enf_proj

CHECK_TYPES: Final = ("ParameterChecked",)
GATE_TYPES: Final = (
    "ComplianceStamped",
    "ComplianceRefused",
    "AnchorAttempted",
    "AnchorLocked",
    "TaskTransitioned",
    "TaskTransitionRefused",
)
COUNTED_TYPES: Final = (*CHECK_TYPES, *GATE_TYPES)  # what LedgerCounts folds

Key = tuple[str, str, str]  # (agent, tool, action)


def result(passed: bool) -> str:
    """Seed 7.1's ``result`` label: ``success`` when the parameters were valid, else ``failure``."""
    return "success" if passed else "failure"


@dataclass
class CheckCell:
    """The recorded checks of one (agent, tool, action)."""

    stats: enf_proj.AgentToolStats = field(default_factory=enf_proj.AgentToolStats)
    refused: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    levels: Counter[str] = field(default_factory=Counter)
    missing: Counter[str] = field(default_factory=Counter)
    invalid: Counter[str] = field(default_factory=Counter)
    results: Counter[tuple[str, str]] = field(default_factory=Counter)  # (outcome, success|failure)
    applied: Counter[str] = field(default_factory=Counter)  # blocked calls, by the level they were blocked at
    timed: int = 0  # checks that carry a duration (v2 events)
    duration_ms: float = 0.0  # their sum

    def add(self, e: ParameterChecked) -> None:
        self.stats = enf_proj.evolve(self.stats, e.passed)
        self.refused += int(not e.allowed)
        self.outcomes[e.outcome] += 1
        self.levels[e.level] += 1
        self.missing.update(e.missing)
        self.invalid.update(list(e.invalid))  # the parameter names
        self.results[(e.outcome, result(e.passed))] += 1
        if not e.allowed:
            self.applied[e.level] += 1
        if e.duration_ms is not None:
            self.timed += 1
            self.duration_ms += e.duration_ms

    def merge(self, other: CheckCell) -> None:
        """Add another cell's counts (for sums over agents; ``consecutive_failures`` is not summed)."""
        self.stats = enf_proj.AgentToolStats(
            checks=self.stats.checks + other.stats.checks, passed=self.stats.passed + other.stats.passed
        )
        self.refused += other.refused
        self.outcomes.update(other.outcomes)
        self.levels.update(other.levels)
        self.missing.update(other.missing)
        self.invalid.update(other.invalid)
        self.results.update(other.results)
        self.applied.update(other.applied)
        self.timed += other.timed
        self.duration_ms += other.duration_ms


@dataclass
class CheckTally:
    """The fold of ``ParameterChecked`` events, per (agent, tool, action)."""

    cells: dict[Key, CheckCell] = field(default_factory=dict)

    def apply(self, rec: RecordedEvent) -> None:
        e = rec.event
        if isinstance(e, ParameterChecked):
            key = (rec.agent or "", e.tool, e.action)
            cell = self.cells.get(key)
            if cell is None:
                cell = self.cells[key] = CheckCell()
            cell.add(e)

    def by_tool(self) -> dict[tuple[str, str], CheckCell]:
        """The cells summed over agents, per (tool, action)."""
        out: dict[tuple[str, str], CheckCell] = {}
        for (_, tool, action), cell in self.cells.items():
            out.setdefault((tool, action), CheckCell()).merge(cell)
        return out


@dataclass
class GateTally:
    """The gate's decisions: stamps issued and refused (by reason), anchors validated and rejected, lockouts,
    task transitions made and refused (and the refusal codes)."""

    stamps_issued: int = 0
    stamps_refused: Counter[str] = field(default_factory=Counter)
    anchors_validated: int = 0
    anchors_rejected: int = 0
    anchor_lockouts: int = 0
    transitions: int = 0
    transitions_refused: int = 0
    refusal_codes: Counter[str] = field(default_factory=Counter)

    def apply(self, rec: RecordedEvent) -> None:
        e = rec.event
        if isinstance(e, ComplianceStamped):
            self.stamps_issued += 1
        elif isinstance(e, ComplianceRefused):
            self.stamps_refused[e.reason] += 1
        elif isinstance(e, AnchorAttempted):
            if e.validated:
                self.anchors_validated += 1
            else:
                self.anchors_rejected += 1
        elif isinstance(e, AnchorLocked):
            self.anchor_lockouts += 1
        elif isinstance(e, TaskTransitioned):
            self.transitions += 1
        elif isinstance(e, TaskTransitionRefused):
            self.transitions_refused += 1
            self.refusal_codes.update(e.codes)


@dataclass
class LedgerCounts:
    """What ``/metrics`` counts, folded up to ``position``: parameter checks and the gate's decisions."""

    checks: CheckTally = field(default_factory=CheckTally)
    gate: GateTally = field(default_factory=GateTally)
    position: int = 0

    def run(self, events: Iterable[RecordedEvent], until: int | None = None) -> None:
        """Fold ``events`` (those already folded are skipped). ``until``: the position the events were read up
        to, when they were filtered by type — the checkpoint moves past the events of other types too."""
        for rec in events:
            if rec.position <= self.position:
                continue  # already folded: catching up is idempotent
            self.checks.apply(rec)
            self.gate.apply(rec)
            self.position = rec.position
        if until is not None:
            self.position = max(self.position, until)


def fold_checks(events: Iterable[RecordedEvent]) -> CheckTally:
    """Fold ``ParameterChecked`` events (others are ignored)."""
    tally = CheckTally()
    for rec in events:
        tally.apply(rec)
    return tally
