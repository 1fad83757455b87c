"""MCP tools of the shared agent brain (seed 003 Layer B): ``query_brain`` and ``contribute_to_brain``.

The agent is the transport's (``--agent`` on stdio, the API key over HTTP), never a tool argument.
``contribute_to_brain`` answers as the seed's wrapper does: its text opens with "Thought stored successfully." or
"Not stored (too short or interrogative). Still retrieved related thoughts:", then the answer as JSON; the same
answer (with that line as ``message``) is the structured content.
"""

from __future__ import annotations

import json
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent

from api.fields import BRAIN_CONTEXT, QUESTION, STATEMENT
from api.mcp.context import ToolContext, ledger_call
from api.mcp.hints import writes
from api.mcp.params import BRAIN_SESSION_ID
from ledger.brain.report import BrainAnswer


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``query_brain`` and ``contribute_to_brain`` to the MCP server."""

    @mcp.tool(title="Query the shared brain", annotations=writes())
    def query_brain(
        ctx: Context,
        prompt: Annotated[str, QUESTION],
        context: Annotated[str | None, BRAIN_CONTEXT] = None,
        session_id: Annotated[str | None, BRAIN_SESSION_ID] = None,
    ) -> BrainAnswer:
        """Query the shared agent brain: related thoughts with their contributors (sources) and the
        well-travelled ones (highways). The retrieval is recorded in your ledger session (trace.session_id, the
        value for a task's memory_query_session). A declarative statement of more than 50 characters is also
        stored as a thought (trace.thought_id); each source shows its contributor and its provenance (context)."""
        who, sid = tools.actor(ctx), tools.optional_session(session_id)
        return ledger_call(lambda: tools.ledger.ask_brain(who, prompt, context=context, session_id=sid))

    @mcp.tool(title="Contribute to the shared brain", annotations=writes())
    def contribute_to_brain(
        ctx: Context,
        prompt: Annotated[str, STATEMENT],
        context: Annotated[str | None, BRAIN_CONTEXT] = None,
        session_id: Annotated[str | None, BRAIN_SESSION_ID] = None,
    ) -> Annotated[CallToolResult, BrainAnswer]:
        """Contribute a learning to the shared agent brain as a thought (context: stored as its provenance);
        related thoughts are retrieved either way. trace.thought_id is the value for a task's
        memory_contribution_id. A question, a follow-up or a prompt of 50 characters or fewer is not stored
        (message: 'Not stored (too short or interrogative). Still retrieved related thoughts:'); a statement
        already there is not stored again (trace.contribution 'duplicate', thought_id the existing one)."""
        who, sid = tools.actor(ctx), tools.optional_session(session_id)
        answer = ledger_call(
            lambda: tools.ledger.ask_brain(who, prompt, context=context, session_id=sid, contribute=True)
        )
        data = answer.model_dump(mode="json")
        text = f"{answer.message}\n\n{json.dumps(data, indent=2, ensure_ascii=False)}"
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)
