"""MCP tools that open and close a ledger session: ``clock_in`` and ``clock_out``."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

from api.mcp.context import ToolContext, ledger_call
from ledger.sessions.report import SessionInfo


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``clock_in`` and ``clock_out`` to the MCP server."""
    ledger, actor, session_of = tools.ledger, tools.actor, tools.session_of

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def clock_in(ctx: Context, role: str, working_dir: str | None = None, focus: str | None = None) -> SessionInfo:
        """Open a ledger session for your work; pass its session_id to the other tools."""
        who = actor(ctx)
        return ledger_call(lambda: ledger.clock_in(who, role, working_dir, focus))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def clock_out(ctx: Context, session_id: str | None = None) -> SessionInfo:
        """Close a session; it accepts no further actions."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.clock_out(who, sid))
