"""MCP tools over memory: remember, search, recall, curate, outcome, supersede, forget (:func:`register`) and setup
(:func:`register_setup`, listed after the anchor tool, where clients have always seen it)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer

from api.fields import (
    BLOCK_ID,
    BLOCK_IDS,
    CATEGORY,
    CONTENT,
    FORGET_REASON,
    FRAME,
    IDENTITY,
    LIMIT,
    NEW_CONTENT,
    NOTE,
    QUERY,
    RECALL_QUERY,
    SEED,
    SIGNAL,
    TAGS,
    TOP_K,
    VALUES,
)
from api.mcp.context import ToolContext, ledger_call
from api.mcp.hints import writes
from api.mcp.params import OPTIONAL_SESSION_ID, SESSION_ID
from ledger.memory.report import (
    CurateResult,
    ForgetResult,
    MemorySetupResult,
    OutcomeResult,
    RecallResult,
    RememberResult,
    SupersedeResult,
)
from ledger.sessions.report import SearchResult


def register(mcp: MCPServer, tools: ToolContext) -> None:
    """Add the memory loop's tools: remember, search, recall, curate, outcome, supersede and forget."""
    ledger, actor, session_of, optional_session = tools.ledger, tools.actor, tools.session_of, tools.optional_session

    @mcp.tool(title="Remember", annotations=writes(idempotent=True))
    def memory_remember(
        ctx: Context,
        content: Annotated[str, CONTENT],
        tags: Annotated[list[str] | None, TAGS] = None,
        session_id: Annotated[str | None, SESSION_ID] = None,
        category: Annotated[str | None, CATEGORY] = None,
    ) -> RememberResult:
        """Store a memory block. Content that normalises to an existing block is rejected as a duplicate. The tag
        self/constitutional is for administrators only (a person amends the constitution)."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.remember(who, content, tags or [], sid, category))

    @mcp.tool(title="Search memory", annotations=writes())
    def memory_search(
        ctx: Context,
        query: Annotated[str, QUERY],
        session_id: Annotated[str | None, SESSION_ID] = None,
        limit: Annotated[int, LIMIT] = 10,
    ) -> SearchResult:
        """Search memory (BM25-ranked). Each search issues your session's one-time compliance token."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(lambda: ledger.search(who, sid, query, limit))

    @mcp.tool(title="Recall memory", annotations=writes())
    def memory_recall(
        ctx: Context,
        query: Annotated[str | None, RECALL_QUERY] = None,
        frame: Annotated[Literal["self", "attention", "task"], FRAME] = "attention",
        top_k: Annotated[int, TOP_K] = 5,
        session_id: Annotated[str | None, OPTIONAL_SESSION_ID] = None,
    ) -> RecallResult:
        """Recall memory into a frame as text ready to read, with each block's score breakdown. The recall is
        recorded and reinforces what it returns; with a query in a session it also issues the session's
        one-time compliance token, as memory_search does."""
        who, sid = actor(ctx), optional_session(session_id)
        return ledger_call(lambda: ledger.recall(who, query, frame, top_k, sid))

    @mcp.tool(title="Curate memory", annotations=writes(destructive=True))
    def memory_curate(ctx: Context) -> CurateResult:
        """Curate memory now: archive blocks that have decayed, prune weak links, reinforce the constitution and
        the strongest blocks. It also runs by itself every 40 active hours."""
        who = actor(ctx)
        return ledger_call(lambda: ledger.curate(who))

    @mcp.tool(title="Report a memory outcome", annotations=writes())
    def memory_outcome(
        ctx: Context,
        block_ids: Annotated[list[str], BLOCK_IDS],
        signal: Annotated[float, SIGNAL],
        note: Annotated[str | None, NOTE] = None,
        session_id: Annotated[str | None, OPTIONAL_SESSION_ID] = None,
    ) -> OutcomeResult:
        """Record how useful recalled blocks proved (1.0 helped ... 0.0 misled): it updates their confidence, and a
        signal below 0.2 makes them decay twice as fast."""
        who, sid = actor(ctx), optional_session(session_id)
        return ledger_call(lambda: ledger.outcome(who, block_ids, signal, sid, note))

    @mcp.tool(title="Supersede a memory", annotations=writes(destructive=True))
    def memory_supersede(
        ctx: Context,
        block_id: Annotated[str, BLOCK_ID],
        content: Annotated[str, NEW_CONTENT],
        session_id: Annotated[str | None, OPTIONAL_SESSION_ID] = None,
    ) -> SupersedeResult:
        """Replace a block that is out of date or wrong with a corrected text: search and recall find the new block
        from now on; the old one keeps its history. A constitutional block only an administrator replaces."""
        who, sid = actor(ctx), optional_session(session_id)
        return ledger_call(lambda: ledger.supersede(who, block_id, content, sid))

    @mcp.tool(title="Forget a memory", annotations=writes(destructive=True))
    def memory_forget(
        ctx: Context,
        block_id: Annotated[str, BLOCK_ID],
        reason: Annotated[str, FORGET_REASON],
    ) -> ForgetResult:
        """Administrators only: take a block out of search, recall and every memory read; the log keeps an event
        saying who forgot it and why."""
        who = actor(ctx)
        return ledger_call(lambda: ledger.forget(who, block_id, reason))


def register_setup(mcp: MCPServer, tools: ToolContext) -> None:
    """Add ``memory_setup``: the constitution, an identity and values, stored once."""
    ledger, actor, session_of = tools.ledger, tools.actor, tools.session_of

    @mcp.tool(title="Set up memory", annotations=writes(idempotent=True))
    def memory_setup(
        ctx: Context,
        identity: Annotated[str | None, IDENTITY] = None,
        values: Annotated[list[str] | None, VALUES] = None,
        seed: Annotated[bool, SEED] = True,
        session_id: Annotated[str | None, SESSION_ID] = None,
    ) -> MemorySetupResult:
        """Set up memory: the 10 constitutional blocks (seed=True), an identity (self/context) and values
        (self/value). Running it again creates no duplicates."""
        who, sid = actor(ctx), session_of(session_id)
        return ledger_call(
            lambda: ledger.setup_memory(who, identity=identity, values=values or [], seed=seed, session_id=sid)
        )
