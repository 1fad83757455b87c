"""Prometheus ``GET /metrics`` and ``GET /reports/enforcement`` (seed 004 §7): REST routes over the ledger.

How the numbers are made:

* **One registry per app.** :func:`router` builds a ``CollectorRegistry`` for the app it is included in, never
  the process-global one, so several apps in one process (tests) each have their own series.
* **Counters come from the log, not from this process.** Every scrape tails the ledger from a checkpoint
  (:class:`ledger.enforcement_report.LedgerCounts`, under a lock; only the event types counted) and renders
  the totals: ``parameter_validation_total{tool,action,outcome}``, ``enforcement_applied_total{tool,action,
  level}`` (the level each check was decided at), ``parameter_compliance_rate{tool,action}`` (valid checks ÷
  checks, every agent), and the gate's ``ledger_stamps_issued_total``, ``ledger_stamps_refused_total{reason}``,
  ``ledger_anchors_validated_total``, ``ledger_anchors_rejected_total``, ``ledger_anchor_lockouts_total``,
  ``ledger_task_transitions_total``, ``ledger_task_transitions_refused_total`` and
  ``ledger_task_transition_refusal_codes_total{code}``. So they count every process writing to the database
  (other servers, the stdio MCP server, the CLI), survive restarts, and agree with the reports. Known
  tool/action/outcome/level/reason combinations are exported at 0 before they first happen; a tool or action
  the rules do not know is exported as ``other`` (callers cannot mint label values).
* **Durations are measured in this process.** How long a check took is not a ledger fact, so
  ``parameter_validation_duration_seconds{tool,action}`` is a histogram filled by timing
  ``check_parameters`` on *this app's* ledger instance: :func:`router` replaces that instance's bound method
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
from typing import Any, Final, get_args

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, exposition, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from api.params import AsOf, Position
from api.rest.context import Caller
from ledger.core.events import RefusalReason
from ledger.enforcement.decisions import EnforcementLevel, Outcome
from ledger.enforcement.report import COUNTED_TYPES, EnforcementReport, LedgerCounts
from ledger.keys import access
from ledger.service import Actor, Ledger

# Prometheus text format 0.0.4 (prometheus-client >= 0.21 names it; older versions' LATEST is that format).
CONTENT_TYPE: Final[str] = getattr(exposition, "CONTENT_TYPE_PLAIN_0_0_4", CONTENT_TYPE_LATEST)
# Checks take well under a millisecond to a few milliseconds; 5 ms is the seed's p95 target.
DURATION_BUCKETS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
OTHER: Final = "other"


class LedgerCollector(Collector):
    """Renders :class:`LedgerCounts`, caught up with the log on every scrape."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.counts = LedgerCounts()
        self.lock = threading.Lock()
        rules = ledger.config.enforcement_rules.rules
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
        outcomes: dict[tuple[str, ...], int] = {}
        levels: dict[tuple[str, ...], int] = {}
        rates: dict[tuple[str, str], list[int]] = {}
        for tool, action in sorted(self.known):
            outcomes |= {(tool, action, o): 0 for o in get_args(Outcome)}
            levels |= {(tool, action, lv.value): 0 for lv in EnforcementLevel}
        for (_, tool, action), cell in self.counts.checks.cells.items():
            t, a = self.label(tool, action)
            for outcome, n in cell.outcomes.items():
                outcomes[(t, a, outcome)] = outcomes.get((t, a, outcome), 0) + n
            for level, n in cell.levels.items():
                levels[(t, a, level)] = levels.get((t, a, level), 0) + n
            checks, passed = rates.setdefault((t, a), [0, 0])
            rates[(t, a)] = [checks + cell.stats.checks, passed + cell.stats.passed]

        yield _counter(
            "parameter_validation_total",
            "Parameter checks recorded, by outcome "
            "(passed|disabled|recorded|warned|blocked|invalid_call|bypassed|oversized)",
            ["tool", "action", "outcome"],
            outcomes,
        )
        yield _counter(
            "enforcement_applied_total",
            "Parameter checks recorded, by the enforcement level they were decided at",
            ["tool", "action", "level"],
            levels,
        )
        rate = GaugeMetricFamily(
            "parameter_compliance_rate",
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


def router(ledger: Ledger) -> APIRouter:
    """``/metrics`` (its own registry, see the module docstring) and ``/reports/enforcement``."""
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
    ledger.enforcement.check_observers.append(
        lambda tool, action, seconds: durations.labels(*collector.label(tool, action)).observe(seconds)
    )
    api = APIRouter()

    @api.get(
        "/metrics",
        tags=["ops"],
        response_class=Response,
        responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text exposition format 0.0.4"}},
    )
    async def metrics(who: Caller) -> Response:
        def exposition(actor: Actor) -> bytes:
            access.require_overview(actor, "the metrics")
            return generate_latest(registry)  # the collector reads the log: in the request's worker thread

        return Response(await who.run(exposition), media_type=CONTENT_TYPE)

    @api.get("/reports/enforcement", response_model=EnforcementReport, tags=["reports"])
    async def report(
        who: Caller,
        agent: str | None = None,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(
            lambda actor: ledger.enforcement_report(access.report_agent(actor, agent), as_of=as_of, position=position)
        )

    return api
