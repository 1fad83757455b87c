"""MCP tool of the Odyssean Anchor: ``odyssean_anchor`` submits a proof for the caller's session."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer

from api.fields import PROOF, ROLE, TIER
from api.mcp.context import ToolContext, ledger_call
from api.mcp.hints import writes
from api.mcp.params import SESSION_ID
from ledger.anchor.report import AnchorResult


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``odyssean_anchor`` to the MCP server."""
    ledger, actor, session_of = tools.ledger, tools.actor, tools.session_of

    @mcp.tool(title="Submit an Odyssean Anchor proof", annotations=writes())
    def odyssean_anchor(
        ctx: Context,
        role: Annotated[str, ROLE],
        proof_candidate: Annotated[str, PROOF],
        session_id: Annotated[str | None, SESSION_ID] = None,
        tier: Annotated[str, TIER] = "default",
    ) -> AnchorResult:
        """Submit an Odyssean Anchor proof (OA5). The server validates it against the real project state,
        counts your attempts, and locks the session after 3 failures."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.anchor(who, sid, role, proof_candidate, tier))
