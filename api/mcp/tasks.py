"""MCP tools of workflow tasks with DNA gates (seed 003 Layer A) over ``WorkflowCommands``.

The acting role of a transition is the role of the caller's session (``clock_in(role=...)``); the agent comes
from the credential. Every DNA memory field is verified against the ledger when a transition needs it.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

from api.mcp.context import ToolContext, ledger_call
from ledger.workflow.report import TaskInfo, TransitionResult


def register(mcp: MCPServer, tools: ToolContext) -> None:
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
        return ledger_call(
            lambda: ledger.task_create(who, task_id, title, task_type=task_type, role=role, status=status, dna=dna)
        )

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
    def task_get(ctx: Context, task_id: str) -> TaskInfo:
        """A task: status, role, DNA, and the transitions the table offers from its status."""
        who = tools.actor(ctx)
        return ledger_call(lambda: ledger.task_get(task_id, viewer=who))

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
    def task_list(
        ctx: Context, status: str | None = None, role: str | None = None, task_type: str | None = None
    ) -> list[TaskInfo]:
        """Tasks, filtered by status, role or type (with an agent key: open tasks and those you created or acted
        on)."""
        who = tools.actor(ctx)
        return ledger_call(lambda: ledger.task_list(status=status, role=role, task_type=task_type, viewer=who))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def task_update_dna(
        ctx: Context, task_id: str, dna: dict[str, Any] | None = None, remove: list[str] | None = None
    ) -> TaskInfo:
        """Set DNA fields (e.g. memory_query_session = the session of your memory query, memory_contribution_id
        = the id of what you contributed: a declarative statement of more than 50 characters) or remove them. The
        ledger checks them when a transition needs them."""
        who = tools.actor(ctx)
        return ledger_call(lambda: ledger.task_update_dna(who, task_id, dna, remove or []))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def task_transition(ctx: Context, task_id: str, to_status: str, session_id: str | None = None) -> TransitionResult:
        """Move a task, acting in your session's role (the table's row is chosen by the task's role; your role must
        be among its allowed actors). Claiming (->active) needs memory_query_session in the DNA; handing on
        (->review/approval) needs memory_contribution_id. A refusal is recorded with its reasons."""
        who, sid = tools.actor(ctx), tools.session_of(session_id)
        return ledger_call(lambda: ledger.task_transition(who, task_id, to_status, sid))
