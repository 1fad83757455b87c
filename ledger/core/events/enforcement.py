"""Events of parameter enforcement: a tool call's parameters checked, and work recorded through a managed tool."""

from typing import Any, ClassVar

from ledger.core.events.base import DomainEvent, Texts


class ParameterChecked(DomainEvent):
    """A tool call's parameters were checked: the level applied, the outcome and what was missing or invalid.

    ``passed`` (the parameters were valid) is what progressive enforcement folds; ``allowed`` says whether the
    call went ahead. ``error`` is set when enforcement itself failed and a ``fail_open`` rule let the call
    through (outcome ``bypassed``). ``duration_ms`` is how long validating and deciding took (seed 004 §7.1's
    ``record_validation`` duration; v2 — checks recorded before it carry ``None``)."""

    type_name: ClassVar[str] = "ParameterChecked"
    schema_version: ClassVar[int] = 2
    texts: ClassVar[Texts] = Texts(
        free=("invalid", "error"),
        labels=("action", "unknown", "task_id"),
        ledger=("tool", "base_level", "level", "outcome", "missing", "session_id"),
    )
    tool: str
    action: str
    base_level: str
    level: str
    outcome: str
    passed: bool
    allowed: bool
    missing: list[str] = []
    invalid: dict[str, str] = {}
    unknown: list[str] = []
    task_id: str | None = None
    session_id: str | None = None
    error: str | None = None
    duration_ms: float | None = None


class TaskWorkRecorded(DomainEvent):
    """An agent reported work on a task (or one of its subtasks) through a managed tool: the parameters as
    given, e.g. ``work_notes`` and ``progress_made`` for ``manage_task.update``."""

    type_name: ClassVar[str] = "TaskWorkRecorded"
    texts: ClassVar[Texts] = Texts(free=("params",), labels=("task_id", "subtask_id"), ledger=("tool", "action"))
    task_id: str
    tool: str
    action: str
    subtask_id: str | None = None
    params: dict[str, Any] = {}
