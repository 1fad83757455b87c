"""Seed 004 fidelity (issue 15) through a real MCP client and a real loopback server: the seed's metric names and
labels, the summary report's fields, the warning answer's ``warning_level``, rules with ``conditions``,
``propagate_changes``, the seed's texts in blocked calls, and unknown arguments answered by enforcement."""

from __future__ import annotations

import datetime as _dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.core.events import ParameterChecked, TaskWorkRecorded
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.mcp_support import call
from tests.server_support import HTTP_TIMEOUT, running

DESCRIPTION = "Add JWT login and logout endpoints with tests for expiry."
GOOD_UPDATE = {
    "work_notes": "Implemented the token refresh endpoint and wired it into the router.",
    "progress_made": "Refresh tokens now rotate on every use; the old one is revoked.",
}
T0 = _dt.datetime(2026, 3, 1, 9, 0, tzinfo=_dt.UTC)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def agent(ledger: Ledger, name: str, role: str = "dev") -> AsyncIterator[Client]:
    async with Client(build_mcp(ledger, agent=name, default_role=role, open_default_session=True)) as client:
        yield client


def checks(ledger: Ledger) -> list[ParameterChecked]:
    found = [r.event for r in ledger.store.iter_events(types=["ParameterChecked"])]
    assert all(isinstance(e, ParameterChecked) for e in found)
    return found  # type: ignore[return-value]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> _dt.datetime:
        return self.now


# --- metrics (seed 7.1) ---------------------------------------------------------------------------------------


def test_the_seed_metric_names_and_labels(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    """parameter_validation_total{tool,action,result} with success/failure; enforcement_applied_total counts the
    blocked calls only; parameter_compliance_rate{agent_id} per agent."""
    ledger = make_ledger()
    good, lazy = Actor("good-bot", "mcp"), Actor("lazy-bot", "mcp")
    ledger.task_create(Actor("pm", "cli"), "t-1", "JWT auth")
    assert ledger.manage_task(good, "update", {"task_id": "t-1", **GOOD_UPDATE}).success
    assert ledger.manage_task(lazy, "update", {"task_id": "t-1", "work_notes": "fixed stuff"}).success  # warned
    assert not ledger.manage_task(lazy, "complete", {"task_id": "t-1"}).success  # blocked (strict)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        text = http.get(f"{base}/metrics").text
    got = samples(text)
    assert "# TYPE parameter_validation_total counter" in text
    assert "# TYPE enforcement_applied_total counter" in text
    assert "# TYPE parameter_compliance_rate gauge" in text

    def validation(action: str, result: str, outcome: str) -> float:
        labels = {"tool": "manage_task", "action": action, "result": result, "outcome": outcome}
        return got[("parameter_validation_total", tuple(sorted(labels.items())))]

    assert validation("update", "success", "passed") == 1
    assert validation("update", "failure", "warned") == 1
    assert validation("complete", "failure", "blocked") == 1
    by_result: dict[str, float] = {}
    for (name, labels), value in got.items():
        if name == "parameter_validation_total":
            by_result[dict(labels)["result"]] = by_result.get(dict(labels)["result"], 0) + value
    assert by_result == {"success": 1, "failure": 2}

    applied = {dict(k[1])["level"]: v for k, v in got.items() if k[0] == "enforcement_applied_total" and v}
    assert applied == {"strict": 1}  # the one blocked call, not the three checks
    rates = {dict(k[1])["agent_id"]: v for k, v in got.items() if k[0] == "parameter_compliance_rate"}
    assert rates == {"good-bot": 1.0, "lazy-bot": 0.0}


def test_compliance_rate_per_agent_is_cut_to_the_busiest_agents_plus_other(
    make_ledger: LedgerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from api.rest import metrics

    monkeypatch.setattr(metrics, "AGENT_SERIES", 2)
    ledger = make_ledger()
    ledger.task_create(Actor("pm", "cli"), "t-1", "JWT auth")
    thin = {"task_id": "t-1", "work_notes": "fixed stuff"}
    for name, calls, good in (("a-bot", 3, True), ("b-bot", 2, False), ("c-bot", 1, True), ("d-bot", 1, False)):
        for _ in range(calls):
            ledger.manage_task(Actor(name, "mcp"), "update", {"task_id": "t-1", **(GOOD_UPDATE if good else thin)})
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        got = samples(http.get(f"{base}/metrics").text)
    rates = {dict(k[1])["agent_id"]: v for k, v in got.items() if k[0] == "parameter_compliance_rate"}
    assert rates == {"a-bot": 1.0, "b-bot": 0.0, "other": 0.5}  # c-bot (1 of 1) and d-bot (0 of 1) together


# --- the summary report (seed 7.2) and the warning answer (seed 6.2) ------------------------------------------


def test_the_report_has_avg_duration_trending_and_improving_agents(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    clock = Clock()
    ledger = make_ledger(clock=clock)
    bot = Actor("learning-bot", "mcp")
    ledger.task_create(Actor("pm", "cli"), "t-1", "JWT auth")
    thin = {"task_id": "t-1", "work_notes": "fixed stuff"}
    for _ in range(3):  # day 1: three thin updates
        ledger.manage_task(bot, "update", thin)
    clock.now = T0 + _dt.timedelta(days=8)  # a week later, inside the daily window: three good ones
    for _ in range(3):
        ledger.manage_task(bot, "update", {"task_id": "t-1", **GOOD_UPDATE})
    clock.now = T0 + _dt.timedelta(days=8, hours=2)

    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        body = http.get(f"{base}/reports/enforcement").json()
        hourly = http.get(f"{base}/reports/enforcement", params={"trend": "hour"}).json()
        bad = http.get(f"{base}/reports/enforcement", params={"trend": "week"})

    recorded = [e.duration_ms for e in checks(ledger)]
    assert all(d is not None and d >= 0 for d in recorded)
    assert body["totals"]["avg_duration_ms"] == pytest.approx(sum(recorded) / len(recorded), abs=1e-3)  # type: ignore[arg-type]

    trend = body["trending"]
    assert trend["unit"] == "day" and len(trend["buckets"]) == 7
    assert [b["checks"] for b in trend["buckets"]] == [0] * 6 + [3]  # the first day is outside the window
    assert trend["buckets"][-1]["compliance_rate"] == 1.0
    assert trend["buckets"][-1]["start"].startswith("2026-03-09T00:00:00")
    assert body["improving_agents"] == [
        {
            "agent": "learning-bot",
            "earlier_checks": 3,
            "earlier_rate": 0.0,
            "recent_checks": 3,
            "recent_rate": 1.0,
            "change": 1.0,
        }
    ]
    assert hourly["trending"]["unit"] == "hour" and len(hourly["trending"]["buckets"]) == 24
    assert sum(b["checks"] for b in hourly["trending"]["buckets"]) == 3
    assert bad.status_code == 422


@pytest.mark.anyio
async def test_the_warning_answer_carries_warning_level(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    ledger.task_create(Actor("pm", "cli"), "t-1", "JWT auth")
    async with agent(ledger, "dev-bot") as client:
        warned = await call(client, "manage_task", {"action": "update", "task_id": "t-1", "work_notes": "fixed stuff"})
        fine = await call(client, "manage_task", {"action": "update", "task_id": "t-1", **GOOD_UPDATE})
    assert warned["context_warning"] and warned["warning_level"] == "medium"
    assert fine["context_warning"] is None and fine["warning_level"] is None


# --- rules with conditions (seed 4.1) -------------------------------------------------------------------------


RULES_WITH_CONDITIONS = """
enforcement:
  tools:
    manage_task:
      update:
        - conditions: {task_type: bug}
          level: strict
        - conditions: {agent_id: trusted-bot}
          level: soft
        - conditions: {role: qa}
          level: disabled
        - level: warning
"""


@pytest.mark.anyio
async def test_a_rule_with_conditions_applies_only_where_its_context_matches(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES_WITH_CONDITIONS, encoding="utf-8")
    ledger = make_ledger(enforcement_rules_file=rules)
    pm = Actor("pm", "cli")
    ledger.task_create(pm, "bug-1", "Login loop", task_type="bug")
    ledger.task_create(pm, "feat-1", "Refresh tokens")
    thin = {"action": "update", "work_notes": "fixed stuff"}
    async with (
        agent(ledger, "dev-bot") as dev,
        agent(ledger, "trusted-bot") as trusted,
        agent(ledger, "qa-bot", role="qa") as qa,
    ):
        on_bug = await call(dev, "manage_task", {**thin, "task_id": "bug-1"})
        on_feature = await call(dev, "manage_task", {**thin, "task_id": "feat-1"})
        by_trusted = await call(trusted, "manage_task", {**thin, "task_id": "feat-1"})
        # in the qa role (the session's), disabled: an unknown argument is dropped, not recorded on the task
        by_qa = await call(qa, "manage_task", {**thin, "task_id": "feat-1", "mood": "cheerful"})
    assert (on_bug["success"], on_bug["enforcement_level"], on_bug["base_level"]) == (False, "strict", "strict")
    assert (on_feature["success"], on_feature["base_level"]) == (True, "warning")
    assert (by_trusted["success"], by_trusted["base_level"], by_trusted["context_warning"]) == (True, "soft", None)
    assert (by_qa["success"], by_qa["base_level"]) == (True, "disabled")
    assert [c.base_level for c in checks(ledger)] == ["strict", "warning", "soft", "disabled"]
    assert checks(ledger)[-1].unknown == ["mood"]
    work = ledger.task_get("feat-1").work
    assert len(work) == 3 and all("mood" not in entry.params for entry in work)


# --- propagate_changes ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_propagate_changes_records_the_update_on_the_open_subtasks(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    ledger.task_create(Actor("pm", "cli"), "t-1", "JWT auth")
    data = {"auth_strategy": "JWT access tokens in httpOnly cookies"}
    async with agent(ledger, "dev-bot") as client:
        for sub in ("sub-1", "sub-2", "sub-3"):
            await call(
                client,
                "manage_subtask",
                {"action": "create", "task_id": "t-1", "subtask_id": sub, "title": sub, "description": DESCRIPTION},
            )
        done = "Implemented the refresh endpoint. Added tests for rotation, all passing."
        await call(
            client,
            "manage_subtask",
            {"action": "complete", "task_id": "t-1", "subtask_id": "sub-3", "completion_summary": done},
        )
        spread = await call(
            client, "manage_context", {"action": "update", "task_id": "t-1", "data": data, "propagate_changes": True}
        )
        kept = await call(client, "manage_context", {"action": "update", "task_id": "t-1", "data": data})
    assert spread["success"] and spread["propagated_to"] == ["sub-1", "sub-2"]
    assert kept["success"] and kept["propagated_to"] is None
    updates = [
        r.event
        for r in ledger.store.iter_events(types=["TaskWorkRecorded"])
        if isinstance(r.event, TaskWorkRecorded) and r.event.tool == "manage_context"
    ]
    assert [(u.subtask_id, u.params["data"]) for u in updates] == [
        (None, data),
        ("sub-1", data),
        ("sub-2", data),
        (None, data),
    ]
    assert updates[1].params["propagated_from"] == "t-1"


# --- the seed's texts and unknown arguments (seed 5.2, 6.2) ---------------------------------------------------


@pytest.mark.anyio
async def test_blocked_calls_use_the_seed_texts(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("enforcement:\n  default_level: strict\n  tools: {}\n", encoding="utf-8")
    ledger = make_ledger(enforcement_rules_file=rules)
    ledger.task_create(Actor("pm", "cli"), "t-1", "JWT auth")
    async with agent(ledger, "dev-bot") as client:
        update = await call(
            client,
            "manage_task",
            {
                "action": "update",
                "task_id": "t-1",
                "work_notes": "TODO describe the refresh endpoint work",
                "progress_made": "Refresh tokens now rotate on every use.",
                "files_modified": ["../etc/passwd"],
            },
        )
        short = await call(
            client, "manage_task", {"action": "complete", "task_id": "t-1", "completion_summary": "Done it."}
        )
        brief = await call(
            client,
            "manage_task",
            {"action": "complete", "task_id": "t-1", "completion_summary": "Implemented the endpoint now"},
        )
        one = await call(
            client,
            "manage_task",
            {
                "action": "complete",
                "task_id": "t-1",
                "completion_summary": "Implemented the refresh endpoint with rotation",
            },
        )
        vague = await call(
            client,
            "manage_task",
            {
                "action": "complete",
                "task_id": "t-1",
                "completion_summary": "The endpoint is there now. It works for users.",
            },
        )
    assert not update["success"]
    assert "Work notes contain placeholder text" in update["invalid_parameters"]["work_notes"]
    assert "Invalid file path: ../etc/passwd" in update["invalid_parameters"]["files_modified"]
    assert "Missing required parameters" not in update["hint"] and "work_notes" in update["hint"]
    assert "Completion summary too short" in short["invalid_parameters"]["completion_summary"]
    assert "Summary too brief - provide more detail" in brief["invalid_parameters"]["completion_summary"]
    assert "Completion summary should be multiple sentences" in one["invalid_parameters"]["completion_summary"]
    assert (
        "Completion summary should describe what was accomplished" in vague["invalid_parameters"]["completion_summary"]
    )


@pytest.mark.anyio
async def test_an_unknown_argument_gets_the_enforcement_answer_and_a_recorded_check(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    ledger.task_create(Actor("pm", "cli"), "t-1", "JWT auth")
    async with agent(ledger, "dev-bot") as client:
        result = await client.call_tool(
            "manage_task", {"action": "update", "task_id": "t-1", **GOOD_UPDATE, "work_note": "a typo of work_notes"}
        )
        context = await client.call_tool("manage_context", {"action": "add_insight", "task_id": "t-1", "ctx": "x"})
    assert not result.is_error and result.structured_content is not None
    body = result.structured_content
    assert body["success"] is False and body["missing_parameters"] == []
    assert "did you mean 'work_notes'?" in body["invalid_parameters"]["work_note"]
    assert body["hint"] and body["example"]["work_notes"] and "work_note" not in body["suggested_correction"]
    assert not context.is_error and context.structured_content is not None
    assert "ctx" in context.structured_content["invalid_parameters"]
    [first, second] = checks(ledger)
    assert (first.outcome, first.unknown, first.allowed) == ("invalid_call", ["work_note"], False)
    assert second.unknown == ["ctx"]
    assert ledger.task_get("t-1").work == []  # nothing reached the task


def test_a_stored_v1_parameter_check_reads_back_untimed() -> None:
    from ledger.core import events as ev

    v1 = {"tool": "manage_task", "action": "update", "base_level": "warning", "level": "warning"}
    event = ev.from_payload("ParameterChecked", 1, {**v1, "outcome": "passed", "passed": True, "allowed": True})
    assert isinstance(event, ParameterChecked) and event.duration_ms is None
    assert type(event).schema_version == 2
