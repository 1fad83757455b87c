"""Events of workflow tasks: a task created, its DNA updated, a transition made or refused."""

from typing import Any, ClassVar

from ledger.core.events.base import DomainEvent, Texts


class TaskCreated(DomainEvent):
    """A workflow task was created in a status, assigned to a role, with initial DNA."""

    type_name: ClassVar[str] = "TaskCreated"
    texts: ClassVar[Texts] = Texts(free=("title", "dna"), labels=("task_id",), ledger=("task_type", "status", "role"))
    task_id: str
    task_type: str
    title: str
    status: str
    role: str
    dna: dict[str, Any] = {}


class TaskDnaUpdated(DomainEvent):
    """Fields of a task's DNA were set (``set``) or removed (``removed``)."""

    type_name: ClassVar[str] = "TaskDnaUpdated"
    texts: ClassVar[Texts] = Texts(free=("set",), labels=("task_id", "removed"))
    task_id: str
    set: dict[str, Any] = {}
    removed: list[str] = []


class TaskTransitioned(DomainEvent):
    """A task moved between statuses under a rule of the workflow table; ``evidence`` maps each verified DNA
    field to the position of the ledger event that proves it."""

    type_name: ClassVar[str] = "TaskTransitioned"
    texts: ClassVar[Texts] = Texts(
        labels=("task_id",),
        ledger=(
            "from_status",
            "to_status",
            "acting_role",
            "rule",
            "role_before",
            "role_after",
            "cleared_dna",
            "evidence",
        ),
    )
    task_id: str
    from_status: str
    to_status: str
    acting_role: str
    rule: str
    role_before: str
    role_after: str
    cleared_dna: list[str] = []
    evidence: dict[str, int] = {}


class TaskTransitionRefused(DomainEvent):
    """A transition was refused; ``codes`` are machine-readable, ``reasons`` say what to do instead."""

    type_name: ClassVar[str] = "TaskTransitionRefused"
    texts: ClassVar[Texts] = Texts(
        labels=("task_id",),
        ledger=("from_status", "to_status", "acting_role", "codes", "reasons"),
    )
    task_id: str
    from_status: str
    to_status: str
    acting_role: str
    codes: list[str]
    reasons: list[str]
