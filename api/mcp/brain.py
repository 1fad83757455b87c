"""MCP tools of the shared agent brain (seed 003 Layer B): ``query_brain`` and ``contribute_to_brain``.

The agent is the transport's (``--agent`` on stdio, the API key over HTTP), never a tool argument.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from api.mcp.context import ToolContext, ledger_call
from ledger.brain.decisions import MIN_CONTRIBUTION_CHARS
from ledger.brain.report import BrainAnswer

CONTEXT_HELP = "what you are working on: steers retrieval (recorded with the search)"
SESSION_HELP = (
    "a session_id from an earlier answer (trace.session_id) to continue the conversation; "
    "omitted: your default session over stdio, else a new session is opened"
)


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``query_brain`` and ``contribute_to_brain`` to the MCP server."""

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def query_brain(
        ctx: Context,
        prompt: Annotated[str, Field(description="a question or topic in natural language")],
        context: Annotated[str | None, Field(description=CONTEXT_HELP)] = None,
        session_id: Annotated[str | None, Field(description=SESSION_HELP)] = None,
    ) -> BrainAnswer:
        """Query the shared agent brain: related thoughts with their contributors (sources) and the
        well-travelled ones (highways). The retrieval is recorded in your ledger session (trace.session_id, the
        value for a task's memory_query_session). A declarative statement of more than 50 characters is also
        stored as a thought (trace.thought_id)."""
        who, sid = tools.actor(ctx), tools.optional_session(session_id)
        return ledger_call(lambda: tools.ledger.brain.ask(who, prompt, context=context, session_id=sid))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def contribute_to_brain(
        ctx: Context,
        prompt: Annotated[
            str,
            Field(
                description=f"one declarative statement of more than {MIN_CONTRIBUTION_CHARS} characters "
                "(not a question or a follow-up)"
            ),
        ],
        context: Annotated[str | None, Field(description=CONTEXT_HELP)] = None,
        session_id: Annotated[str | None, Field(description=SESSION_HELP)] = None,
    ) -> BrainAnswer:
        """Contribute a learning to the shared agent brain as a thought; related thoughts are retrieved too.
        trace.thought_id is the value for a task's memory_contribution_id (trace.contribution is 'duplicate'
        when the statement was already there: nothing new is stored). A question, a follow-up or a prompt of
        50 characters or fewer is refused."""
        who, sid = tools.actor(ctx), tools.optional_session(session_id)
        return ledger_call(
            lambda: tools.ledger.brain.ask(who, prompt, context=context, session_id=sid, contribute=True)
        )
