"""MCP tools of the Odyssean Anchor: ``anchor_challenge`` asks the server for a line to quote, and
``odyssean_anchor`` submits a proof for the caller's session."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer

from api.fields import PROOF, ROLE, TIER
from api.mcp.context import ToolContext, ledger_call
from api.mcp.hints import writes
from api.mcp.params import SESSION_ID
from ledger.anchor.report import AnchorChallengeResult, AnchorResult


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``anchor_challenge`` and ``odyssean_anchor`` to the MCP server."""
    ledger, actor, session_of = tools.ledger, tools.actor, tools.session_of

    @mcp.tool(title="Get an Odyssean Anchor challenge", annotations=writes())
    def anchor_challenge(ctx: Context, session_id: Annotated[str | None, SESSION_ID] = None) -> AnchorChallengeResult:
        """Ask for a challenge before anchoring: the server picks a line of a file in your working tree. Read that
        line and quote it in your proof, under CONTEXT, as CHALLENGE::<challenge_id>[<the line's text>]. One
        challenge answers one attempt, before it expires; asking again replaces it."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.anchor_challenge(who, sid))

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
