"""Seed 004 fidelity (issue 15), the pure parts: rules with ``conditions`` and ``applies_to`` (seed 4.1), the
per-agent series cut of ``parameter_compliance_rate``, the trend fold, and the seed's texts in validation."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

from api.rest.metrics import OTHER, RESULTS, agent_series
from ledger.core.events import ParameterChecked, RecordedEvent
from ledger.enforcement import decisions as enf
from ledger.enforcement.trends import TimeTally

STRICT, SOFT, WARNING = enf.EnforcementLevel.STRICT, enf.EnforcementLevel.SOFT, enf.EnforcementLevel.WARNING


def rules_with(update: Any) -> enf.RuleSet:
    return enf.parse_rules({"enforcement": {"tools": {"manage_task": {"update": update}}}})


def test_a_rule_applies_to_a_context_only_when_every_condition_matches() -> None:
    """Seed 4.1's EnforcementRule.applies_to, verbatim semantics."""
    rule = enf.Rule("manage_task", "update", STRICT, (), (), conditions={"task_type": "bug", "role": "dev"})
    assert rule.applies_to({"task_type": "bug", "role": "dev", "agent_id": "x"})
    assert not rule.applies_to({"task_type": "bug", "role": "qa"})
    assert not rule.applies_to({"task_type": "bug"})
    assert enf.Rule("manage_task", "update", STRICT, (), ()).applies_to({})


def test_the_first_listed_rule_whose_conditions_match_is_the_rule() -> None:
    """Seed 4.1's RuleManager.get_rule: the first rule for the tool/action that applies to the context."""
    rules = rules_with(
        [
            {"conditions": {"task_type": "bug"}, "level": "strict"},
            {"conditions": {"agent_id": "trusted"}, "level": "soft"},
            {"level": "warning"},
        ]
    )
    assert rules.uses("task_type") and rules.uses("agent_id") and not rules.uses("role")

    def level(agent: str, **context: Any) -> enf.EnforcementLevel:
        rule = rules.rule_for("manage_task", "update", agent, context)
        assert rule is not None
        return rule.level

    assert level("trusted", task_type="bug") is STRICT  # listed first
    assert level("trusted", task_type="feature") is SOFT
    assert level("someone", task_type="feature") is WARNING
    assert level("someone") is WARNING
    assert rules.rules[("manage_task", "update")].level is WARNING  # the unconditional rule


def test_with_no_unconditional_rule_listed_the_fallback_is_the_default_level() -> None:
    rules = enf.parse_rules(
        {
            "enforcement": {
                "default_level": "soft",
                "tools": {"manage_task": {"update": [{"conditions": {"role": "qa"}, "level": "strict"}]}},
            }
        }
    )
    assert rules.rule_for("manage_task", "update", "bot", {"role": "qa"}).level is STRICT  # type: ignore[union-attr]
    assert rules.rule_for("manage_task", "update", "bot", {"role": "dev"}).level is SOFT  # type: ignore[union-attr]


def test_a_disabled_agent_stays_disabled_whatever_rule_matches() -> None:
    rules = enf.parse_rules(
        {
            "enforcement": {
                "tools": {"manage_task": {"update": [{"conditions": {"role": "qa"}, "level": "strict"}]}},
                "rollout": {"agents": {"test_agent": {"enabled": False}}},
            }
        }
    )
    rule = rules.rule_for("manage_task", "update", "test_agent", {"role": "qa"})
    assert rule is not None and rule.level is enf.EnforcementLevel.DISABLED


@pytest.mark.parametrize(
    ("update", "key", "problem"),
    [
        ([{"conditions": {"priority": "high"}}], "update[0].conditions.priority", "unknown key"),
        ([{"conditions": {"role": ["dev"]}}], "update[0].conditions.role", "must be a single value"),
        ([{"level": "soft"}, {"conditions": {"role": "qa"}}], "update[0]", "must come last"),
        ([{"conditions": "role=qa"}], "update[0].conditions", "must be a mapping"),
    ],
)
def test_bad_conditions_name_the_key(update: Any, key: str, problem: str) -> None:
    with pytest.raises(enf.EnforcementConfigError) as caught:
        rules_with(update)
    assert key in str(caught.value) and problem in str(caught.value)


def test_the_compliance_series_keep_the_busiest_agents_and_sum_the_rest_as_other() -> None:
    agents = {"a": [5, 5], "b": [3, 0], "c": [3, 3], "d": [1, 0], OTHER: [2, 2]}
    assert agent_series(agents, limit=2) == [("a", [5, 5]), ("b", [3, 0]), (OTHER, [6, 5])]  # b before c: by name
    assert agent_series({"a": [1, 1]}, limit=2) == [("a", [1, 1])]
    assert agent_series({}, limit=2) == []


def test_only_passed_and_disabled_checks_can_be_a_success() -> None:
    assert RESULTS["passed"] == ("success",) and RESULTS["disabled"] == ("success", "failure")
    assert all(RESULTS[o] == ("failure",) for o in RESULTS if o not in ("passed", "disabled"))


def checked(agent: str, at: _dt.datetime, passed: bool, position: int) -> RecordedEvent:
    event = ParameterChecked(
        tool="manage_task", action="update", base_level="warning", level="warning",
        outcome="passed" if passed else "warned", passed=passed, allowed=True,
    )  # fmt: skip
    return RecordedEvent(position, "enforcement:" + agent, position, at, {"agent": agent}, event, "h")


def test_the_trend_buckets_the_window_and_improving_agents_compare_it_with_before() -> None:
    t0 = _dt.datetime(2026, 3, 1, 9, 30, tzinfo=_dt.UTC)
    tally = TimeTally()
    history = [("up", t0, False)] * 3 + [("up", t0 + _dt.timedelta(days=3), True)] * 3
    history += [("flat", t0, True)] * 3 + [("flat", t0 + _dt.timedelta(days=3, hours=1), True)] * 3
    history += [("few", t0, False), ("few", t0 + _dt.timedelta(days=3), True)]
    for i, (agent, at, passed) in enumerate(history, 1):
        tally.apply(checked(agent, at, passed, i))
    end = t0 + _dt.timedelta(days=3, hours=5)
    daily = tally.trending(end, "day")
    assert daily.window_start == _dt.datetime(2026, 2, 26, tzinfo=_dt.UTC)
    assert [(b.checks, b.compliance_rate) for b in daily.buckets] == [(0, None)] * 3 + [(7, 0.4286)] + [
        (0, None)
    ] * 2 + [(7, 1.0)]
    improving = tally.improving(_dt.datetime(2026, 3, 2, tzinfo=_dt.UTC), end)
    assert [(a.agent, a.earlier_rate, a.recent_rate, a.change) for a in improving] == [("up", 0.0, 1.0, 1.0)]
    hourly = tally.trending(end, "hour")
    assert len(hourly.buckets) == 24 and sum(b.checks for b in hourly.buckets) == 7


def test_validation_speaks_with_the_seed_texts() -> None:
    """Seed 5.2's ValueError texts, at the start of each invalid parameter's message."""
    update = enf.validate(
        "manage_task",
        "update",
        {
            "task_id": "t-1",
            "work_notes": "placeholder for the notes here",
            "progress_made": "Refresh tokens rotate now.",
        }
        | {"files_modified": ["/etc/passwd"]},
    )
    assert update.invalid_parameters["work_notes"].startswith("work_notes: Work notes contain placeholder text")
    assert update.invalid_parameters["files_modified"].startswith("files_modified[0]: Invalid file path: /etc/passwd")
    short = enf.validate("manage_task", "complete", {"task_id": "t-1", "completion_summary": "Fixed it."})
    assert short.invalid_parameters["completion_summary"].startswith("completion_summary: Completion summary too short")


def test_a_warning_names_what_is_wrong_in_the_checks_own_words() -> None:
    rule = enf.Rule("manage_task", "update", WARNING, ("work_notes", "progress_made"), ())
    bad = enf.validate("manage_task", "update", {"task_id": "t-1", "work_notes": "TBD, will describe the work"})
    decision = enf.decide(rule, WARNING, bad)
    assert decision.context_warning is not None and "Work notes contain placeholder text" in decision.context_warning


def test_a_trend_as_of_the_calendars_first_days_leaves_out_the_buckets_before_it() -> None:
    tally = TimeTally()
    start = _dt.datetime(1, 1, 3, 12, tzinfo=_dt.UTC)  # an as_of the fuzzer sends: days before it do not exist
    tally.apply(checked("early", start, True, 1))
    daily = tally.trending(start, "day")
    assert [b.start.day for b in daily.buckets] == [1, 2, 3]  # three days of the seven exist
    assert daily.window_start == _dt.datetime(1, 1, 1, tzinfo=_dt.UTC) and daily.buckets[-1].checks == 1
    assert len(tally.trending(start, "hour").buckets) == 24  # a day of hours fits
