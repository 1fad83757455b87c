"""Workflow tasks with DNA gates (seed 003 Layer A): MCP tools and REST routes over ``WorkflowCommands``.

The acting role of a transition is the role of the caller's session (``clock_in(role=...)``); the agent comes
from the credential. The table's row is chosen by the task's role; the acting role must be an allowed actor.
Every DNA memory field is verified against the ledger when a transition needs it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, status
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from api.mcp_server import ToolContext, _ledger_call
from api.params import AsOf, Position
from api.rest import Caller
from ledger.service import Ledger
from ledger.workflow.report import TaskInfo, TransitionResult

TRANSITION_HELP = "target status, or 'restore' to return a blocked task to where it was"


def register_tools(mcp: MCPServer, tools: ToolContext) -> None:
    """Add the task tools to the MCP server."""
    ledger = tools.ledger

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def task_create(
        ctx: Context,
        task_id: str,
        title: str,
        task_type: str = "task",
        role: str = "dev",
        status: str = "ready",
        dna: dict[str, Any] | None = None,
    ) -> TaskInfo:
        """Create a workflow task (id: a slug such as 'memory-gate-42') in a status, assigned to a role."""
        who = tools.actor(ctx)
        return _ledger_call(
            lambda: ledger.task_create(who, task_id, title, task_type=task_type, role=role, status=status, dna=dna)
        )

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
    def task_get(ctx: Context, task_id: str) -> TaskInfo:
        """A task: status, role, DNA, and the transitions the table offers from its status."""
        who = tools.actor(ctx)
        return _ledger_call(lambda: ledger.task_get(task_id, viewer=who))

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
    def task_list(
        ctx: Context, status: str | None = None, role: str | None = None, task_type: str | None = None
    ) -> list[TaskInfo]:
        """Tasks, filtered by status, role or type (with an agent key: open tasks and those you created or acted
        on)."""
        who = tools.actor(ctx)
        return _ledger_call(lambda: ledger.task_list(status=status, role=role, task_type=task_type, viewer=who))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def task_update_dna(
        ctx: Context, task_id: str, dna: dict[str, Any] | None = None, remove: list[str] | None = None
    ) -> TaskInfo:
        """Set DNA fields (e.g. memory_query_session = the session of your memory query, memory_contribution_id
        = the id of what you contributed: a declarative statement of more than 50 characters) or remove them. The
        ledger checks them when a transition needs them."""
        who = tools.actor(ctx)
        return _ledger_call(lambda: ledger.task_update_dna(who, task_id, dna, remove or []))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def task_transition(ctx: Context, task_id: str, to_status: str, session_id: str | None = None) -> TransitionResult:
        """Move a task, acting in your session's role (the table's row is chosen by the task's role; your role must
        be among its allowed actors). Claiming (->active) needs memory_query_session in the DNA; handing on
        (->review/approval) needs memory_contribution_id. A refusal is recorded with its reasons."""
        who, sid = tools.actor(ctx), tools.session_of(session_id)
        return _ledger_call(lambda: ledger.task_transition(who, task_id, to_status, sid))


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateTask(_Body):
    task_id: str = Field(description="a slug: lower-case letters, digits, '.', '_', '-'")
    title: str
    task_type: str = "task"
    role: str = "dev"
    status: str = "ready"
    dna: dict[str, Any] = Field(default_factory=dict)


class UpdateDna(_Body):
    set: dict[str, Any] = Field(default_factory=dict, description="fields to set")
    remove: list[str] = Field(default_factory=list, description="fields to remove")


class Transition(_Body):
    to_status: str = Field(description=TRANSITION_HELP)
    session_id: str = Field(description="your session: its role is the acting role")


def _ledger(request: Request) -> Ledger:
    ledger: Ledger = request.app.state.ledger
    return ledger


def router() -> APIRouter:
    """REST routes for tasks (the caller is ``api.rest.Caller``)."""
    api = APIRouter(tags=["tasks"])

    @api.post("/tasks", response_model=TaskInfo, status_code=status.HTTP_201_CREATED)
    async def create(body: CreateTask, who: Caller, request: Request) -> Any:
        ledger = _ledger(request)
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
        who: Caller,
        request: Request,
        status: str | None = None,
        role: str | None = None,
        task_type: str | None = None,
    ) -> Any:
        ledger = _ledger(request)
        return await who.run(
            lambda actor: ledger.task_list(status=status, role=role, task_type=task_type, viewer=actor)
        )

    @api.get("/tasks/{task_id}", response_model=TaskInfo)
    async def get(
        task_id: str,
        who: Caller,
        request: Request,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        ledger = _ledger(request)
        return await who.run(lambda actor: ledger.task_get(task_id, as_of=as_of, position=position, viewer=actor))

    @api.patch("/tasks/{task_id}/dna", response_model=TaskInfo)
    async def update_dna(task_id: str, body: UpdateDna, who: Caller, request: Request) -> Any:
        ledger = _ledger(request)
        return await who.run(lambda actor: ledger.task_update_dna(actor, task_id, body.set, body.remove))

    @api.post("/tasks/{task_id}/transitions", response_model=TransitionResult)
    async def transition(task_id: str, body: Transition, who: Caller, request: Request) -> Any:
        ledger = _ledger(request)
        return await who.run(lambda actor: ledger.task_transition(actor, task_id, body.to_status, body.session_id))

    return api
