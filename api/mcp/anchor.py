"""MCP tool of the Odyssean Anchor: ``odyssean_anchor`` submits a proof for the caller's session."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

from api.mcp.context import ToolContext, ledger_call
from ledger.anchor.report import AnchorResult


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``odyssean_anchor`` to the MCP server."""
    ledger, actor, session_of = tools.ledger, tools.actor, tools.session_of

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def odyssean_anchor(
        ctx: Context, role: str, proof_candidate: str, session_id: str | None = None, tier: str = "default"
    ) -> AnchorResult:
        """Submit an Odyssean Anchor proof (OA5). The server validates it against the real project state,
        counts your attempts, and locks the session after 3 failures."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.anchor(who, sid, role, proof_candidate, tier))
