"""What the task commands return: a task with its DNA and work, a transition's answer, and a managed tool's answer."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Literal

from pydantic import BaseModel, Field

# The constants of the interface, which adapters publish (limits in schemas, texts in answers).
from ledger.workflow.decisions import MAX_DNA_BYTES as MAX_DNA_BYTES
from ledger.workflow.decisions import MAX_TASK_ID_CHARS as MAX_TASK_ID_CHARS
from ledger.workflow.decisions import MAX_TITLE_CHARS as MAX_TITLE_CHARS
from ledger.workflow.decisions import RESTORE as RESTORE
from ledger.workflow.decisions import TASK_ID_PATTERN as TASK_ID_PATTERN
from ledger.workflow.decisions import TERMINAL as TERMINAL
from ledger.workflow.decisions import Workflow as Workflow

# The table itself as the node's settings name it: ``compliance-ledger mcp`` publishes its names before it opens
# the ledger (and hands the ledger the same table).
from ledger.workflow.table import configured_workflow as configured_workflow


class WorkReport(BaseModel):
    """Work reported on a task through manage_task / manage_context / manage_subtask."""

    tool: str
    action: str
    subtask_id: str | None
    params: dict[str, Any]
    agent: str | None
    recorded_at: _dt.datetime
    position: int


class TaskInfo(BaseModel):
    """A task as of a moment, with the transitions the table offers from its status."""

    task_id: str
    task_type: str
    title: str
    status: str
    role: str
    dna: dict[str, Any]
    created_at: _dt.datetime
    created_by: str | None
    updated_at: _dt.datetime | None
    blocked_from: str | None
    transitions: int
    refusals: int
    position: int
    next: list[str]
    work: list[WorkReport] = Field(default_factory=list)
    subtasks: dict[str, str] = Field(default_factory=dict)


class TransitionResult(BaseModel):
    """``transitioned`` with the DNA evidence (field -> proving event position), or ``refused`` with reasons."""

    status: Literal["transitioned", "refused"]
    task: TaskInfo
    from_status: str
    to_status: str
    acting_role: str
    rule: str | None = None
    evidence: dict[str, int] = Field(default_factory=dict)
    cleared_dna: list[str] = Field(default_factory=list)
    codes: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    position: int


class ManagedResult(BaseModel):
    """The answer of manage_task / manage_context / manage_subtask.

    Allowed: ``success`` true (false only when the workflow refused a completion, with ``error``), the task,
    and at warning level a ``context_warning`` with ``suggestions``. Blocked: ``success`` false with what was
    missing or invalid, a hint, a complete valid ``example``, the caller's own call with the gaps marked
    (``suggested_correction``) and where the rules are documented.
    """

    success: bool
    error: str | None = None
    enforcement_level: str
    base_level: str
    missing_parameters: list[str] = Field(default_factory=list)
    invalid_parameters: dict[str, str] = Field(default_factory=dict)
    hint: str | None = None
    example: dict[str, Any] | None = None
    suggested_correction: dict[str, Any] | None = None
    documentation: str | None = None
    context_warning: str | None = None
    warning_level: str | None = Field(None, description="with a context_warning: how serious it is (seed 6.2: medium)")
    suggestions: list[str] = Field(default_factory=list)
    propagated_to: list[str] | None = Field(
        None, description="manage_context(update, propagate_changes=true): the subtasks the update was recorded on"
    )
    task: TaskInfo | None = None
    check_position: int
