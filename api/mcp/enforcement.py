"""Managed task tools with parameter enforcement (seed 004): MCP tools over ``EnforcementCommands``.

Each tool passes only the arguments the caller gave, so the enforcement layer sees exactly the call that was
made; a blocked call is a normal result with ``success: false`` and everything needed to fix it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer

from api.fields import described
from api.mcp.context import UNKNOWN_ARGUMENTS, ToolContext, ledger_call
from api.mcp.hints import writes
from api.mcp.params import OPTIONAL_SESSION_ID
from ledger.enforcement.report import PARAM_HINTS, limit_for
from ledger.workflow.report import ManagedResult

# locals() of a tool also holds the closure variables it uses (run).
MANAGED_TOOLS = ("manage_task", "manage_context", "manage_subtask")
_NOT_PARAMS = frozenset({"ctx", "action", "session_id", "tools", "ledger", "run", UNKNOWN_ARGUMENTS})
TASK_ACTION = described("create: a new task; update: report work on it; complete: finish it with a summary")
CONTEXT_ACTION = described("update: set context fields (data); add_insight: an insight; add_progress: a progress note")
SUBTASK_ACTION = described("create: a new subtask; update: report work on it; complete: finish it with a summary")


def _given(arguments: dict[str, Any]) -> dict[str, Any]:
    """The parameters the caller gave (the tool's arguments less context, action, session and omitted ones)."""
    return {k: v for k, v in arguments.items() if k not in _NOT_PARAMS and v is not None}


def publish_limits(mcp: MCPServer, names: tuple[str, ...] = MANAGED_TOOLS) -> None:
    """Publish the hard size limits (``ledger.enforcement_limits``) in the tools' input schemas, so clients see them,
    after each parameter's hint (``ledger.enforcement.report.PARAM_HINTS``) as its description.

    Only the published schema changes: the argument models stay lenient on purpose, so an oversized call still
    reaches the ledger, which refuses it and records the refused check (the SDK's own validation would refuse it
    without a trace). JSON Schema has no byte-size keyword, so objects carry their limit in the description.
    """
    for name in names:
        tool = mcp._tool_manager.get_tool(name)
        assert tool is not None, name
        for param, prop in tool.parameters.get("properties", {}).items():
            if param in ("action", "session_id"):
                continue
            limit = limit_for(param)
            for branch in prop.get("anyOf", [prop]):
                kind = branch.get("type")
                if kind == "string" and limit.kind == "text":
                    branch["maxLength"] = limit.chars
                elif kind == "array" and limit.kind == "list":
                    branch["maxItems"] = limit.items
                    branch.setdefault("items", {})["maxLength"] = limit.chars
            said = prop.get("description") or PARAM_HINTS.get(param, "")
            said = f"{said}." if said and not said.endswith(".") else said
            prop["description"] = (
                f"{said}{' ' if said else ''}Hard limit at every enforcement level: {limit.describe()}."
            )


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add manage_task, manage_context and manage_subtask to the MCP server, their size limits published; unknown
    arguments reach their enforcement (see :func:`_taking_unknown`)."""
    ledger = tools.ledger

    def run(name: str, arguments: dict[str, Any]) -> ManagedResult:
        params = _given(arguments) | (arguments.get(UNKNOWN_ARGUMENTS) or {})
        who, sid = tools.actor(arguments["ctx"]), tools.optional_session(arguments.get("session_id"))
        command = getattr(ledger, name)
        return ledger_call(lambda: command(who, arguments["action"], params, sid))

    @mcp.tool(title="Manage a task", annotations=writes())
    def manage_task(
        ctx: Context,
        action: Annotated[Literal["create", "update", "complete"], TASK_ACTION],
        task_id: str | None = None,
        title: str | None = None,
        description: str | None = None,
        task_type: str | None = None,
        role: str | None = None,
        status: str | None = None,
        dna: dict[str, Any] | None = None,
        work_notes: str | None = None,
        progress_made: str | None = None,
        files_modified: list[str] | None = None,
        blockers: list[str] | None = None,
        completion_summary: str | None = None,
        testing_notes: str | None = None,
        files_created: list[str] | None = None,
        patterns_identified: dict[str, Any] | None = None,
        session_id: Annotated[str | None, OPTIONAL_SESSION_ID] = None,
    ) -> ManagedResult:
        """Create a task, report an update (work_notes, progress_made, files_modified), or complete it
        (completion_summary, testing_notes, files_created; a workflow transition in your session's role).
        Say what you did: calls without it are answered with a hint, an example and a corrected call."""
        return run("manage_task", dict(locals()))

    @mcp.tool(title="Manage a task's context", annotations=writes())
    def manage_context(
        ctx: Context,
        action: Annotated[Literal["update", "add_insight", "add_progress"], CONTEXT_ACTION],
        task_id: str | None = None,
        data: dict[str, Any] | None = None,
        propagate_changes: bool | None = None,
        insight: str | None = None,
        category: str | None = None,
        importance: str | None = None,
        progress_made: str | None = None,
        next_steps: str | None = None,
        percent_complete: int | None = None,
        session_id: Annotated[str | None, OPTIONAL_SESSION_ID] = None,
    ) -> ManagedResult:
        """Update a task's context (data; propagate_changes=true records it on the task's open subtasks too), add
        an insight (insight, category, importance) or a progress note (progress_made, next_steps,
        percent_complete)."""
        return run("manage_context", dict(locals()))

    @mcp.tool(title="Manage a subtask", annotations=writes())
    def manage_subtask(
        ctx: Context,
        action: Annotated[Literal["create", "update", "complete"], SUBTASK_ACTION],
        task_id: str | None = None,
        subtask_id: str | None = None,
        title: str | None = None,
        description: str | None = None,
        work_notes: str | None = None,
        progress_made: str | None = None,
        files_modified: list[str] | None = None,
        blockers: list[str] | None = None,
        completion_summary: str | None = None,
        testing_notes: str | None = None,
        files_created: list[str] | None = None,
        patterns_identified: dict[str, Any] | None = None,
        session_id: Annotated[str | None, OPTIONAL_SESSION_ID] = None,
    ) -> ManagedResult:
        """Create a subtask of a task, report an update on it, or complete it (same reporting as manage_task)."""
        return run("manage_subtask", dict(locals()))

    for name in MANAGED_TOOLS:
        tool = mcp._tool_manager.get_tool(name)
        assert tool is not None, name
        tool.fn = _taking_unknown(name, run)
    publish_limits(mcp)


def _taking_unknown(name: str, run: Callable[[str, dict[str, Any]], ManagedResult]) -> Callable[..., ManagedResult]:
    """The tool's function as the server calls it: its declared arguments plus, under ``UNKNOWN_ARGUMENTS``, those
    it does not declare (``forbid_unknown_arguments(..., answered_by_tool=MANAGED_TOOLS)``), all handed to the
    ledger, whose enforcement answers unknown ones with a hint and an example and records the check."""

    def fn(**arguments: Any) -> ManagedResult:
        unknown = arguments.pop(UNKNOWN_ARGUMENTS, None) or {}
        return run(name, arguments | {UNKNOWN_ARGUMENTS: unknown})

    return fn
