"""The workflow table's row lookup (seed 003): the ``:role`` suffix selects a row by the task's role."""

from __future__ import annotations

import datetime as _dt

from ledger.core.events import TaskTransitioned, TaskTransitionRefused
from ledger.workflow import decisions as wf
from ledger.workflow.table import load_workflow
from projections.tasks import TaskView

TABLE = wf.parse_workflow(
    {
        "statuses": ["a", "b", "c"],
        "roles": ["dev", "qa", "liaison"],
        "types": {
            "task": {
                "a->b:liaison": {"allowedActors": ["liaison"], "requireRole": "liaison"},
                "a->b": {"allowedActors": ["dev", "qa"]},
                "b->c": {"allowedActors": ["dev"]},
                "any->c:qa": {"allowedActors": ["qa"], "requireRole": "qa"},
                "any->c": {"allowedActors": ["liaison"]},
            }
        },
    }
)


def _key(source: str, target: str, task_role: str) -> str | None:
    rule = TABLE.rule_for("task", source, target, task_role)
    return None if rule is None else rule.key


def test_lookup_order_is_from_to_role_then_from_to_then_any_to_role_then_any_to() -> None:
    assert _key("a", "b", "liaison") == "a->b:liaison"
    assert _key("a", "b", "dev") == "a->b"
    assert _key("b", "c", "qa") == "b->c"  # a from->to row beats any->to:role
    assert _key("a", "c", "qa") == "any->c:qa"
    assert _key("a", "c", "dev") == "any->c"
    assert _key("c", "a", "dev") is None


def _task(role: str, status: str = "review") -> TaskView:
    at = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
    return TaskView(
        task_id="t", task_type="task", title="T", status=status, role=role, dna={}, created_at=at,
        created_by="x", updated_at=at,
    )  # fmt: skip


def test_the_acting_role_never_selects_a_row_only_the_allowed_actors_limit_it() -> None:
    flow = load_workflow()
    refused = wf.decide_transition(flow, _task("liaison"), "rework", "qa", admin=False, proofs={})
    moved = wf.decide_transition(flow, _task("liaison"), "rework", "liaison", admin=False, proofs={})
    assert isinstance(refused, TaskTransitionRefused) and refused.codes == ["actor_not_allowed"]
    assert isinstance(moved, TaskTransitioned)
    assert (moved.rule, moved.role_after) == ("review->rework:liaison", "liaison")
    assert wf.allowed_from(flow, _task("liaison")) == [
        "any->blocked",
        "any->cancelled",
        "review->complete",
        "review->rework",
        "review->rework:liaison",
    ]
