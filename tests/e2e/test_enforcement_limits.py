"""Hard size limits of the managed tools, the same at every enforcement level (issue 10, hole 8).

At ``soft`` and ``warning`` a thin report is let through; a 2 MB ``work_notes`` or a 3 MB ``data`` used to be let
through too — and stored for ever in the hash-chained log. Through a real MCP client, at every level: refused
with a hint, the log grown by exactly one small ``ParameterChecked`` event, nothing on the task stream.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from api.mcp.server import build_mcp
from ledger.core.events import ParameterChecked
from ledger.enforcement import decisions as enf
from ledger.enforcement import limits
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory
from tests.mcp_support import call

LEVELS = ["disabled", "soft", "warning", "strict"]
MB = 1_000_000
NOTES = "Implemented the refresh endpoint and rotated the tokens. "
UPDATE = {
    "work_notes": "Implemented the token refresh endpoint and wired it into the router.",
    "progress_made": "Refresh tokens now rotate on every use; the old one is revoked.",
}
SUMMARY = "Implemented the refresh endpoint and its rotation. Tested expiry and reuse, all passing."


def _text(size: int) -> str:
    return (NOTES * (size // len(NOTES) + 1))[:size]


# (tool, arguments, the oversized parameter): each otherwise a valid call.
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("manage_task", {"action": "update", **UPDATE, "work_notes": _text(2 * MB)}, "work_notes"),
    ("manage_context", {"action": "update", "data": {"log": _text(3 * MB)}}, "data"),
    (
        "manage_task",
        {"action": "update", **UPDATE, "files_modified": [f"src/m{i}.py" for i in range(50_000)]},
        "files_modified",
    ),
    ("manage_task", {"action": "update", **UPDATE, "blockers": [_text(MB)]}, "blockers"),
    ("manage_context", {"action": "add_insight", "insight": _text(MB)}, "insight"),
    (
        "manage_task",
        {"action": "complete", "completion_summary": SUMMARY, "patterns_identified": {"p": _text(MB)}},
        "patterns_identified",
    ),
    (
        "manage_subtask",
        {"action": "update", "subtask_id": "s-1", **UPDATE, "progress_made": _text(MB)},
        "progress_made",
    ),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _rules(tmp_path: Path, level: str) -> Path:
    """Every managed tool and action at ``level``, without progressive escalation."""
    path = tmp_path / f"rules-{level}.yaml"
    path.write_text(
        f"enforcement:\n  enabled: true\n  default_level: {level}\n  progressive:\n    enabled: false\n",
        encoding="utf-8",
    )
    return path


def _stored_size(ledger: Ledger, position: int) -> int:
    rec = ledger.store.get(position)
    assert rec is not None
    return len(rec.data_json) + len(rec.meta_json)


@pytest.mark.anyio
@pytest.mark.parametrize("level", LEVELS)
async def test_oversized_parameters_are_refused_at_every_level_and_only_a_small_check_is_recorded(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    monkeypatch.setenv("LEDGER_ENFORCEMENT_RULES_FILE", str(_rules(tmp_path, level)))
    ledger = make_ledger(db_url)
    assert ledger.enforcement_rules.rule_for("manage_task", "update", "alice").level == level  # type: ignore[union-attr]
    ledger.task_create(Actor("pm", "cli"), "t-1", "Refresh tokens", role="dev")
    ledger.manage_subtask(
        Actor("pm", "cli"),
        "create",
        {"task_id": "t-1", "subtask_id": "s-1", "title": "Rotation", "description": UPDATE["progress_made"]},
    )
    async with Client(build_mcp(ledger, agent="alice", open_default_session=True)) as client:
        for tool, args, param in CASES:
            head, _ = ledger.store.head()
            task_version = ledger.store.load_stream("task:t-1").version
            result = await call(client, tool, {**args, "task_id": "t-1"})
            limit = limits.LIMITS[param]
            assert result["success"] is False, f"{tool} {param} at {level}: {result}"
            assert param in result["error"] and param in result["invalid_parameters"]
            assert limit.describe() in result["hint"] and limit.instead in result["hint"]
            assert len(str(result["suggested_correction"])) < 10_000  # the answer does not echo the megabytes
            assert ledger.store.head()[0] == head + 1, f"{tool} {param} at {level} appended more than its check"
            assert ledger.store.load_stream("task:t-1").version == task_version
            [check] = ledger.store.load_stream("enforcement:alice").events[-1:]
            assert isinstance(check.event, ParameterChecked) and check.position == head + 1
            assert check.event.outcome == "oversized" and not check.event.allowed and not check.event.passed
            assert check.event.task_id == "t-1" and check.event.level == level
            assert _stored_size(ledger, head + 1) < 2_000, "the refused check must not carry the oversized value"
        # The same calls within the limits go ahead at the lenient levels (the limit, not the level, refused them).
        if level in ("disabled", "soft", "warning"):
            ok = await call(client, "manage_task", {"action": "update", "task_id": "t-1", **UPDATE})
            assert ok["success"] is True


@pytest.mark.anyio
async def test_the_mcp_input_schemas_publish_the_hard_limits(make_ledger: LedgerFactory) -> None:
    async with Client(build_mcp(make_ledger(), agent="alice")) as client:
        tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}

    def branch(tool: str, param: str, kind: str) -> dict[str, Any]:
        prop = tools[tool]["properties"][param]
        [found] = [b for b in prop.get("anyOf", [prop]) if b.get("type") == kind]
        return dict(found)

    for tool in ("manage_task", "manage_context", "manage_subtask"):
        for param, prop in tools[tool]["properties"].items():
            if param in ("action", "session_id"):
                continue
            limit = limits.LIMITS[param]
            assert limit.describe() in prop.get("description", ""), f"{tool}.{param} does not say its limit"
    assert branch("manage_task", "work_notes", "string")["maxLength"] == limits.LIMITS["work_notes"].chars
    files = branch("manage_task", "files_modified", "array")
    assert files["maxItems"] == limits.LIMITS["files_modified"].items
    assert files["items"]["maxLength"] == limits.LIMITS["files_modified"].chars
    assert branch("manage_context", "insight", "string")["maxLength"] == limits.LIMITS["insight"].chars
    assert branch("manage_subtask", "task_id", "string")["maxLength"] == limits.MAX_ID_CHARS


def test_a_fail_open_rule_does_not_let_an_oversized_call_through(
    make_ledger: LedgerFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The size check is not part of quality enforcement: an internal error under ``fail_open`` bypasses the
    quality rules, never the hard limits."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "enforcement:\n  default_level: soft\n  tools:\n"
        "    manage_task:\n      update: {level: soft, fail_open: true}\n",
        encoding="utf-8",
    )
    ledger = make_ledger(enforcement_rules_file=rules)
    ledger.task_create(Actor("pm", "cli"), "t-1", "Refresh tokens", role="dev")

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("schema cache corrupted")

    monkeypatch.setattr(enf, "validate", broken)
    bot = Actor("bot", "mcp")
    refused = ledger.manage_task(bot, "update", {"task_id": "t-1", **UPDATE, "work_notes": _text(2 * MB)})
    bypassed = ledger.manage_task(bot, "update", {"task_id": "t-1", **UPDATE})
    assert refused.success is False and bypassed.success is True
    outcomes = [r.event.outcome for r in ledger.store.iter_events(types=["ParameterChecked"])]  # type: ignore[attr-defined]
    assert outcomes == ["oversized", "bypassed"]
    assert [w.params.get("work_notes") for w in ledger.task_get("t-1").work] == [UPDATE["work_notes"]]
