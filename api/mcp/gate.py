"""MCP tools of the compliance gate: ``assert_compliance`` (:func:`register`) and ``verify_stamp``
(:func:`register_verify`, listed last among the core tools, where clients have always seen it)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from api.fields import RECEIPT, REQUEST_ID
from api.mcp.context import ToolContext, ledger_call
from api.mcp.hints import READS, writes
from api.mcp.params import SESSION_ID
from ledger.core.errors import StoreBusy, StoreUnavailable
from ledger.sessions import report as gate
from ledger.sessions.report import AssertResult, StampVerification


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``assert_compliance``: the Compliance Stamp, PASS only after a search in the session."""
    ledger, actor, session_of = tools.ledger, tools.actor, tools.session_of

    @mcp.tool(title="Request the Compliance Stamp", annotations=writes())
    def assert_compliance(
        ctx: Context,
        session_id: Annotated[str | None, SESSION_ID] = None,
        request_id: Annotated[str | None, REQUEST_ID] = None,
    ) -> AssertResult:
        """Request the Compliance Stamp. PASS only after a memory_search on this session; each search earns one.
        Send a request_id to retry safely: the same id gets the same answer and receipt."""
        try:
            who, sid = actor(ctx), session_of(session_id)
            return ledger_call(lambda: ledger.assert_compliance(who, sid, request_id))
        except ToolError as exc:
            if isinstance(exc.__cause__, StoreBusy):
                raise ToolError(f"{gate.MSG_STORE_BUSY} ({exc.__cause__.message})") from exc
            if isinstance(exc.__cause__, StoreUnavailable):
                raise ToolError(f"{gate.MSG_STORE_DOWN} ({exc.__cause__.message})") from exc
            raise


def register_verify(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``verify_stamp``: is a stamp receipt genuine?"""
    ledger = tools.ledger

    @mcp.tool(title="Verify a stamp receipt", annotations=READS)
    def verify_stamp(receipt: Annotated[str, RECEIPT]) -> StampVerification:
        """Check a stamp receipt: is it genuine, and which ledger event does it point at?"""
        return ledger_call(lambda: ledger.verify_stamp(receipt))
