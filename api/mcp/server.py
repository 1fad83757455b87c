"""Build the MCP server: who is calling (the transport's identity), the default session, and every capability's
tools and prompts, registered in the order clients list them.

Identity comes from the transport, never from a tool argument: stdio and in-memory servers are built for one
agent (``--agent``) and open a default session for it at start; over HTTP the agent comes from the API key
(or the configured local agent when no keys exist) and ``session_id`` is required.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from api.auth import identity_from_headers, proven_for_request
from api.mcp import anchor, brain, enforcement, gate, memory, prompts, resources, sessions, tasks
from api.mcp.base import LedgerServer
from api.mcp.context import SESSION_HELP, Extension, ToolContext, forbid_unknown_arguments, ledger_call
from api.mcp.observe import ToolObserver
from api.mcp.opening import LedgerOpening
from api.ratelimit import RateLimiter
from api.version import package_version
from ledger.core.errors import LedgerError, SessionLocked

if TYPE_CHECKING:  # the service loads the store (SQLAlchemy); stdio answers ``initialize`` before it opens it
    from ledger.service import Actor, Ledger

# Added after the core tools unless the caller names its own: the brain, workflow tasks, managed tasks.
EXTENSIONS: tuple[Extension, ...] = (brain.register, tasks.register, enforcement.register)


def build_mcp(
    ledger: Ledger | LedgerOpening,
    *,
    extensions: Sequence[Extension] | None = None,
    agent: str | None = None,
    default_role: str = "agent",
    default_working_dir: str | None = None,
    open_default_session: bool = False,
    open_in_background: bool = False,
    fallback_agent: str = "local",
    limiter: RateLimiter | None = None,
    transport: str | None = None,
    checkpoint_file: Path | None = None,
) -> MCPServer:
    """Build the MCP server.

    With ``agent`` set (stdio, in-memory), every call acts as that agent and, if ``open_default_session``,
    a session is opened at start so tools may omit ``session_id`` (with ``open_in_background``, beside the
    handshake: the tools that use it wait for it, and say why when it could not be opened). Without it (HTTP), the
    agent is resolved from each request's API key.

    ``ledger`` may be a :class:`~api.mcp.opening.LedgerOpening` (``compliance-ledger mcp``): the server answers
    ``initialize`` before the ledger is opened, opens it once the handshake is answered, and every use waits for it.

    Every tool call is logged and, with a ``limiter``, rate-limited (:mod:`api.mcp.observe`); ``transport`` names
    it in the log (default: ``memory`` with ``agent`` set, else ``http``). ``checkpoint_file`` is where the latest
    checkpoint resource reads from.
    """
    pending = ledger if isinstance(ledger, LedgerOpening) else None
    service = ledger.ledger if isinstance(ledger, LedgerOpening) else ledger
    default: dict[str, str | None] = {"session_id": None, "refused": None}
    opening: list[threading.Thread] = []  # the default session's clock-in, when it runs beside the handshake

    def actor_of(name: str) -> Actor:
        from ledger.service import Actor  # loaded by then: the ledger is open, or opening for this call

        return Actor(name, "mcp")

    def open_default() -> None:
        assert agent is not None
        try:
            info = service.clock_in(actor_of(agent), default_role, default_working_dir)
            default["session_id"] = info.session_id
        except SessionLocked as exc:
            # The agent is locked out (human intervention required): serve anyway, so its tools can say so.
            default["refused"] = f"{exc.message}. {exc.hint}"
        except LedgerError as exc:
            if not opening:
                raise
            # Beside the handshake there is no start to fail: every call that needs the session says why (closed).
            default["refused"] = f"the default session could not be opened: {exc.message}. {exc.hint}"

    def opened() -> None:
        """Wait for the default session's clock-in, when it runs beside the handshake."""
        if opening:
            opening[0].join()

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        if pending is not None:
            pending.start()
        if open_default_session and agent:
            if open_in_background:
                # ``initialize`` needs no session: answer it while the clock-in runs (its credential scan loads
                # detect-secrets, ~0.1 s); every tool that needs the session waits for it first.
                opening.append(threading.Thread(target=open_default, name="clock-in", daemon=True))
                opening[0].start()
            else:
                open_default()
        try:
            yield {}
        finally:
            if pending is not None:
                pending.go()  # the client left: the ledger still opens, and the default session still closes
            opened()
            sid = default["session_id"]
            if sid and agent:
                default["session_id"] = None
                # The agent may have clocked the session out itself, or the store may be gone.
                with contextlib.suppress(LedgerError):
                    service.clock_out(actor_of(agent), sid)

    mcp = LedgerServer(
        "compliance-ledger",
        title="Compliance Ledger",
        version=package_version(),
        instructions=prompts.INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
    )
    kind = transport or ("memory" if agent else "http")
    if pending is not None:
        mcp.middleware.append(pending.observe)
    mcp.middleware.append(ToolObserver(transport=kind, agent=agent, fallback_agent=fallback_agent, limiter=limiter))

    def actor(ctx: Context) -> Actor:
        if agent:
            return actor_of(agent)
        proven = proven_for_request(getattr(ctx.request_context.request, "scope", None))
        if proven is not None:  # the HTTP front end resolved this very request's key a moment ago
            return proven.actor("mcp")
        headers: Mapping[str, str] = ctx.headers or {}
        # Without keys an MCP caller is an agent (never the administrator); with one, the key's agent and role.
        who = ledger_call(lambda: identity_from_headers(service, headers, fallback_agent, fallback_role="agent"))
        return who.actor("mcp")

    def session_of(session_id: str | None) -> str:
        if not session_id:
            opened()
        sid = session_id or default["session_id"]
        if not sid:
            raise ToolError(default["refused"] or f"session_id is required: {SESSION_HELP}")
        return sid

    def optional_session(session_id: str | None) -> str | None:
        """The given session, else the default one (stdio); over HTTP ``None`` when omitted."""
        if not session_id:
            opened()
        return session_id or default["session_id"]

    tools = ToolContext(service, actor, session_of, optional_session, pending.workflow if pending else None)
    # The order clients have always listed the core tools in (tests/golden/surface.json).
    sessions.register(mcp, tools)
    memory.register(mcp, tools)
    gate.register(mcp, tools)
    anchor.register(mcp, tools)
    memory.register_setup(mcp, tools)
    gate.register_verify(mcp, tools)
    prompts.register(mcp)
    resources.register(mcp, tools, checkpoint_file)
    for register in EXTENSIONS if extensions is None else extensions:
        register(mcp, tools)
    forbid_unknown_arguments(mcp, answered_by_tool=enforcement.MANAGED_TOOLS)
    return mcp
