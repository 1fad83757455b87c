"""The hard size limits of the managed tools (pure): above the quality limits, messages without the values, and a
refusal at every level (issue 10, hole 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.enforcement import decisions as enf
from ledger.enforcement import limits
from ledger.enforcement.schemas import MAX_JSON_BYTES, MAX_PATH_CHARS, SCHEMAS
from ledger.workflow import decisions as wf

SECRET = "SECRET-PAYLOAD-"


def _branches(prop: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]


@pytest.mark.parametrize(("tool", "action"), [(t, a) for t, actions in SCHEMAS.items() for a in actions])
def test_every_parameter_has_a_hard_limit_at_least_twice_its_quality_maximum(tool: str, action: str) -> None:
    properties = SCHEMAS[tool][action].model_json_schema()["properties"]
    for name, prop in properties.items():
        assert name in limits.LIMITS, f"{tool}.{action}.{name} has no hard limit"
        limit = limits.LIMITS[name]
        for branch in _branches(prop):
            if "maxLength" in branch:
                assert limit.kind == "text" and limit.chars >= 2 * branch["maxLength"], name
            if "maxItems" in branch:
                assert limit.kind == "list" and limit.items >= 2 * branch["maxItems"], name
                item_max = branch["items"].get("maxLength", MAX_PATH_CHARS)
                assert limit.chars >= 2 * item_max, name
            if branch.get("type") == "object":
                assert limit.kind == "object" and limit.bytes >= 2 * MAX_JSON_BYTES, name
    assert limits.LIMITS["title"].chars >= 2 * wf.MAX_TITLE_CHARS
    assert limits.MAX_ID_CHARS >= 2 * 64  # wf.check_task_id allows 64


def test_values_within_the_limits_pass() -> None:
    call = {
        "task_id": "t-1",
        "work_notes": "x" * limits.LIMITS["work_notes"].chars,
        "files_modified": ["a" * 2_048] * 100,
        "data": {"k": "v" * 70_000},
        "percent_complete": 40,
        "propagate_changes": True,
    }
    assert limits.oversized(call) == {}


def test_a_call_at_every_quality_maximum_is_within_the_hard_limits() -> None:
    """The quality rules always speak first: the largest call strict enforcement lets through is not oversized."""
    path = "src/" + "p" * (MAX_PATH_CHARS - 4)
    call = {
        "task_id": "t" * 64,
        "completion_summary": "s" * 2_000,
        "testing_notes": "t" * 1_000,
        "files_created": [path] * 100,
        "files_modified": [path] * 100,
        "patterns_identified": {"p": "v" * (MAX_JSON_BYTES - 20)},
    }
    assert limits.oversized(call) == {}


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"work_notes": SECRET * 1_000}, "work_notes"),
        ({"files_modified": ["src/a.py"] * 401}, "files_modified"),
        ({"files_modified": ["src/a.py", SECRET * 200]}, "files_modified"),
        ({"blockers": [{"nested": SECRET * 500}]}, "blockers"),
        ({"data": {"log": SECRET * 10_000}}, "data"),
        ({"data": SECRET * 10_000}, "data"),  # the wrong type is bounded too
        ({"work_notes": [SECRET] * 10_000}, "work_notes"),
        ({"percent_complete": 10**4000}, "percent_complete"),
        ({"invented": SECRET * 1_000}, "invented"),
        ({"x" * 100 + SECRET: 1}, "x" * 63 + "…"),
        ({f"p{i}": 1 for i in range(33)}, "params"),
        ({"files_modified": ["a" * 2_000] * 400, "files_created": ["b" * 2_000] * 400}, "params"),  # each within
    ],
)
def test_oversized_parameters_are_named_with_their_size_never_their_value(params: dict[str, Any], name: str) -> None:
    problems = limits.oversized(params)
    assert list(problems) == [name]
    assert SECRET not in str(problems) and len(str(problems)) < 500
    assert "hard limit" in problems[name]
    assert name.rstrip("…") in limits.hint(problems)


@pytest.mark.parametrize("level", list(enf.EnforcementLevel))
def test_an_oversized_call_is_refused_at_every_level_with_a_hint_and_no_echo(level: enf.EnforcementLevel) -> None:
    params = {"task_id": "t-1", "work_notes": SECRET * 1_000, "progress_made": "Moved the refresh endpoint on."}
    decision = enf.decide_oversized("manage_task", "update", level, params, limits.oversized(params))
    assert not decision.allow and decision.outcome == "oversized" and not decision.passed
    assert decision.level is level
    response = decision.response
    assert response is not None and "work_notes" in response.error
    assert "at most 4,000 characters" in response.hint and "name the file instead" in response.hint
    assert SECRET not in str(response.model_dump())
    assert response.suggested_correction["progress_made"] == params["progress_made"]
    assert str(response.suggested_correction["work_notes"]).startswith("<invalid: work_notes")
    assert enf.validate("manage_task", "update", response.example).success


def test_docs_list_every_hard_limit() -> None:
    """docs/ENFORCEMENT.md's table says what the code enforces."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "ENFORCEMENT.md").read_text(encoding="utf-8")
    rows = [line for line in docs.splitlines() if line.startswith("| `")]
    for name, limit in limits.LIMITS.items():
        assert any(f"`{name}`" in row and f"| {limit.describe()} |" in row for row in rows), name
    for number in (limits.MAX_PARAMS, limits.MAX_NAME_CHARS, limits.MAX_OTHER_BYTES, limits.MAX_CALL_BYTES):
        assert f"{number:,}" in docs
