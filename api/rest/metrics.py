"""Prometheus ``GET /metrics`` and ``GET /reports/enforcement`` (seed 004 §7): REST routes over the ledger.

How the numbers are made:

* **One registry per app.** :func:`registry_for` builds a ``CollectorRegistry`` for the app it is included in, never
  the process-global one, so several apps in one process (tests) each have their own series.
* **Counters come from the log, not from this process.** Every scrape tails the ledger from a checkpoint
  (:class:`ledger.enforcement_report.LedgerCounts`, under a lock; only the event types counted) and renders
  the totals: ``parameter_validation_total{tool,action,result,outcome}`` (``result`` as seed 7.1:
  ``success``/``failure``; ``outcome`` what was done), ``enforcement_applied_total{tool,action,level}`` (calls
  blocked, by the level they were blocked at — seed 7.1's ``record_enforcement``), ``parameter_compliance_rate
  {agent_id}`` (valid checks ÷ checks per agent, cut to :data:`AGENT_SERIES` agents plus ``other``),
  ``parameter_compliance_rate_by_tool{tool,action}`` (valid checks ÷
  checks, every agent), and the gate's ``ledger_stamps_issued_total``, ``ledger_stamps_refused_total{reason}``,
  ``ledger_anchors_validated_total``, ``ledger_anchors_rejected_total``, ``ledger_anchor_lockouts_total``,
  ``ledger_task_transitions_total``, ``ledger_task_transitions_refused_total`` and
  ``ledger_task_transition_refusal_codes_total{code}``. So they count every process writing to the database
  (other servers, the stdio MCP server, the CLI), survive restarts, and agree with the reports. Known
  tool/action/outcome/level/reason combinations are exported at 0 before they first happen; a tool or action
  the rules do not know is exported as ``other`` (callers cannot mint label values).
* **Durations are measured in this process.** How long a check took is not a ledger fact, so
  ``parameter_validation_duration_seconds{tool,action}`` is a histogram filled by timing
  ``check_parameters`` on *this app's* ledger instance: :func:`registry_for` replaces that instance's bound method
  with a timing wrapper (the class and other instances are untouched). It times the whole recorded check —
  fold the agent's stats, validate, decide, append ``ParameterChecked`` — for every managed-tool call made
  through this app (MCP over HTTP and REST alike), and observes only checks that were recorded, so its
  ``_count`` moves with ``parameter_validation_total``. Validation alone is benchmarked by
  ``scripts/bench_enforcement.py``.
* **Authentication** is the other routes' (``Caller``): open while no API key exists (the server then binds
  loopback only), a key once keys exist. ``/metrics`` counts every agent, so it needs an auditor or admin key
  — give Prometheus one (``keys add --agent prometheus --auditor``) and set it as the scrape's bearer
  credentials. ``/reports/enforcement`` shows an agent key only its own rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Final, get_args

from fastapi import APIRouter, Query, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, exposition, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from api.params import AsOf, Position
from api.rest.context import Caller
from api.rest.deps import LedgerDep, MetricsDep
from ledger.core import access
from ledger.core.events import RefusalReason
from ledger.enforcement.report import (
    COUNTED_TYPES,
    EnforcementLevel,
    EnforcementReport,
    LedgerCounts,
    Outcome,
    TrendUnit,
)
from ledger.service import Actor, Ledger

# Prometheus text format 0.0.4 (prometheus-client >= 0.21 names it; older versions' LATEST is that format).
CONTENT_TYPE: Final[str] = getattr(exposition, "CONTENT_TYPE_PLAIN_0_0_4", CONTENT_TYPE_LATEST)
# Checks take well under a millisecond to a few milliseconds; 5 ms is the seed's p95 target.
DURATION_BUCKETS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
OTHER: Final = "other"
# parameter_compliance_rate{agent_id}: at most this many agents get a series of their own (the most checks first,
# ties by name); the rest, and an agent literally named "other", are one series agent_id="other".
AGENT_SERIES: Final = 20
# Which result each outcome can carry: a check passes only as "passed" or, with no enforcement, "disabled".
RESULTS: Final[Mapping[str, tuple[str, ...]]] = {
    o: ("success",) if o == "passed" else ("success", "failure") if o == "disabled" else ("failure",)
    for o in get_args(Outcome)
}


def agent_series(agents: Mapping[str, list[int]], limit: int | None = None) -> list[tuple[str, list[int]]]:
    """The per-agent (checks, passed) cut to ``limit`` (default :data:`AGENT_SERIES`) series: the agents with the
    most checks, then ``other``."""
    limit = AGENT_SERIES if limit is None else limit
    ranked = sorted(((n, a) for a, (n, _) in agents.items() if n and a != OTHER), key=lambda x: (-x[0], x[1]))
    kept = {a for _, a in ranked[:limit]}
    rest = [0, 0]
    for agent, (checks, passed) in agents.items():
        if agent not in kept:
            rest = [rest[0] + checks, rest[1] + passed]
    series = sorted((a, agents[a]) for a in kept)
    return series + ([(OTHER, rest)] if rest[0] else [])


class LedgerCollector(Collector):
    """Renders :class:`LedgerCounts`, caught up with the log on every scrape."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.counts = LedgerCounts()
        self.lock = threading.Lock()
        rules = ledger.enforcement_rules.rules
        self.known: frozenset[tuple[str, str]] = frozenset(rules)
        self.tools: frozenset[str] = frozenset(tool for tool, _ in rules)

    def describe(self) -> list[Metric]:
        return []  # nothing to check at registration; reading the store waits for the first scrape

    def label(self, tool: str, action: str) -> tuple[str, str]:
        """The (tool, action) labels: as recorded when the rules know them, else ``other``."""
        if (tool, action) in self.known:
            return tool, action
        return (tool if tool in self.tools else OTHER), OTHER

    def collect(self) -> Iterator[Metric]:
        with self.lock:  # scrapes run on a thread pool; the checkpointed fold is shared
            head = self.ledger.store.head()[0]
            store = self.ledger.store
            self.counts.run(store.iter_events(self.counts.position, head, types=list(COUNTED_TYPES)), until=head)
            families = list(self._families())
        yield from families

    def _families(self) -> Iterator[Metric]:
        results: dict[tuple[str, ...], int] = {}
        applied: dict[tuple[str, ...], int] = {}
        rates: dict[tuple[str, str], list[int]] = {}
        agents: dict[str, list[int]] = {}
        for tool, action in sorted(self.known):
            results |= {(tool, action, r, o): 0 for o, rs in RESULTS.items() for r in rs}
            applied |= {(tool, action, lv.value): 0 for lv in EnforcementLevel}
        for (agent, tool, action), cell in self.counts.checks.cells.items():
            t, a = self.label(tool, action)
            for (outcome, result), n in cell.results.items():
                results[(t, a, result, outcome)] = results.get((t, a, result, outcome), 0) + n
            for level, n in cell.applied.items():
                applied[(t, a, level)] = applied.get((t, a, level), 0) + n
            checks, passed = rates.setdefault((t, a), [0, 0])
            rates[(t, a)] = [checks + cell.stats.checks, passed + cell.stats.passed]
            checks, passed = agents.setdefault(agent, [0, 0])
            agents[agent] = [checks + cell.stats.checks, passed + cell.stats.passed]

        yield _counter(
            "parameter_validation_total",
            "Parameter checks recorded, by result (success|failure: were the parameters valid) and outcome "
            "(passed|disabled|recorded|warned|blocked|invalid_call|bypassed|oversized)",
            ["tool", "action", "result", "outcome"],
            results,
        )
        yield _counter(
            "enforcement_applied_total",
            "Enforcement actions applied: calls blocked, by the enforcement level they were blocked at",
            ["tool", "action", "level"],
            applied,
        )
        by_agent = GaugeMetricFamily(
            "parameter_compliance_rate",
            f"Rate of compliant parameter provision per agent (valid checks / checks, every tool); the "
            f'{AGENT_SERIES} agents with the most checks, the rest together as agent_id="{OTHER}"',
            labels=["agent_id"],
        )
        for agent, (checks, passed) in agent_series(agents):
            by_agent.add_metric([agent], passed / checks)
        yield by_agent
        rate = GaugeMetricFamily(
            "parameter_compliance_rate_by_tool",
            "Share of recorded checks whose parameters were valid, every agent (tool/actions with checks only)",
            labels=["tool", "action"],
        )
        for (tool, action), (checks, passed) in sorted(rates.items()):
            rate.add_metric([tool, action], passed / checks)
        yield rate

        gate = self.counts.gate
        yield _counter(
            "ledger_stamps_issued_total", "Compliance stamps issued (ComplianceStamped)", [], {(): gate.stamps_issued}
        )
        refused: dict[tuple[str, ...], int] = {(str(r),): 0 for r in get_args(RefusalReason)}
        refused |= {(r,): n for r, n in gate.stamps_refused.items()}
        yield _counter("ledger_stamps_refused_total", "Stamp requests refused, by reason", ["reason"], refused)
        yield _counter("ledger_anchors_validated_total", "Anchor proofs validated", [], {(): gate.anchors_validated})
        yield _counter("ledger_anchors_rejected_total", "Anchor proofs rejected", [], {(): gate.anchors_rejected})
        yield _counter(
            "ledger_anchor_lockouts_total", "Sessions locked out of anchoring", [], {(): gate.anchor_lockouts}
        )
        yield _counter("ledger_task_transitions_total", "Workflow transitions made", [], {(): gate.transitions})
        yield _counter(
            "ledger_task_transitions_refused_total", "Workflow transitions refused", [], {(): gate.transitions_refused}
        )
        yield _counter(
            "ledger_task_transition_refusal_codes_total",
            "Reasons given in refused transitions, by code (a refusal may carry several)",
            ["code"],
            {(c,): n for c, n in gate.refusal_codes.items()},
        )
        position = GaugeMetricFamily("ledger_metrics_position", "The log position these counters are folded up to")
        position.add_metric([], self.counts.position)
        yield position


def _counter(
    name: str, documentation: str, labels: list[str], values: Mapping[tuple[str, ...], int]
) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation, labels=labels)
    for key, value in sorted(values.items()):
        family.add_metric(list(key), value)
    return family


def registry_for(ledger: Ledger) -> CollectorRegistry:
    """The app's own registry (see the module docstring), its durations observed from now on; ``api/rest/app.py``
    keeps it on the app's state, where :data:`api.rest.deps.MetricsDep` finds it."""
    registry = CollectorRegistry(auto_describe=True)
    collector = LedgerCollector(ledger)
    registry.register(collector)
    durations = Histogram(
        "parameter_validation_duration_seconds",
        "Time to check a managed tool call's parameters and record the check (this process only)",
        ["tool", "action"],
        buckets=DURATION_BUCKETS,
        registry=registry,
    )
    ledger.observe_parameter_checks(
        lambda tool, action, seconds: durations.labels(*collector.label(tool, action)).observe(seconds)
    )
    return registry


def router() -> APIRouter:
    """``/metrics`` (the app's registry, :func:`registry_for`) and ``/reports/enforcement``."""
    api = APIRouter()

    @api.get(
        "/metrics",
        tags=["ops"],
        response_class=Response,
        responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text exposition format 0.0.4"}},
    )
    async def metrics(registry: MetricsDep, who: Caller) -> Response:
        def exposition(actor: Actor) -> bytes:
            access.require_overview(actor, "the metrics")
            return generate_latest(registry)  # the collector reads the log: in the request's worker thread

        return Response(await who.run(exposition), media_type=CONTENT_TYPE)

    @api.get("/reports/enforcement", response_model=EnforcementReport, tags=["reports"])
    async def report(
        ledger: LedgerDep,
        who: Caller,
        agent: str | None = None,
        as_of: AsOf = None,
        position: Position = None,
        trend: Annotated[TrendUnit, Query(description="bucket the report's trending by hour (24) or day (7)")] = "day",
    ) -> Any:
        return await who.run(
            lambda actor: ledger.enforcement_report(
                access.report_agent(actor, agent), as_of=as_of, position=position, trend=trend
            )
        )

    return api
