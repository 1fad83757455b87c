"""Enforcement analytics (seed 004 §7.2) and the counters behind ``/metrics`` (§7.1 plus the gate's): folds.

Everything here is a fold over recorded events — ``ParameterChecked`` for enforcement, the gate's own events
for stamps, anchors and transitions — so the numbers are the same in every process, after a restart and when
replayed to a past position. Nothing is timed here: how long a check took is not a fact the ledger records
(``api.rest.metrics`` measures it in process).

Definitions (where the seed is silent):

* **compliance rate** = checks whose parameters were valid (``passed``) ÷ checks, the same ratio progressive
  enforcement folds (``projections.enforcement``); ``None`` with no checks. Rates are rounded to 4 places.
* **blocked** = checks whose call was refused (``allowed`` false: outcome ``blocked``, ``invalid_call`` or
  ``oversized``);
  ``by_outcome`` keeps the exact split.
* **current level** of an agent for a tool/action = :func:`ledger.enforcement.effective_level` of the rule the
  server has loaded *now* (rules are configuration, not events) and the agent's checks up to the report's
  position: what its next call would meet under today's rules.
* **problem areas** = tool/actions (all agents together) and agent/tool/actions whose compliance rate is below
  :data:`PROBLEM_THRESHOLD` (0.5, seed §7.2), worst first, with their counts and most-missing parameters.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, Field

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
from ledger.enforcement.decisions import EnforcementLevel, RuleSet, effective_level
from projections import enforcement as enf_proj

if TYPE_CHECKING:
    from ledger.kernel import Kernel

PROBLEM_THRESHOLD: Final = 0.5
TOP_PARAMETERS: Final = 5
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


def _rate(passed: int, checks: int) -> float | None:
    return round(passed / checks, 4) if checks else None


# --- the folds ------------------------------------------------------------------------------------------------


@dataclass
class CheckCell:
    """The recorded checks of one (agent, tool, action)."""

    stats: enf_proj.AgentToolStats = field(default_factory=enf_proj.AgentToolStats)
    refused: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    levels: Counter[str] = field(default_factory=Counter)
    missing: Counter[str] = field(default_factory=Counter)
    invalid: Counter[str] = field(default_factory=Counter)

    def add(self, e: ParameterChecked) -> None:
        self.stats = enf_proj.evolve(self.stats, e.passed)
        self.refused += int(not e.allowed)
        self.outcomes[e.outcome] += 1
        self.levels[e.level] += 1
        self.missing.update(e.missing)
        self.invalid.update(list(e.invalid))  # the parameter names

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


# --- the report -----------------------------------------------------------------------------------------------


class ParameterCount(BaseModel):
    parameter: str
    count: int


class EnforcementTotals(BaseModel):
    """Every check in scope: ``blocked`` = calls refused (outcome blocked, invalid_call or oversized)."""

    checks: int
    passed: int
    failed: int
    allowed: int
    blocked: int
    warned: int
    recorded: int
    bypassed: int
    invalid_calls: int
    oversized: int = Field(0, description="calls refused for exceeding the hard size limits (at every level)")
    disabled: int
    compliance_rate: float | None


class ToolActionSummary(BaseModel):
    """One tool/action over every agent in scope."""

    tool: str
    action: str
    agents: int
    checks: int
    passed: int
    blocked: int
    warned: int
    bypassed: int
    compliance_rate: float | None
    by_outcome: dict[str, int]
    most_missing: list[ParameterCount]
    most_invalid: list[ParameterCount]


class AgentToolLevel(BaseModel):
    """One agent's record on one tool/action and the level its next call meets (``base_level`` is the rule's
    level for this agent after the global switch and the rollout)."""

    tool: str
    action: str
    checks: int
    passed: int
    blocked: int
    consecutive_failures: int
    compliance_rate: float | None
    base_level: EnforcementLevel
    current_level: EnforcementLevel


class AgentSummary(BaseModel):
    agent: str
    checks: int
    passed: int
    blocked: int
    compliance_rate: float | None
    tools: list[AgentToolLevel]


class ProblemArea(BaseModel):
    """A tool/action (``scope: tool``, every agent) or an agent's tool/action (``scope: agent``) whose
    compliance rate is below the threshold."""

    scope: Literal["tool", "agent"]
    agent: str | None
    tool: str
    action: str
    compliance_rate: float
    checks: int
    failed: int
    blocked: int
    common_missing: list[ParameterCount]
    common_invalid: list[ParameterCount]


class EnforcementReport(BaseModel):
    """Seed 004 §7.2's summary over the recorded parameter checks, up to ``position``."""

    position: int
    as_of: _dt.datetime | None
    agent: str | None = Field(None, description="the report is limited to this agent's checks")
    problem_threshold: float = PROBLEM_THRESHOLD
    totals: EnforcementTotals
    by_level: dict[str, int] = Field(description="checks per enforcement level applied")
    by_tool: list[ToolActionSummary]
    by_agent: list[AgentSummary]
    problem_areas: list[ProblemArea]


def _top(counter: Counter[str]) -> list[ParameterCount]:
    ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_PARAMETERS]
    return [ParameterCount(parameter=p, count=n) for p, n in ranked]


def _levels(
    rules: RuleSet, agent: str, tool: str, action: str, stats: enf_proj.AgentToolStats
) -> tuple[EnforcementLevel, EnforcementLevel]:
    rule = rules.rule_for(tool, action, agent)
    if rule is None:
        return EnforcementLevel.DISABLED, EnforcementLevel.DISABLED
    return rule.level, effective_level(rule.level, stats.checks, stats.passed, rules.progressive)


def summarise(
    tally: CheckTally,
    rules: RuleSet,
    *,
    position: int,
    as_of: _dt.datetime | None = None,
    agent: str | None = None,
) -> EnforcementReport:
    """Build the report from folded checks (only ``agent``'s when given) and the rules loaded now."""
    cells = {k: c for k, c in tally.cells.items() if agent is None or k[0] == agent}
    total = CheckCell()
    for cell in cells.values():
        total.merge(cell)
    checks, passed = total.stats.checks, total.stats.passed
    totals = EnforcementTotals(
        checks=checks,
        passed=passed,
        failed=checks - passed,
        allowed=checks - total.refused,
        blocked=total.refused,
        warned=total.outcomes["warned"],
        recorded=total.outcomes["recorded"],
        bypassed=total.outcomes["bypassed"],
        invalid_calls=total.outcomes["invalid_call"],
        oversized=total.outcomes["oversized"],
        disabled=total.outcomes["disabled"],
        compliance_rate=_rate(passed, checks),
    )

    scoped = CheckTally(cells)
    tools: list[ToolActionSummary] = []
    problems: list[ProblemArea] = []
    for (tool, action), cell in sorted(scoped.by_tool().items()):
        s = cell.stats
        tools.append(
            ToolActionSummary(
                tool=tool,
                action=action,
                agents=sum(1 for k in cells if k[1:] == (tool, action)),
                checks=s.checks,
                passed=s.passed,
                blocked=cell.refused,
                warned=cell.outcomes["warned"],
                bypassed=cell.outcomes["bypassed"],
                compliance_rate=_rate(s.passed, s.checks),
                by_outcome=dict(sorted(cell.outcomes.items())),
                most_missing=_top(cell.missing),
                most_invalid=_top(cell.invalid),
            )
        )
        problems += _problem("tool", None, tool, action, cell)

    agents: dict[str, list[tuple[tuple[str, str], CheckCell]]] = {}
    for (who, tool, action), cell in sorted(cells.items()):
        agents.setdefault(who, []).append(((tool, action), cell))
        problems += _problem("agent", who, tool, action, cell)
    by_agent = []
    for who, rows in agents.items():
        levels = []
        for (tool, action), cell in rows:
            base, current = _levels(rules, who, tool, action, cell.stats)
            levels.append(
                AgentToolLevel(
                    tool=tool,
                    action=action,
                    checks=cell.stats.checks,
                    passed=cell.stats.passed,
                    blocked=cell.refused,
                    consecutive_failures=cell.stats.consecutive_failures,
                    compliance_rate=_rate(cell.stats.passed, cell.stats.checks),
                    base_level=base,
                    current_level=current,
                )
            )
        n, ok = sum(c.stats.checks for _, c in rows), sum(c.stats.passed for _, c in rows)
        blocked = sum(c.refused for _, c in rows)
        by_agent.append(
            AgentSummary(agent=who, checks=n, passed=ok, blocked=blocked, compliance_rate=_rate(ok, n), tools=levels)
        )

    problems.sort(key=lambda p: (p.compliance_rate, -p.checks, p.scope != "tool", p.tool, p.action, p.agent or ""))
    return EnforcementReport(
        position=position,
        as_of=as_of,
        agent=agent,
        totals=totals,
        by_level=dict(sorted(total.levels.items())),
        by_tool=tools,
        by_agent=by_agent,
        problem_areas=problems,
    )


def _problem(
    scope: Literal["tool", "agent"], agent: str | None, tool: str, action: str, c: CheckCell
) -> list[ProblemArea]:
    rate = _rate(c.stats.passed, c.stats.checks)
    if rate is None or rate >= PROBLEM_THRESHOLD:
        return []
    return [
        ProblemArea(
            scope=scope,
            agent=agent,
            tool=tool,
            action=action,
            compliance_rate=rate,
            checks=c.stats.checks,
            failed=c.stats.checks - c.stats.passed,
            blocked=c.refused,
            common_missing=_top(c.missing),
            common_invalid=_top(c.invalid),
        )
    ]


def enforcement_report(
    kernel: Kernel,
    agent: str | None = None,
    *,
    as_of: _dt.datetime | None = None,
    position: int | None = None,
) -> EnforcementReport:
    """The report now, or replayed to a time or position; ``agent`` limits it to that agent's checks."""
    until = kernel.until(as_of, position)
    if until is None:
        until = kernel.store.head()[0]  # positions are gapless: everything up to the head is committed
    stream = enf_proj.STREAM_PREFIX + agent if agent else None
    tally = fold_checks(kernel.store.iter_events(0, until, stream=stream, types=list(CHECK_TYPES)))
    return summarise(tally, kernel.config.enforcement_rules, position=until, as_of=as_of, agent=agent)
