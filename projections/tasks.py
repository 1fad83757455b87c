"""Workflow tasks: a pure fold over one task stream (``task:<id>``)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ledger.core.events import (
    RecordedEvent,
    TaskCreated,
    TaskDnaUpdated,
    TaskTransitioned,
    TaskTransitionRefused,
    TaskWorkRecorded,
)
from projections._copy import with_changes

STREAM_PREFIX = "task:"


@dataclass(frozen=True, slots=True)
class WorkEntry:
    """One report of work on the task (or a subtask) with the parameters as given."""

    tool: str
    action: str
    subtask_id: str | None
    params: Mapping[str, Any]
    agent: str | None
    recorded_at: _dt.datetime
    position: int


@dataclass(frozen=True, slots=True)
class TaskView:
    """What the ledger knows about one task, including when it last entered each status."""

    task_id: str
    task_type: str
    title: str
    status: str
    role: str
    dna: Mapping[str, Any]
    created_at: _dt.datetime
    created_by: str | None
    entered: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # status -> position
    blocked_from: str | None = None
    transitions: int = 0
    refusals: int = 0
    version: int = 0
    position: int = 0
    updated_at: _dt.datetime | None = None
    work: tuple[WorkEntry, ...] = ()  # reported through manage_task / manage_context / manage_subtask
    subtasks: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # subtask id -> status
    actors: frozenset[str] = frozenset()  # agents that created, changed, moved or reported on the task

    def entered_position(self, status: str) -> int:
        """The position at which the task last entered ``status`` (0 if it never did)."""
        return self.entered.get(status, 0)


def task_key(rec: RecordedEvent) -> str | None:
    return rec.stream[len(STREAM_PREFIX) :] if rec.stream.startswith(STREAM_PREFIX) else None


def evolve(view: TaskView | None, rec: RecordedEvent) -> TaskView | None:
    e = rec.event
    if isinstance(e, TaskCreated):
        return TaskView(
            task_id=e.task_id,
            task_type=e.task_type,
            title=e.title,
            status=e.status,
            role=e.role,
            dna=MappingProxyType(dict(e.dna)),
            created_at=rec.recorded_at,
            created_by=rec.agent,
            actors=frozenset({rec.agent}) if rec.agent else frozenset(),
            entered=MappingProxyType({e.status: rec.position}),
            version=rec.version,
            position=rec.position,
            updated_at=rec.recorded_at,
        )
    if view is None:
        return None
    common: dict[str, Any] = {"version": rec.version, "position": rec.position, "updated_at": rec.recorded_at}
    if rec.agent and rec.agent not in view.actors:
        common["actors"] = view.actors | {rec.agent}
    if isinstance(e, TaskDnaUpdated):
        dna = {k: v for k, v in view.dna.items() if k not in e.removed}
        dna.update(e.set)
        return with_changes(view, dna=MappingProxyType(dna), **common)
    if isinstance(e, TaskTransitioned):
        dna = {k: v for k, v in view.dna.items() if k not in e.cleared_dna}
        return with_changes(
            view,
            status=e.to_status,
            role=e.role_after,
            dna=MappingProxyType(dna),
            entered=MappingProxyType({**view.entered, e.to_status: rec.position}),
            blocked_from=e.from_status if e.to_status == "blocked" else None,
            transitions=view.transitions + 1,
            **common,
        )
    if isinstance(e, TaskWorkRecorded):
        entry = WorkEntry(
            e.tool, e.action, e.subtask_id, MappingProxyType(dict(e.params)), rec.agent, rec.recorded_at, rec.position
        )
        subtasks = view.subtasks
        if e.tool == "manage_subtask" and e.subtask_id is not None:
            status = {"create": "open", "complete": "complete"}.get(e.action, subtasks.get(e.subtask_id, "open"))
            subtasks = MappingProxyType({**subtasks, e.subtask_id: status})
        return with_changes(view, work=(*view.work, entry), subtasks=subtasks, **common)
    if isinstance(e, TaskTransitionRefused):
        return with_changes(view, refusals=view.refusals + 1, **common)
    return view


def fold(events: Iterable[RecordedEvent]) -> TaskView | None:
    view: TaskView | None = None
    for rec in events:
        view = evolve(view, rec)
    return view
