"""Enforcement analytics (seed 004 §7.2) over the folds of :mod:`.counts`, which also count ``/metrics`` (§7.1).

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
  position: what its next call would meet under today's rules (a rule with ``conditions`` counts here only when
  they test nothing but ``agent_id``: role and task type belong to a call).
* **problem areas** = tool/actions (all agents together) and agent/tool/actions whose compliance rate is below
  :data:`PROBLEM_THRESHOLD` (0.5, seed §7.2), worst first, with their counts and most-missing parameters.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, Field

from ledger.enforcement.counts import CHECK_TYPES, CheckCell, CheckTally

# Re-exported (``x as x``) for the adapters: the folds ``/metrics`` reads, and the shapes and constants of the
# interface they publish (levels, outcomes, hints, hard limits).
from ledger.enforcement.counts import COUNTED_TYPES as COUNTED_TYPES
from ledger.enforcement.counts import LedgerCounts as LedgerCounts
from ledger.enforcement.decisions import EnforcementLevel as EnforcementLevel
from ledger.enforcement.decisions import Outcome as Outcome
from ledger.enforcement.decisions import RuleSet, effective_level
from ledger.enforcement.guidance import PARAM_HINTS as PARAM_HINTS
from ledger.enforcement.limits import limit_for as limit_for
from ledger.enforcement.trends import MIN_CHECKS, ImprovingAgent, TimeTally, Trending
from ledger.enforcement.trends import TrendUnit as TrendUnit
from projections import enforcement as enf_proj

if TYPE_CHECKING:
    from ledger.kernel import Kernel

PROBLEM_THRESHOLD: Final = 0.5
TOP_PARAMETERS: Final = 5


def _rate(passed: int, checks: int) -> float | None:
    return round(passed / checks, 4) if checks else None


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
    avg_duration_ms: float | None = Field(
        None,
        description="mean time to validate and decide a check (seed 7.2); checks recorded before it was timed "
        "are left out; null with none",
    )


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
    applied_by_level: dict[str, int] = Field(
        default_factory=dict,
        description="enforcement applied (calls blocked) per level, as enforcement_applied_total counts it",
    )
    by_tool: list[ToolActionSummary]
    by_agent: list[AgentSummary]
    problem_areas: list[ProblemArea]
    trending: Trending = Field(description="compliance per hour or day over the window ending at the report's moment")
    improving_agents: list[ImprovingAgent] = Field(
        description=f"agents complying more inside the trend window than before it (at least {MIN_CHECKS} checks each)"
    )


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
    now: _dt.datetime,
    times: TimeTally | None = None,
    trend: TrendUnit = "day",
    as_of: _dt.datetime | None = None,
    agent: str | None = None,
) -> EnforcementReport:
    """Build the report from folded checks (only ``agent``'s when given) and the rules loaded now; ``times`` (the
    same checks by hour) gives the trend over the window ending at ``as_of`` or else ``now``."""
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
        avg_duration_ms=round(total.duration_ms / total.timed, 3) if total.timed else None,
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
    times = times or TimeTally()
    if agent is not None:
        times = TimeTally({k: v for k, v in times.hours.items() if k[0] == agent})
    trending = times.trending(as_of or now, trend)
    return EnforcementReport(
        position=position,
        as_of=as_of,
        agent=agent,
        totals=totals,
        by_level=dict(sorted(total.levels.items())),
        applied_by_level=dict(sorted(total.applied.items())),
        by_tool=tools,
        by_agent=by_agent,
        problem_areas=problems,
        trending=trending,
        improving_agents=times.improving(trending.window_start, trending.window_end),
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
    rules: RuleSet,
    agent: str | None = None,
    *,
    as_of: _dt.datetime | None = None,
    position: int | None = None,
    trend: TrendUnit = "day",
) -> EnforcementReport:
    """The report now, or replayed to a time or position; ``agent`` limits it to that agent's checks; ``trend``
    picks hourly or daily buckets for ``trending``."""
    until = kernel.until(as_of, position)
    if until is None:
        until = kernel.store.head()[0]  # positions are gapless: everything up to the head is committed
    stream = enf_proj.STREAM_PREFIX + agent if agent else None
    tally, times = CheckTally(), TimeTally()
    for rec in kernel.store.iter_events(0, until, stream=stream, types=list(CHECK_TYPES)):
        tally.apply(rec)
        times.apply(rec)
    now = kernel.clock()
    if position is not None:  # replayed to a position: the trend ends when that position was recorded
        at = next(iter(kernel.store.iter_events(until - 1, until)), None) if until > 0 else None
        now = at.recorded_at if at is not None else now
    return summarise(
        tally, rules, position=until, now=now, times=times, trend=trend,
        as_of=as_of, agent=agent,
    )  # fmt: skip
