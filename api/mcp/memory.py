"""MCP tools over memory: remember, search, recall, curate, outcome (:func:`register`) and setup
(:func:`register_setup`, listed after the anchor tool, where clients have always seen it)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from api.mcp.context import ToolContext, ledger_call
from ledger.memory.recall import MAX_TOP_K
from ledger.memory.report import CurateResult, MemorySetupResult, OutcomeResult, RecallResult, RememberResult
from ledger.sessions.report import SearchResult

CATEGORY_HELP = "one lower-case word, default 'knowledge'; 'observation' decays fastest"


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add the memory loop's tools: remember, search, recall, curate and outcome."""
    ledger, actor, session_of, optional_session = tools.ledger, tools.actor, tools.session_of, tools.optional_session

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))
    def memory_remember(
        ctx: Context,
        content: str,
        tags: list[str] | None = None,
        session_id: str | None = None,
        category: Annotated[str | None, Field(description=CATEGORY_HELP)] = None,
    ) -> RememberResult:
        """Store a memory block. Content that normalises to an existing block is rejected as a duplicate."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.remember(who, content, tags or [], sid, category))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def memory_search(ctx: Context, query: str, session_id: str | None = None, limit: int = 10) -> SearchResult:
        """Search memory (BM25-ranked). Each search issues your session's one-time compliance token."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.search(who, sid, query, limit))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def memory_recall(
        ctx: Context,
        query: Annotated[
            str | None, Field(description="what the task is about; omit to get the strongest blocks")
        ] = None,
        frame: Annotated[
            Literal["self", "attention", "task"],
            Field(description="self: identity and values; attention: relevant knowledge; task: goals and context"),
        ] = "attention",
        top_k: Annotated[int, Field(description=f"how many blocks at most, 1..{MAX_TOP_K}")] = 5,
        session_id: str | None = None,
    ) -> RecallResult:
        """Recall memory into a frame as text ready to read, with each block's score breakdown. The recall is
        recorded and reinforces what it returns; with a query in a session it also issues the session's
        one-time compliance token, as memory_search does."""
        who, sid = actor(ctx), optional_session(session_id)
        return ledger_call(lambda: ledger.recall(who, query, frame, top_k, sid))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def memory_curate(ctx: Context) -> CurateResult:
        """Curate memory now: archive blocks that have decayed, prune weak links, reinforce the constitution and
        the strongest blocks. It also runs by itself every 40 active hours."""
        who = actor(ctx)
        return ledger_call(lambda: ledger.curate(who))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def memory_outcome(
        ctx: Context,
        block_ids: Annotated[list[str], Field(description="ids of the blocks the outcome is about")],
        signal: Annotated[float, Field(description="1.0 the memories helped ... 0.0 they misled")],
        note: str | None = None,
        session_id: str | None = None,
    ) -> OutcomeResult:
        """Record how useful recalled blocks proved (1.0 helped ... 0.0 misled): it updates their confidence, and a
        signal below 0.2 makes them decay twice as fast."""
        who, sid = actor(ctx), optional_session(session_id)
        return ledger_call(lambda: ledger.outcome(who, block_ids, signal, sid, note))


def register_setup(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``memory_setup``: the constitution, an identity and values, stored once."""
    ledger, actor, session_of = tools.ledger, tools.actor, tools.session_of

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))
    def memory_setup(
        ctx: Context,
        identity: str | None = None,
        values: list[str] | None = None,
        seed: bool = True,
        session_id: str | None = None,
    ) -> MemorySetupResult:
        """Set up memory: the 10 constitutional blocks (seed=True), an identity (self/context) and values
        (self/value). Running it again creates no duplicates."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(
            lambda: ledger.setup_memory(who, identity=identity, values=values or [], seed=seed, session_id=sid)
        )
