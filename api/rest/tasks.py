"""REST routes of workflow tasks with DNA gates (seed 003 Layer A) over ``WorkflowCommands``.

The acting role of a transition is the role of the caller's session (``clock_in(role=...)``); the agent comes
from the credential. The table's row is chosen by the task's role; the acting role must be an allowed actor.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, status
from pydantic import Field

from api.fields import DNA, SESSION_ID_FORM, TASK_ID, TITLE, described, session_id_field
from api.params import AsOf, Position
from api.rest.context import Caller, StrictBody
from api.rest.deps import LedgerDep
from ledger.workflow.report import TaskInfo, TransitionResult

TRANSITION_HELP = "target status, or 'restore' to return a blocked task to where it was"


class CreateTask(StrictBody):
    task_id: Annotated[str, TASK_ID]
    title: Annotated[str, TITLE]
    task_type: str = "task"
    role: str = "dev"
    status: str = "ready"
    dna: Annotated[dict[str, Any], DNA] = Field(default_factory=dict)


class UpdateDna(StrictBody):
    set: dict[str, Any] = Field(default_factory=dict, description="fields to set")
    remove: list[str] = Field(default_factory=list, description="fields to remove")


class Transition(StrictBody):
    to_status: Annotated[str, described(TRANSITION_HELP)]
    session_id: Annotated[str, session_id_field(f"your session ({SESSION_ID_FORM}): its role is the acting role")]


def router() -> APIRouter:
    """The ``/tasks`` routes."""
    api = APIRouter(tags=["tasks"])

    @api.post("/tasks", response_model=TaskInfo, status_code=status.HTTP_201_CREATED)
    async def create(ledger: LedgerDep, body: CreateTask, who: Caller) -> Any:
        return await who.run(
            lambda actor: ledger.task_create(
                actor,
                body.task_id,
                body.title,
                task_type=body.task_type,
                role=body.role,
                status=body.status,
                dna=body.dna,
            )
        )

    @api.get("/tasks", response_model=list[TaskInfo])
    async def list_tasks(
        ledger: LedgerDep,
        who: Caller,
        status: str | None = None,
        role: str | None = None,
        task_type: str | None = None,
    ) -> Any:
        return await who.run(
            lambda actor: ledger.task_list(status=status, role=role, task_type=task_type, viewer=actor)
        )

    @api.get("/tasks/{task_id}", response_model=TaskInfo)
    async def get(
        ledger: LedgerDep,
        task_id: str,
        who: Caller,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(lambda actor: ledger.task_get(task_id, as_of=as_of, position=position, viewer=actor))

    @api.patch("/tasks/{task_id}/dna", response_model=TaskInfo)
    async def update_dna(ledger: LedgerDep, task_id: str, body: UpdateDna, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.task_update_dna(actor, task_id, body.set, body.remove))

    @api.post("/tasks/{task_id}/transitions", response_model=TransitionResult)
    async def transition(ledger: LedgerDep, task_id: str, body: Transition, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.task_transition(actor, task_id, body.to_status, body.session_id))

    return api
