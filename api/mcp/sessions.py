"""MCP tools that open and close a ledger session: ``clock_in`` and ``clock_out``."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer

from api.fields import FOCUS, ROLE, WORKING_DIR
from api.mcp.context import ToolContext, ledger_call
from api.mcp.hints import writes
from api.mcp.params import SESSION_ID
from ledger.sessions.report import SessionInfo


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``clock_in`` and ``clock_out`` to the MCP server."""
    ledger, actor, session_of = tools.ledger, tools.actor, tools.session_of

    @mcp.tool(title="Clock in", annotations=writes())
    def clock_in(
        ctx: Context,
        role: Annotated[str, ROLE],
        working_dir: Annotated[str | None, WORKING_DIR] = None,
        focus: Annotated[str | None, FOCUS] = None,
    ) -> SessionInfo:
        """Open a ledger session for your work; pass its session_id to the other tools."""
        who = actor(ctx)
        return ledger_call(lambda: ledger.clock_in(who, role, working_dir, focus))

    @mcp.tool(title="Clock out", annotations=writes(idempotent=True))
    def clock_out(ctx: Context, session_id: Annotated[str | None, SESSION_ID] = None) -> SessionInfo:
        """Close a session; it accepts no further actions."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.clock_out(who, sid))
