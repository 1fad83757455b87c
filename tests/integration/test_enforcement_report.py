"""The enforcement report (seed 004 §7.2) on a real database: totals, per tool and agent, current levels, problem
areas, as of a past moment (on the in-memory store: the report is a fold), and the ``report enforcement`` command
(on the SQLite file a command line opens)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from api.cli import app
from ledger.core.errors import InvalidInput
from ledger.enforcement import decisions as enf
from ledger.enforcement.report import EnforcementReport
from ledger.service import Actor, Ledger
from tests.conftest import MEMORY, LedgerFactory

GOOD, LAZY = Actor("good-bot", "mcp"), Actor("lazy-bot", "mcp")
T0 = _dt.datetime(2026, 3, 1, 9, 0, tzinfo=_dt.UTC)
GOOD_UPDATE = {
    "work_notes": "Implemented the token refresh endpoint and wired it into the router.",
    "progress_made": "Refresh tokens now rotate on every use; the old one is revoked.",
}
THIN_UPDATE = {"work_notes": "fixed stuff"}  # placeholder notes, no progress_made


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> _dt.datetime:
        return self.now


def record_history(ledger: Ledger, clock: Clock) -> None:
    """good-bot: 4 good updates at 09:00. lazy-bot, from 10:00: 6 thin updates (the sixth meets strict) and a
    completion without a summary."""
    ledger.task_create(GOOD, "t-1", "Refresh tokens")
    for _ in range(4):
        assert ledger.manage_task(GOOD, "update", {"task_id": "t-1", **GOOD_UPDATE}).success
    clock.now = T0 + _dt.timedelta(hours=1)
    answers = [ledger.manage_task(LAZY, "update", {"task_id": "t-1", **THIN_UPDATE}) for _ in range(6)]
    assert [a.enforcement_level for a in answers] == ["warning"] * 5 + ["strict"]
    assert [a.success for a in answers] == [True] * 5 + [False]
    assert not ledger.manage_task(LAZY, "complete", {"task_id": "t-1"}).success


@pytest.fixture
def history(make_ledger: LedgerFactory) -> Ledger:
    clock = Clock()
    ledger = make_ledger(MEMORY, clock=clock)
    record_history(ledger, clock)
    return ledger


def test_totals_and_each_tool_action_count_every_recorded_check(history: Ledger) -> None:
    report = history.enforcement_report()
    t = report.totals
    assert (t.checks, t.passed, t.failed, t.blocked, t.allowed, t.warned) == (11, 4, 7, 2, 9, 5)
    assert t.compliance_rate == round(4 / 11, 4) and t.bypassed == 0 and t.invalid_calls == 0
    assert report.by_level == {"strict": 2, "warning": 9}
    assert report.applied_by_level == {"strict": 2}  # the two blocked calls (seed 7.1 record_enforcement)
    assert report.position == history.store.head()[0]
    update, complete = (
        next(r for r in report.by_tool if r.action == a and r.tool == "manage_task") for a in ("update", "complete")
    )
    assert (update.agents, update.checks, update.passed, update.compliance_rate) == (2, 10, 4, 0.4)
    assert update.by_outcome == {"blocked": 1, "passed": 4, "warned": 5}
    assert [(m.parameter, m.count) for m in update.most_missing] == [("progress_made", 6)]
    assert [(m.parameter, m.count) for m in update.most_invalid] == [("work_notes", 6)]
    assert (complete.checks, complete.compliance_rate, complete.blocked) == (1, 0.0, 1)
    assert [(m.parameter, m.count) for m in complete.most_missing] == [("completion_summary", 1)]


def test_each_agent_shows_its_compliance_and_the_level_its_next_call_meets(history: Ledger) -> None:
    report = history.enforcement_report()
    agents = {a.agent: a for a in report.by_agent}
    assert set(agents) == {"good-bot", "lazy-bot"}
    good, lazy = agents["good-bot"], agents["lazy-bot"]
    assert (good.checks, good.compliance_rate, lazy.checks, lazy.compliance_rate, lazy.blocked) == (4, 1.0, 7, 0.0, 2)
    [good_update] = good.tools
    lazy_update = next(t for t in lazy.tools if t.action == "update")
    assert (good_update.base_level, good_update.current_level) == ("warning", "warning")
    assert (lazy_update.base_level, lazy_update.current_level) == ("warning", "strict")
    assert lazy_update.consecutive_failures == 6
    # The same level the service applies to the agent's next call.
    rules = history.enforcement_rules
    stats = history.enforcement_stats("lazy-bot")[("manage_task", "update")]
    assert rules.level_for("manage_task", "update", "lazy-bot", stats) is enf.EnforcementLevel.STRICT


def test_problem_areas_are_the_tool_actions_and_agents_below_half_compliance_worst_first(history: Ledger) -> None:
    problems = history.enforcement_report().problem_areas
    assert [(p.scope, p.agent, p.action, p.compliance_rate, p.checks) for p in problems] == [
        ("agent", "lazy-bot", "update", 0.0, 6),
        ("tool", None, "complete", 0.0, 1),
        ("agent", "lazy-bot", "complete", 0.0, 1),
        ("tool", None, "update", 0.4, 10),
    ]
    worst = problems[0]
    assert (worst.failed, worst.blocked) == (6, 1)
    assert [(m.parameter, m.count) for m in worst.common_missing] == [("progress_made", 6)]


def test_as_of_and_position_replay_the_report_to_a_past_moment(history: Ledger) -> None:
    """At 09:30 only good-bot's checks had been recorded: no problem areas then."""
    then = history.enforcement_report(as_of=T0 + _dt.timedelta(minutes=30))
    assert then.totals.checks == 4 and then.totals.compliance_rate == 1.0 and then.problem_areas == []
    assert [a.agent for a in then.by_agent] == ["good-bot"]
    same = history.enforcement_report(position=then.position)
    # the trend ends at as_of, or when the position was recorded
    skip: dict[str, Any] = {"as_of": True, "trending": {"window_end"}}
    assert same.model_dump(exclude=skip) == then.model_dump(exclude=skip)
    assert history.enforcement_report(position=0).totals.checks == 0
    with pytest.raises(InvalidInput, match="both given"):
        history.enforcement_report(as_of=T0, position=3)
    with pytest.raises(InvalidInput, match="no UTC offset"):
        history.enforcement_report(as_of=T0.replace(tzinfo=None))


def test_agent_limits_the_report_to_that_agents_checks(history: Ledger) -> None:
    lazy = history.enforcement_report("lazy-bot")
    assert lazy.agent == "lazy-bot" and lazy.totals.checks == 7 and lazy.totals.compliance_rate == 0.0
    assert {p.agent for p in lazy.problem_areas} == {None, "lazy-bot"}
    assert history.enforcement_report("nobody").totals.checks == 0


def cli(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "report", "enforcement", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_cli_prints_the_tables_and_problem_areas_and_the_same_report_as_json(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    clock = Clock()
    ledger = make_ledger(clock=clock)  # the default SQLite file under --home
    record_history(ledger, clock)
    code, text, _ = cli(tmp_path)
    assert code == 0
    assert "11 checks, 36% compliant" in text and "blocked 2, warned 5" in text
    assert "lazy-bot" in text and "manage_task.update" in text and "strict (warning)" in text  # level now (base)
    assert "problem areas" in text and "(all)" in text

    code, raw, _ = cli(tmp_path, "--json")
    printed = EnforcementReport.model_validate(json.loads(raw))
    # the trend's window ends at the CLI's own now (its real clock, not this test's)
    assert code == 0 and printed.model_dump(exclude={"trending"}) == ledger.enforcement_report().model_dump(
        exclude={"trending"}
    )

    code, raw, _ = cli(tmp_path, "--json", "--agent", "good-bot", "--as-of", "2026-03-01T09:30:00Z")
    as_json = json.loads(raw)
    assert code == 0 and as_json["totals"]["checks"] == 4 and as_json["agent"] == "good-bot"

    code, text, _ = cli(tmp_path, "--agent", "good-bot")
    assert code == 0 and "no problem areas" in text

    code, text, _ = cli(tmp_path, "--as-of", "2026-03-01T12:00:00Z", "--trend", "hour")
    assert code == 0 and "trend per hour since 2026-02-28T13:00:00+00:00" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("2026-03-01T")]
    assert rows == [["2026-03-01T09:00:00+00:00", "4", "100%", "0"], ["2026-03-01T10:00:00+00:00", "7", "0%", "2"]]

    code, _, err = cli(tmp_path, "--as-of", "yesterday")
    assert code == 2 and "is not a time" in err
