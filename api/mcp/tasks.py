"""MCP tools of workflow tasks with DNA gates (seed 003 Layer A) over ``WorkflowCommands``.

The acting role of a transition is the role of the caller's session (``clock_in(role=...)``); the agent comes
from the credential. Every DNA memory field is verified against the ledger when a transition needs it. The task
types, roles and statuses the ledger's workflow table names are published as the arguments' ``enum``.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer

from api.fields import DNA, TASK_ID, TITLE, described
from api.mcp.context import ToolContext, ledger_call
from api.mcp.hints import READS, writes
from api.mcp.params import SESSION_ID
from ledger.workflow import report as wf
from ledger.workflow.report import TaskInfo, TransitionResult

TASK_TYPE = described("a task type of the workflow table")
TASK_ROLE = described("the role the task is assigned to (a role of the workflow table)")
START_STATUS = described("the status the task starts in")
STATUS_FILTER = described("only tasks in this status")
ROLE_FILTER = described("only tasks assigned to this role")
TYPE_FILTER = described("only tasks of this type")
REMOVE = described("names of DNA fields to remove, e.g. ['blocked_reason']")
TO_STATUS = described("the status to move the task to, or 'restore' to return a blocked task to where it was")


def publish_workflow(mcp: MCPServer, flow: wf.Workflow) -> None:
    """Publish the workflow table's names as ``enum`` where the ledger refuses any other value."""
    open_statuses = [s for s in flow.statuses if s not in wf.TERMINAL and s != "blocked"]
    enums = {
        ("task_create", "task_type"): list(flow.types),
        ("task_create", "role"): list(flow.roles),
        ("task_create", "status"): open_statuses,
        ("task_transition", "to_status"): [*flow.statuses, wf.RESTORE],
    }
    for (name, param), values in enums.items():
        tool = mcp._tool_manager.get_tool(name)
        assert tool is not None, name
        tool.parameters["properties"][param]["enum"] = values


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add the task tools to the MCP server."""
    ledger = tools.ledger

    @mcp.tool(title="Create a task", annotations=writes(idempotent=True))
    def task_create(
        ctx: Context,
        task_id: Annotated[str, TASK_ID],
        title: Annotated[str, TITLE],
        task_type: Annotated[str, TASK_TYPE] = "task",
        role: Annotated[str, TASK_ROLE] = "dev",
        status: Annotated[str, START_STATUS] = "ready",
        dna: Annotated[dict[str, Any] | None, DNA] = None,
    ) -> TaskInfo:
        """Create a workflow task (id: a slug such as 'memory-gate-42') in a status, assigned to a role."""
        who = tools.actor(ctx)
        return ledger_call(
            lambda: ledger.task_create(who, task_id, title, task_type=task_type, role=role, status=status, dna=dna)
        )

    @mcp.tool(title="Get a task", annotations=READS)
    def task_get(ctx: Context, task_id: Annotated[str, TASK_ID]) -> TaskInfo:
        """A task: status, role, DNA, and the transitions the table offers from its status."""
        who = tools.actor(ctx)
        return ledger_call(lambda: ledger.task_get(task_id, viewer=who))

    @mcp.tool(title="List tasks", annotations=READS)
    def task_list(
        ctx: Context,
        status: Annotated[str | None, STATUS_FILTER] = None,
        role: Annotated[str | None, ROLE_FILTER] = None,
        task_type: Annotated[str | None, TYPE_FILTER] = None,
    ) -> list[TaskInfo]:
        """Tasks, filtered by status, role or type (with an agent key: open tasks and those you created or acted
        on)."""
        who = tools.actor(ctx)
        return ledger_call(lambda: ledger.task_list(status=status, role=role, task_type=task_type, viewer=who))

    @mcp.tool(title="Update a task's DNA", annotations=writes(idempotent=True))
    def task_update_dna(
        ctx: Context,
        task_id: Annotated[str, TASK_ID],
        dna: Annotated[dict[str, Any] | None, DNA] = None,
        remove: Annotated[list[str] | None, REMOVE] = None,
    ) -> TaskInfo:
        """Set DNA fields (e.g. memory_query_session = the session of your memory query, memory_contribution_id
        = the id of what you contributed: a declarative statement of more than 50 characters) or remove them. The
        ledger checks them when a transition needs them."""
        who = tools.actor(ctx)
        return ledger_call(lambda: ledger.task_update_dna(who, task_id, dna, remove or []))

    @mcp.tool(title="Move a task", annotations=writes())
    def task_transition(
        ctx: Context,
        task_id: Annotated[str, TASK_ID],
        to_status: Annotated[str, TO_STATUS],
        session_id: Annotated[str | None, SESSION_ID] = None,
    ) -> TransitionResult:
        """Move a task, acting in your session's role (the table's row is chosen by the task's role; your role must
        be among its allowed actors). Claiming (->active) needs memory_query_session in the DNA; handing on
        (->review/approval) needs memory_contribution_id. A refusal is recorded with its reasons."""
        who, sid = tools.actor(ctx), tools.session_of(session_id)
        return ledger_call(lambda: ledger.task_transition(who, task_id, to_status, sid))

    publish_workflow(mcp, tools.workflow)
