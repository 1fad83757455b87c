"""MCP adapter: tools and prompts that translate calls into service commands and render the results.

Identity comes from the transport, never from a tool argument: stdio and in-memory servers are built for one
agent (``--agent``) and open a default session for it at start; over HTTP the agent comes from the API key
(or the configured local agent when no keys exist) and ``session_id`` is required.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, Field, model_validator

from api.auth import identity_from_headers, proven_for_request
from ledger.anchor.report import AnchorResult
from ledger.core.errors import LedgerError, SessionLocked, StoreBusy, StoreUnavailable
from ledger.core.text import HINT as TEXT_HINT
from ledger.core.text import find_bad_text
from ledger.memory.recall import MAX_TOP_K
from ledger.memory.report import CurateResult, MemorySetupResult, OutcomeResult, RecallResult, RememberResult
from ledger.service import Actor, Ledger
from ledger.sessions import gate
from ledger.sessions.report import AssertResult, SearchResult, SessionInfo, StampVerification

T = TypeVar("T")

INSTRUCTIONS = (
    "Compliance Ledger: every action you take here is recorded in a hash-chained audit log. "
    "Search memory with memory_search (or memory_recall with a query) before you finish a task, then call "
    "assert_compliance to obtain the "
    "Compliance Stamp and end your response with it. " + gate.GROUNDING_INSTRUCTION
)
MEMORY_GUIDE = """Memory in the Compliance Ledger

Setup (once; safe to repeat): call `memory_setup` (or run `compliance-ledger init`). It stores the 10
constitutional blocks (tag self/constitutional: they never fade), plus your identity (self/context) and
values (self/value) if you pass them. Nothing is stored twice.

The loop, every task:
1. Recall before you act: `memory_recall` with a query about the task (or `memory_search` for plain ranked
   hits). Read what comes back.
2. Act, citing what you used.
3. Remember what you learned: `memory_remember` with one declarative statement per block and tags such as
   project/<area>. Same content twice is rejected as a duplicate.
4. Tell the ledger how the memories you used worked out: `memory_outcome` with their block ids.
5. Before you finish: `assert_compliance`, and end your response with the stamp it returns.

Frames (`memory_recall` frame=...):
- self: who you are — your identity and values (blocks tagged self/...); the constitutional blocks are
  guaranteed a place. Budget 600 tokens.
- attention (default): the most relevant knowledge for the query, or the strongest blocks without one.
  Budget 2000 tokens.
- task: what you are working towards — blocks tagged self/goal are guaranteed a place, then context.
  Budget 800 tokens.
`top_k` (1-50, default 5) caps the blocks; the frame's token budget caps the text. A recall with a query in
your session also earns the session's compliance token, exactly as `memory_search` does (a recall without a
query, or without a session, earns none). Every recall is recorded and reinforces the blocks it returns, so
what you use stays fresh.

Decay and curation: blocks fade with active hours (hours in which some session was active), not calendar
time, so a week away forgets nothing. How fast depends on the tier, which follows from the tags and the
category: constitutional blocks are permanent; `category` (one lower-case word, default 'knowledge')
'observation' decays fastest. `memory_curate` archives blocks that have decayed, prunes weak links between
blocks, and reinforces the constitution and the strongest blocks; it also runs by itself every 40 active
hours. Archived blocks are kept in the ledger but no longer recalled.

Outcomes (`memory_outcome`): after using recalled blocks, send their ids with a signal from 1.0 (they
helped) through 0.5 (neutral) to 0.0 (they misled you). Each outcome moves the blocks' confidence, which weighs
in every recall; a signal below 0.2 also makes the blocks decay twice as fast.

Every call is an event in a hash-chained ledger; your recalls, searches, stamps and memories are auditable."""
CATEGORY_HELP = "one lower-case word, default 'knowledge'; 'observation' decays fastest"
_REQUEST_ID = gate.REQUEST_ID_HELP
_SESSION_HELP = "call clock_in first and pass the session_id it returns"


def _ledger_call(fn: Callable[[], T]) -> T:
    """Run a service call, turning the ledger's errors into tool errors that say what to send instead."""
    try:
        return fn()
    except LedgerError as exc:
        raise ToolError(f"{exc.message}. {exc.hint}".strip() if exc.hint else exc.message) from exc


def _refuse_unstorable_text(data: Any) -> Any:
    """Before a tool's arguments are validated: a NUL or lone surrogate in any of them is an invalid argument
    named in the tool error (the SDK reports a failed argument validation as a tool error)."""
    found = find_bad_text(data)
    if found is not None:
        raise ValueError(f"{found.message('argument')}; {TEXT_HINT}")
    return data


def _forbid_unknown_arguments(server: MCPServer) -> None:
    """Make every tool reject arguments it does not declare (the SDK ignores them by default) and arguments
    holding text the ledger cannot store."""
    for tool in server._tool_manager.list_tools():
        base = tool.fn_metadata.arg_model
        strict = type(
            base.__name__,
            (base,),
            {
                # Built on the tool's first call, not at start-up: 21 validators cost ~0.1 s before `initialize`.
                "model_config": ConfigDict(**{**base.model_config, "extra": "forbid", "defer_build": True}),
                "__module__": base.__module__,
                "refuse_unstorable_text": model_validator(mode="before")(_refuse_unstorable_text),
            },
        )
        tool.fn_metadata.arg_model = strict
        tool.parameters["additionalProperties"] = False


@dataclass(frozen=True)
class ToolContext:
    """What a module that adds tools to the server needs: the service, and who is calling in which session."""

    ledger: Ledger
    actor: Callable[[Context], Actor]
    session_of: Callable[[str | None], str]  # the given or default session; a tool error when there is none
    optional_session: Callable[[str | None], str | None]  # the given or default session, else None


Extension = Callable[[MCPServer, ToolContext], None]


def build_mcp(
    ledger: Ledger,
    *,
    extensions: Sequence[Extension] | None = None,
    agent: str | None = None,
    default_role: str = "agent",
    default_working_dir: str | None = None,
    open_default_session: bool = False,
    fallback_agent: str = "local",
) -> MCPServer:
    """Build the MCP server.

    With ``agent`` set (stdio, in-memory), every call acts as that agent and, if ``open_default_session``,
    a session is opened at start so tools may omit ``session_id``. Without it (HTTP), the agent is resolved
    from each request's API key.
    """
    default: dict[str, str | None] = {"session_id": None, "refused": None}

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        if open_default_session and agent:
            try:
                info = ledger.clock_in(Actor(agent, "mcp"), default_role, default_working_dir)
                default["session_id"] = info.session_id
            except SessionLocked as exc:
                # The agent is locked out (human intervention required): serve anyway, so its tools can say so.
                default["refused"] = f"{exc.message}. {exc.hint}"
        try:
            yield {}
        finally:
            sid = default["session_id"]
            if sid and agent:
                default["session_id"] = None
                # The agent may have clocked the session out itself, or the store may be gone.
                with contextlib.suppress(LedgerError):
                    ledger.clock_out(Actor(agent, "mcp"), sid)

    mcp = MCPServer("compliance-ledger", instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING")

    def actor(ctx: Context) -> Actor:
        if agent:
            return Actor(agent, "mcp")
        proven = proven_for_request(getattr(ctx.request_context.request, "scope", None))
        if proven is not None:  # the HTTP front end resolved this very request's key a moment ago
            return proven.actor("mcp")
        headers: Mapping[str, str] = ctx.headers or {}
        # Without keys an MCP caller is an agent (never the administrator); with one, the key's agent and role.
        who = _ledger_call(lambda: identity_from_headers(ledger, headers, fallback_agent, fallback_role="agent"))
        return who.actor("mcp")

    def session_of(session_id: str | None) -> str:
        sid = session_id or default["session_id"]
        if not sid:
            raise ToolError(default["refused"] or f"session_id is required: {_SESSION_HELP}")
        return sid

    def optional_session(session_id: str | None) -> str | None:
        """The given session, else the default one (stdio); over HTTP ``None`` when omitted."""
        return session_id or default["session_id"]

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def clock_in(ctx: Context, role: str, working_dir: str | None = None, focus: str | None = None) -> SessionInfo:
        """Open a ledger session for your work; pass its session_id to the other tools."""
        who = actor(ctx)
        return _ledger_call(lambda: ledger.clock_in(who, role, working_dir, focus))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def clock_out(ctx: Context, session_id: str | None = None) -> SessionInfo:
        """Close a session; it accepts no further actions."""
        who, sid = actor(ctx), session_of(session_id)
        return _ledger_call(lambda: ledger.clock_out(who, sid))

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
        return _ledger_call(lambda: ledger.remember(who, content, tags or [], sid, category))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def memory_search(ctx: Context, query: str, session_id: str | None = None, limit: int = 10) -> SearchResult:
        """Search memory (BM25-ranked). Each search issues your session's one-time compliance token."""
        who, sid = actor(ctx), session_of(session_id)
        return _ledger_call(lambda: ledger.search(who, sid, query, limit))

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
        return _ledger_call(lambda: ledger.recall(who, query, frame, top_k, sid))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def memory_curate(ctx: Context) -> CurateResult:
        """Curate memory now: archive blocks that have decayed, prune weak links, reinforce the constitution and
        the strongest blocks. It also runs by itself every 40 active hours."""
        who = actor(ctx)
        return _ledger_call(lambda: ledger.curate(who))

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
        return _ledger_call(lambda: ledger.outcome(who, block_ids, signal, sid, note))

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def assert_compliance(
        ctx: Context,
        session_id: str | None = None,
        request_id: Annotated[
            str | None, Field(description=f"optional id of this request, {gate.REQUEST_ID_HELP}")
        ] = None,
    ) -> AssertResult:
        """Request the Compliance Stamp. PASS only after a memory_search on this session; each search earns one.
        Send a request_id to retry safely: the same id gets the same answer and receipt."""
        try:
            who, sid = actor(ctx), session_of(session_id)
            return _ledger_call(lambda: ledger.assert_compliance(who, sid, request_id))
        except ToolError as exc:
            if isinstance(exc.__cause__, StoreBusy):
                raise ToolError(f"{gate.MSG_STORE_BUSY} ({exc.__cause__.message})") from exc
            if isinstance(exc.__cause__, StoreUnavailable):
                raise ToolError(f"{gate.MSG_STORE_DOWN} ({exc.__cause__.message})") from exc
            raise

    @mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
    def odyssean_anchor(
        ctx: Context, role: str, proof_candidate: str, session_id: str | None = None, tier: str = "default"
    ) -> AnchorResult:
        """Submit an Odyssean Anchor proof (OA5). The server validates it against the real project state,
        counts your attempts, and locks the session after 3 failures."""
        who, sid = actor(ctx), session_of(session_id)
        return _ledger_call(lambda: ledger.anchor(who, sid, role, proof_candidate, tier))

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
        return _ledger_call(
            lambda: ledger.setup_memory(who, identity=identity, values=values or [], seed=seed, session_id=sid)
        )

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
    def verify_stamp(receipt: str) -> StampVerification:
        """Check a stamp receipt: is it genuine, and which ledger event does it point at?"""
        return _ledger_call(lambda: ledger.verify_stamp(receipt))

    @mcp.prompt()
    def compliance_grounding() -> str:
        """The grounding instruction: end every response with a stamp obtained from assert_compliance."""
        return (
            f"{gate.GROUNDING_INSTRUCTION}\n\n"
            "1. Before you finish, call `memory_search` with what your task is about.\n"
            "2. Call `assert_compliance`. If it answers FAIL (⛔ GATE CLOSED), do what it says and call it again.\n"
            "3. End your response with the exact `stamp` text it returned on PASS. Never write a stamp yourself: "
            "every stamp carries a receipt that `verify_stamp` checks against the ledger."
        )

    @mcp.prompt()
    def memory_guide() -> str:
        """How to set up memory and run the cognitive loop."""
        return MEMORY_GUIDE

    tools = ToolContext(ledger, actor, session_of, optional_session)
    if extensions is None:
        from api import brain, enforcement, tasks  # they import this module for ToolContext

        extensions = (brain.register_tools, tasks.register_tools, enforcement.register_tools)
    for register in extensions:
        register(mcp, tools)
    _forbid_unknown_arguments(mcp)
    return mcp
