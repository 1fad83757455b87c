"""Parameter enforcement (seed 004) through a real MCP client: blocked calls answered with a hint, an example
and a correction; progressive escalation and de-escalation; levels that survive a restart and a replay."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from api.mcp.server import build_mcp
from ledger.core.events import ParameterChecked
from ledger.enforcement import decisions as enf
from ledger.service import Actor, Ledger
from projections.runner import ENFORCEMENT
from tests.conftest import LedgerFactory
from tests.mcp_support import call

ROOT = Path(__file__).resolve().parents[2]
GOOD_UPDATE = {
    "work_notes": "Implemented the token refresh endpoint and wired it into the router.",
    "progress_made": "Refresh tokens now rotate on every use; the old one is revoked.",
    "files_modified": ["src/auth/refresh.py", "tests/test_refresh.py"],
}
GOOD_COMPLETION = (
    "Implemented JWT login, logout and refresh endpoints. Added tests for expiry and rotation, all passing."
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def agent(ledger: Ledger, name: str, role: str = "dev") -> AsyncIterator[Client]:
    async with Client(build_mcp(ledger, agent=name, default_role=role, open_default_session=True)) as client:
        yield client


def level_of(ledger: Ledger, agent_name: str, tool: str, action: str) -> enf.EnforcementLevel:
    rules = ledger.enforcement_rules
    rule = rules.rule_for(tool, action, agent_name)
    assert rule is not None
    stats = ledger.enforcement_stats(agent_name).get((tool, action), enf.AgentToolStats())
    return enf.effective_level(rule.level, stats.checks, stats.passed, rules.progressive)


@pytest.mark.anyio
async def test_completing_without_a_summary_is_blocked_with_a_hint_an_example_and_a_correction(
    make_ledger: LedgerFactory,
) -> None:
    """Seed 9.2 test_mcp_tool_enforcement: manage_task(action="complete", task_id=...) without the summary."""
    ledger = make_ledger()
    async with agent(ledger, "dev-bot") as client:
        await call(
            client,
            "manage_task",
            {
                "action": "create",
                "task_id": "test-123",
                "title": "JWT auth",
                "description": "Add JWT login and logout endpoints with tests.",
            },
        )
        head = ledger.store.head()[0]
        result = await call(client, "manage_task", {"action": "complete", "task_id": "test-123"})
    assert result["success"] is False and result["enforcement_level"] == "strict"
    assert "completion_summary" in result["missing_parameters"]
    assert "completion_summary" in result["hint"]
    assert enf.validate("manage_task", "complete", result["example"]).success  # the example itself passes
    correction = result["suggested_correction"]
    assert correction["task_id"] == "test-123" and "<required: completion_summary" in correction["completion_summary"]
    assert not enf.validate("manage_task", "complete", correction).success  # the marks must be filled in
    doc, _, anchor = result["documentation"].partition("#")
    assert (ROOT / doc).is_file() and f'id="{anchor}"' in (ROOT / doc).read_text(encoding="utf-8")
    # Only the check was recorded (then the client's default session closed): the task did not move.
    assert [r.event.type_name for r in ledger.store.iter_events(head)] == ["ParameterChecked", "SessionEnded"]
    assert ledger.task_get("test-123").status == "ready"


@pytest.mark.anyio
async def test_an_update_is_recorded_on_the_task_and_a_warning_level_answers_with_suggestions(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger()
    async with agent(ledger, "dev-bot") as client:
        await call(client, "task_create", {"task_id": "t-1", "title": "Refresh tokens", "role": "dev"})
        good = await call(client, "manage_task", {"action": "update", "task_id": "t-1", **GOOD_UPDATE})
        thin = await call(client, "manage_task", {"action": "update", "task_id": "t-1", "work_notes": "fixed stuff"})
        insight = await call(
            client,
            "manage_context",
            {
                "action": "add_insight",
                "task_id": "t-1",
                "insight": "Serialise refresh per user or tabs race.",
                "category": "pattern",
                "importance": "high",
            },
        )
        sub = await call(
            client,
            "manage_subtask",
            {
                "action": "create",
                "task_id": "t-1",
                "subtask_id": "sub-1",
                "title": "Refresh endpoint",
                "description": "Add POST /auth/refresh rotating the token; done when tested.",
            },
        )
        task = await call(client, "task_get", {"task_id": "t-1"})
    assert good["success"] and good["enforcement_level"] == "warning" and good["context_warning"] is None
    assert thin["success"] and thin["context_warning"] and thin["suggestions"]  # warning: allowed, with advice
    assert insight["success"] and sub["success"]
    assert [(w["tool"], w["action"]) for w in task["work"]] == [
        ("manage_task", "update"),
        ("manage_task", "update"),
        ("manage_context", "add_insight"),
        ("manage_subtask", "create"),
    ]
    assert task["work"][0]["params"]["files_modified"] == GOOD_UPDATE["files_modified"]
    assert task["subtasks"] == {"sub-1": "open"}


@pytest.mark.anyio
async def test_repeated_failures_escalate_to_strict_and_good_behaviour_de_escalates(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    """Seed 9.1 test_progressive_enforcement, end to end; levels then survive a restart and a replay."""
    ledger = make_ledger(db_url)
    ledger.task_create(Actor("pm", "cli"), "t-2", "Escalation", role="dev")
    levels: list[str] = []
    async with agent(ledger, "lazy-bot") as client:
        for _ in range(6):  # updates that do not say what was done
            r = await call(client, "manage_task", {"action": "update", "task_id": "t-2", "work_notes": "stuff"})
            levels.append(r["enforcement_level"])
        blocked = await call(client, "manage_task", {"action": "update", "task_id": "t-2", "work_notes": "stuff"})
        strict_stats = ledger.enforcement_stats("lazy-bot")[("manage_task", "update")]
        recovered = 0
        while level_of(ledger, "lazy-bot", "manage_task", "update") != enf.EnforcementLevel.WARNING:
            good = await call(client, "manage_task", {"action": "update", "task_id": "t-2", **GOOD_UPDATE})
            assert good["success"]
            recovered += 1
            assert recovered < 100
    assert levels[:5] == ["warning"] * 5 and levels[5] == "strict"  # strict once 5 checks are recorded
    assert blocked["success"] is False and blocked["missing_parameters"] == ["progress_made"]
    assert "work_notes" in blocked["invalid_parameters"]
    assert strict_stats.passed == 0 and strict_stats.checks == 7
    # De-escalation: above 0.7 compliance the level is one above warning (strict), above 0.9 warning again.
    final = ledger.enforcement_stats("lazy-bot")[("manage_task", "update")]
    assert final.passed / final.checks > 0.9

    # A restart (a new process on the same database) and a replay from zero give the same level.
    restarted = make_ledger(db_url)
    assert level_of(restarted, "lazy-bot", "manage_task", "update") == enf.EnforcementLevel.WARNING
    replayed = restarted.replay().runner.state(ENFORCEMENT.name)[("lazy-bot", "manage_task", "update")]
    assert replayed == final
    halfway = restarted.replay(position=ledger.store.head()[0] - 2 * recovered)
    early = halfway.runner.state(ENFORCEMENT.name)[("lazy-bot", "manage_task", "update")]
    assert early.checks < final.checks


@pytest.mark.anyio
async def test_completion_follows_the_workflow_and_records_the_summary_with_the_transition(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger()
    ledger.task_create(Actor("pm", "cli"), "t-3", "Finish me", role="qa", status="review")
    async with agent(ledger, "qa-bot", role="qa") as qa, agent(ledger, "dev-bot", role="dev") as dev:
        args = {"action": "complete", "task_id": "t-3", "completion_summary": GOOD_COMPLETION}
        refused = await call(dev, "manage_task", args)  # a dev may not complete from review
        done = await call(qa, "manage_task", {**args, "testing_notes": "Ran the auth suite: 24 passed."})
    assert refused["success"] is False and "workflow refused" in refused["error"]
    assert done["success"] and done["task"]["status"] == "complete"
    assert done["task"]["work"][-1]["params"]["completion_summary"] == GOOD_COMPLETION
    stream = [r.event.type_name for r in ledger.store.load_stream("task:t-3").events]
    assert stream[-2:] == ["TaskTransitioned", "TaskWorkRecorded"]  # one append: both or neither


@pytest.mark.parametrize("fail_open", [False, True])
def test_an_internal_enforcement_error_fails_closed_unless_the_rule_says_fail_open(
    make_ledger: LedgerFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fail_open: bool
) -> None:
    # The default rules, with fail_open set on manage_task.update.
    rules = tmp_path / "rules.yaml"
    default = resources.files("ledger.enforcement").joinpath("enforcement_rules.yaml").read_text(encoding="utf-8")
    rules.write_text(
        default.replace(
            "      update:\n        level: warning\n        required_params:\n          - work_notes",
            f"      update:\n        level: warning\n        fail_open: {str(fail_open).lower()}\n"
            "        required_params:\n          - work_notes",
            1,
        ),
        encoding="utf-8",
    )
    ledger = make_ledger(enforcement_rules_file=rules)
    rule = ledger.enforcement_rules.rule_for("manage_task", "update", "bot")
    assert rule is not None and rule.fail_open is fail_open
    ledger.task_create(Actor("pm", "cli"), "t-4", "Broken validator", role="dev")

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("schema cache corrupted")

    monkeypatch.setattr(enf, "validate", broken)
    result = ledger.manage_task(Actor("bot", "mcp"), "update", {"task_id": "t-4", **GOOD_UPDATE})
    [check] = [r.event for r in ledger.store.iter_events(types=["ParameterChecked"])]
    assert isinstance(check, ParameterChecked)
    assert result.success is fail_open
    assert check.outcome == ("bypassed" if fail_open else "blocked")
    assert "schema cache corrupted" in (check.error or "")
    assert len(ledger.task_get("t-4").work) == (1 if fail_open else 0)
