"""Parameter schemas for enforcement (seed 004, section 3): one pydantic model per tool and action, and which of
their fields are context parameters; pure, no I/O.

Their field types are in :mod:`ledger.enforcement.fields`,
hints and examples in :mod:`.guidance`, validation in :mod:`.validation`; :mod:`.decisions` builds rules,
levels and decisions on top (see its docstring for the choices made where the seed is silent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from ledger.enforcement.fields import MAX_JSON_BYTES as MAX_JSON_BYTES
from ledger.enforcement.fields import MAX_KEYS as MAX_KEYS
from ledger.enforcement.fields import MAX_PATH_CHARS as MAX_PATH_CHARS
from ledger.enforcement.fields import MAX_PATHS as MAX_PATHS
from ledger.enforcement.fields import (
    Blocker,
    CompletionSummary,
    Description,
    Identifier,
    InsightText,
    JsonObject,
    Name,
    NonEmptyJsonObject,
    Paths,
    ProgressText,
    TestingNotes,
    Title,
    WorkNotes,
)

DOCS: Final = "docs/ENFORCEMENT.md"
ENVELOPE: Final = frozenset({"action", "session_id"})  # carried by every tool call, not schema fields


class ContextParams(BaseModel):
    """Base of every schema: unknown fields rejected, no type coercion, surrounding whitespace stripped.

    ``CALL_FIELDS`` are the identifying fields the tool needs; every other field is a context parameter.
    """

    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True, frozen=True)
    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id"})


class TaskCreateParams(ContextParams):
    """``manage_task(action="create")``: the workflow's ``task_create`` plus a description."""

    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id", "title", "task_type", "role", "status", "dna"})
    task_id: Identifier
    title: Title
    description: Description = Field(description="What the task is for and what done looks like")
    task_type: Name = "task"
    role: Name | None = None
    status: Name | None = None
    dna: JsonObject | None = None


class WorkUpdateParams(ContextParams):
    """``manage_task(action="update")``: what was done and what moved forward."""

    task_id: Identifier
    work_notes: WorkNotes = Field(description="Description of work performed")
    progress_made: ProgressText = Field(description="Specific progress achieved")
    files_modified: Paths = Field(default_factory=list, description="List of files modified")
    blockers: Annotated[list[Blocker], Field(max_length=20)] = Field(default_factory=list)


class CompletionParams(ContextParams):
    """``manage_task(action="complete")``: a summary of the finished work and how it was checked."""

    task_id: Identifier
    completion_summary: CompletionSummary = Field(description="Detailed summary of completed work")
    testing_notes: TestingNotes | None = Field(None, description="Testing performed and results")
    files_created: Paths = Field(default_factory=list, description="New files created")
    files_modified: Paths = Field(default_factory=list, description="Files modified")
    patterns_identified: JsonObject = Field(default_factory=dict, description="Reusable patterns discovered")


class ContextUpdateParams(ContextParams):
    """``manage_context(action="update")``: set fields of the task's context (seed 4.1: ``data``)."""

    task_id: Identifier
    data: NonEmptyJsonObject
    propagate_changes: bool = False


class InsightParams(ContextParams):
    """``manage_context(action="add_insight")``: something learned that others should know."""

    task_id: Identifier
    insight: InsightText
    category: Literal["technical", "pattern", "risk", "decision", "lesson"] = "technical"
    importance: Literal["low", "medium", "high", "critical"] = "medium"


class ProgressParams(ContextParams):
    """``manage_context(action="add_progress")``: a progress note on the task."""

    task_id: Identifier
    progress_made: ProgressText
    next_steps: ProgressText | None = None
    percent_complete: Annotated[int, Field(ge=0, le=100)] | None = None


class SubtaskCreateParams(ContextParams):
    """``manage_subtask(action="create")``: a subtask of ``task_id``."""

    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id", "subtask_id", "title"})
    task_id: Identifier
    subtask_id: Identifier
    title: Title
    description: Description


class SubtaskUpdateParams(ContextParams):
    """``manage_subtask(action="update")``: the task update's parameters, for one subtask."""

    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id", "subtask_id"})
    task_id: Identifier
    subtask_id: Identifier
    work_notes: WorkNotes
    progress_made: ProgressText
    files_modified: Paths = Field(default_factory=list)
    blockers: Annotated[list[Blocker], Field(max_length=20)] = Field(default_factory=list)


class SubtaskCompletionParams(ContextParams):
    """``manage_subtask(action="complete")``: the task completion's parameters, for one subtask."""

    CALL_FIELDS: ClassVar[frozenset[str]] = frozenset({"task_id", "subtask_id"})
    task_id: Identifier
    subtask_id: Identifier
    completion_summary: CompletionSummary
    testing_notes: TestingNotes | None = None
    files_created: Paths = Field(default_factory=list)
    files_modified: Paths = Field(default_factory=list)
    patterns_identified: JsonObject = Field(default_factory=dict)


SCHEMAS: Final[Mapping[str, Mapping[str, type[ContextParams]]]] = {
    "manage_task": {"create": TaskCreateParams, "update": WorkUpdateParams, "complete": CompletionParams},
    "manage_context": {"update": ContextUpdateParams, "add_insight": InsightParams, "add_progress": ProgressParams},
    "manage_subtask": {
        "create": SubtaskCreateParams,
        "update": SubtaskUpdateParams,
        "complete": SubtaskCompletionParams,
    },
}


def context_fields(tool: str, action: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The (required, optional) context parameters of a tool/action's schema."""
    schema = SCHEMAS[tool][action]
    names = [n for n in schema.model_fields if n not in schema.CALL_FIELDS]
    return (
        tuple(n for n in names if schema.model_fields[n].is_required()),
        tuple(n for n in names if not schema.model_fields[n].is_required()),
    )
