"""``compliance-ledger report``: the compliance and the parameter-enforcement reports."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from api.cli.context import AsJson, ledger_for, parse_when
from api.cli.output import out, print_compliance, print_json, print_stop_hooks, table
from ledger.core.limits import MAX_INT64

group = typer.Typer(help="Compliance reports.", no_args_is_help=True)


class TrendChoice(StrEnum):
    """How the enforcement report buckets its trend."""

    hour = "hour"
    day = "day"


@group.command("compliance")
def report_compliance(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option(help="only this agent")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: the report as it was then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64, help="the report as of this position")] = None,
    as_json: AsJson = False,
) -> None:
    """Per-agent searches, stamp requests, passes, fails and pass rate, and the stop hooks' answers."""
    with ledger_for(ctx) as ledger:
        report = ledger.compliance_report(agent, as_of=parse_when(as_of), position=position)
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    out.print(f"compliance at position {report.position}")
    print_compliance(report.agents)
    print_stop_hooks(report.agents)


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def _params(counts: list[Any]) -> str:
    return ", ".join(f"{c.parameter} ({c.count})" for c in counts) or "—"


@group.command("enforcement")
def report_enforcement(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option(help="only this agent's checks")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: replay the checks recorded by then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64, help="the report as of this position")] = None,
    trend: Annotated[TrendChoice, typer.Option(help="bucket the trend by hour (24) or day (7)")] = TrendChoice.day,
    as_json: AsJson = False,
) -> None:
    """Parameter enforcement: checks and compliance per tool/action and agent, current levels, problem areas,
    the trend and the improving agents."""
    from rich.table import Column

    with ledger_for(ctx) as ledger:
        report = ledger.enforcement_report(agent, as_of=parse_when(as_of), position=position, trend=trend.value)
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    t = report.totals
    out.print(f"enforcement at position {report.position}: {t.checks} checks, {_pct(t.compliance_rate)} compliant")
    out.print(f"blocked {t.blocked}, warned {t.warned}, recorded {t.recorded}, bypassed {t.bypassed}")
    took = "—" if t.avg_duration_ms is None else f"{t.avg_duration_ms:.3f} ms"
    out.print(f"average check {took}")

    def where() -> Column:
        return Column("tool.action", no_wrap=True)

    def numbers(*names: str) -> list[Column]:
        return [Column(name, justify="right", no_wrap=True) for name in names]

    tools = table(where(), *numbers("checks", "compliant", "blocked", "warned"), "most missing", title="by tool/action")
    for r in report.by_tool:
        row = (str(r.checks), _pct(r.compliance_rate), str(r.blocked), str(r.warned), _params(r.most_missing))
        tools.add_row(f"{r.tool}.{r.action}", *row)
    agents = table("agent", where(), *numbers("checks", "compliant"), "level now (base)", title="by agent")
    for a in report.by_agent:
        for lv in a.tools:
            level = f"{lv.current_level.value} ({lv.base_level.value})"
            agents.add_row(a.agent, f"{lv.tool}.{lv.action}", str(lv.checks), _pct(lv.compliance_rate), level)
    trending = report.trending
    since = f"since {trending.window_start.isoformat()}"
    by_time = table(
        trending.unit, *numbers("checks", "compliant", "blocked"), title=f"trend per {trending.unit} {since}"
    )
    for b in trending.buckets:
        if b.checks:  # the JSON lists every bucket; the table only those with checks
            by_time.add_row(b.start.isoformat(), str(b.checks), _pct(b.compliance_rate), str(b.blocked))
    out.print(tools, agents, by_time)
    for better in report.improving_agents:
        out.print(f"improving: {better.agent} {_pct(better.earlier_rate)} -> {_pct(better.recent_rate)}")
    if not report.problem_areas:
        out.print(f"no problem areas (compliance below {report.problem_threshold:.0%})")
        return
    problems = table(
        "agent", where(), *numbers("compliant", "checks", "failed"), "common missing", title="problem areas"
    )
    for p in report.problem_areas:
        counts = (_pct(p.compliance_rate), str(p.checks), str(p.failed), _params(p.common_missing))
        problems.add_row(p.agent or "(all)", f"{p.tool}.{p.action}", *counts)
    out.print(problems)


def register(app: typer.Typer) -> None:
    """Add the ``report`` group to the root command."""
    app.add_typer(group, name="report")
