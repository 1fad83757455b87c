"""REST adapter (FastAPI) with the MCP Streamable HTTP endpoint mounted at ``/mcp``.

Routes only translate: parse the request, resolve the caller from the credential, call the service, render.
Errors are always ``{"error": {"code", "message", "hint"}}`` with the right status.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, FastAPI, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import SCOPE_KEY, identify, identify_provisionally, identity_from_headers, key_from_headers
from api.mcp_server import build_mcp
from api.params import AsOf, Position
from api.render import event_dict
from api.responses import ERROR_RESPONSES
from api.settings import Settings
from ledger.anchor.report import AnchorResult
from ledger.core.errors import InvalidInput, LedgerError, StoreBusy, StoreUnavailable
from ledger.core.limits import MAX_INT64
from ledger.core.text import HINT as TEXT_HINT
from ledger.core.text import find_bad_text, printable
from ledger.keys import access
from ledger.memory import decisions as memory
from ledger.memory.recall import MAX_TOP_K
from ledger.memory.report import BlockDetail, BlockList, CurateResult, OutcomeResult, RecallResult, RememberResult
from ledger.service import Actor, Ledger
from ledger.sessions import gate
from ledger.sessions.report import (
    AssertResult,
    ComplianceReport,
    SearchResult,
    SessionInfo,
    SessionState,
    StampVerification,
)

MAX_EVENTS_PAGE = 1000
T = TypeVar("T")


def error_body(code: str, message: str, hint: str = "") -> dict[str, Any]:
    # An error may quote what the caller sent; a NUL or lone surrogate in it must not break the answer itself.
    return {"error": {"code": code, "message": printable(message), "hint": printable(hint)}}


async def refuse_unstorable_text(request: Request) -> None:
    """Every route's first dependency: a NUL or lone surrogate anywhere in the path, query or JSON body is a 422
    naming the field, before the caller is resolved or anything is recorded."""
    for where, params in (
        ("path parameter", request.path_params.items()),
        ("query parameter", request.query_params.multi_items()),
    ):
        for name, value in params:
            found = find_bad_text({name: value})
            if found is not None:
                raise InvalidInput(found.message(where), TEXT_HINT)
    if not await request.body():
        return
    try:
        data = await request.json()  # parsed once: FastAPI's body parameter reads the same cached value
    except ValueError:
        return  # FastAPI answers malformed JSON itself
    found = find_bad_text(data)
    if found is not None:
        raise InvalidInput(found.message(), TEXT_HINT)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClockIn(_Body):
    role: str = Field(description="the agent's role, e.g. dev")
    working_dir: str | None = None
    focus: str | None = None


class Remember(_Body):
    content: str = Field(description=f"the memory text, at most {memory.MAX_CONTENT_CHARS} characters")
    tags: list[str] = Field(default_factory=list)
    session_id: str | None = None
    category: str | None = Field(
        None, description="one lower-case word, default 'knowledge'; 'observation' decays fastest"
    )


class Recall(_Body):
    query: str | None = Field(None, description="what the task is about; omit to get the strongest blocks")
    frame: Literal["self", "attention", "task"] = Field(
        "attention", description="self: identity and values; attention: relevant knowledge; task: goals and context"
    )
    top_k: int = Field(5, description=f"1..{MAX_TOP_K}")
    session_id: str | None = Field(
        None, description="with a query, the recall issues this session's compliance token; without, none"
    )


class Outcome(_Body):
    block_ids: list[str] = Field(description="ids of the blocks the outcome is about")
    signal: float = Field(description="1.0 the memories helped ... 0.0 they misled")
    note: str | None = None
    session_id: str | None = None


class Search(_Body):
    query: str
    session_id: str
    limit: int = Field(10, description=f"1..{memory.MAX_LIMIT}")


class AssertCompliance(_Body):
    session_id: str
    request_id: str | None = Field(None, description=f"optional id of this request, {gate.REQUEST_ID_HELP}")


class VerifyStamp(_Body):
    receipt: str


class Anchor(_Body):
    session_id: str
    role: str
    proof_candidate: str = Field(description="the whole ===ODYSSEAN_ANCHOR_PROOF::v5.0=== block")
    tier: str = Field("default", description="quick | default | deep")


class Unlock(_Body):
    reason: str = Field(description="why the session may try again (recorded in the ledger)")


class EventsPage(BaseModel):
    events: list[dict[str, Any]]
    next_after: int | None


class Health(BaseModel):
    status: Literal["ok", "busy", "unavailable"]
    database: str
    head_position: int | None = None
    index_skipped: list[int] = Field(
        default_factory=list, description="positions of events the search index could not hold and skipped"
    )


class _McpEndpoint:
    """Serve MCP at exactly ``/mcp`` (no redirect) and refuse unknown API keys before MCP sees them; the identity
    proved here travels with the request to the tool it calls (``api.auth.SCOPE_KEY``), read once."""

    def __init__(self, app: ASGIApp, ledger: Ledger, fallback_agent: str) -> None:
        self.app = app
        self.ledger = ledger
        self.fallback_agent = fallback_agent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (scope["path"] == "/mcp" or scope["path"].startswith("/mcp/")):
            if scope["path"] == "/mcp":
                scope = {**scope, "path": "/mcp/", "raw_path": b"/mcp/"}
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
            try:  # the key check reads the store: off the event loop, like every other database call
                # Without keys an MCP caller is an agent (never the administrator).
                identity = await anyio.to_thread.run_sync(
                    lambda: identity_from_headers(self.ledger, headers, self.fallback_agent, fallback_role="agent")
                )
                scope = {**scope, SCOPE_KEY: identity}
            except StoreUnavailable:
                pass  # every tool needs the store and fails closed on its own, with guidance
            except LedgerError as exc:
                await error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)


READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Credential:
    """A request's caller as presented (its API key, or none), and whether the route changes state.

    A route does all its database work, the caller's identity included, in one worker thread with :meth:`run`:
    one thread hop per request and no database call on the event loop. :meth:`run` resolves the caller against
    the key ring caught up with the log in that thread, so a key revoked by any process a moment ago is refused
    there, before the route's work starts. The :data:`Caller` dependency has already refused, before the body is
    looked at, a caller that the process's cached key ring refuses (confirmed against the log first, as the cache
    may be behind): an unknown or revoked key is a 401 and an auditor on a route that writes a 403, whatever it
    sent.
    """

    ledger: Ledger
    api_key: str | None
    fallback_agent: str
    writes: bool

    def actor(self) -> Actor:
        """The caller now (reads the log: call it off the event loop); raises Unauthorized or Forbidden."""
        actor = identify(self.ledger, self.api_key, self.fallback_agent).actor("rest")
        if self.writes:  # a read-only role (auditor) is refused here, as the service would refuse its append
            access.require_writer(actor)
        return actor

    def refused_by_cache(self) -> bool:
        """Whether the key ring this process last read refuses the caller (no database read); ``True`` too when
        this process never read the ring, so that the answer comes from the log."""
        ring = self.ledger.known_key_ring()
        if ring is None:
            return True
        try:
            actor = identify_provisionally(ring, self.api_key, self.fallback_agent).actor("rest")
            if self.writes:
                access.require_writer(actor)
        except LedgerError:
            return True
        return False

    async def run(self, work: Callable[[Actor], T]) -> T:
        """Resolve the caller and do ``work`` as them, in one worker thread."""
        return await anyio.to_thread.run_sync(lambda: work(self.actor()))


async def _credential(request: Request, writes: bool) -> Credential:
    settings: Settings = request.app.state.settings
    caller = Credential(request.app.state.ledger, key_from_headers(request.headers), settings.agent, writes)
    if caller.refused_by_cache():
        await anyio.to_thread.run_sync(caller.actor)  # raises the 401/403 unless the log knows better
    return caller


async def current_caller(request: Request) -> Credential:
    """The caller of any route (the local agent, an administrator, while no API key exists); on a route that
    changes state (not GET) a read-only role (auditor) is refused."""
    return await _credential(request, request.method not in READING_METHODS)


async def reading_caller(request: Request) -> Credential:
    """The caller of a POST route that only reads (``POST /stamps/verify``): an auditor may call it."""
    return await _credential(request, False)


Caller = Annotated[Credential, Depends(current_caller)]
Reader = Annotated[Credential, Depends(reading_caller)]


def build_app(ledger: Ledger, settings: Settings) -> FastAPI:
    """Build the HTTP application: REST routes plus MCP (stateless JSON mode) at ``/mcp``."""
    mcp = build_mcp(ledger, fallback_agent=settings.agent)
    loopback = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*loopback, *settings.allowed_hosts],
        allowed_origins=[f"http://{h}" for h in [*loopback, *settings.allowed_hosts]],
    )
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/",
        stateless_http=True,
        json_response=True,
        transport_security=security,
        host=settings.host,
    )

    from api import checkpointing  # it uses this module's Caller

    writer = checkpointing.checkpointer(ledger, settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run(), checkpointing.running(writer):
            yield

    app = FastAPI(
        title="Compliance Ledger",
        version="0.1.0",
        description="Hash-chained audit ledger of AI agents' memory discipline. MCP at /mcp.",
        lifespan=lifespan,
        dependencies=[Depends(refuse_unstorable_text)],
        responses=ERROR_RESPONSES,
    )
    app.state.ledger = ledger
    app.state.settings = settings
    app.mount("/mcp", mcp_app)
    _install_error_handlers(app)

    health_threads: list[anyio.CapacityLimiter] = []  # made in the event loop, on the first call

    @app.get("/health", response_model=Health, tags=["ops"], responses={503: {"model": Health}})
    async def health() -> Any:
        """ok, busy (the write lock was held past the probe's wait: stamps get 503 now) or unavailable. The probe
        runs on threads and a connection pool of its own, so requests stuck on a held lock cannot starve it."""
        if not health_threads:
            health_threads.append(anyio.CapacityLimiter(2))
        try:
            probe = await anyio.to_thread.run_sync(ledger.store.probe, limiter=health_threads[0])
        except LedgerError as exc:
            down = Health(status="unavailable", database=exc.message).model_dump()
            return JSONResponse(down, status_code=503)
        if probe.busy:
            busy = Health(status="busy", database=ledger.store.dialect, head_position=probe.head_position)
            return JSONResponse(busy.model_dump(), status_code=503, headers={"Retry-After": str(StoreBusy.retry_after)})
        try:  # on the probe's own pool too, so a starved main pool cannot hang the report
            skips = await anyio.to_thread.run_sync(
                ledger.index.skips, ledger.store._probe_engine(), limiter=health_threads[0]
            )
        except LedgerError as exc:
            return JSONResponse(Health(status="unavailable", database=exc.message).model_dump(), status_code=503)
        return Health(
            status="ok",
            database=ledger.store.dialect,
            head_position=probe.head_position,
            index_skipped=[k.position for k in skips],
        )

    @app.post("/sessions", response_model=SessionInfo, status_code=status.HTTP_201_CREATED, tags=["sessions"])
    async def clock_in(body: ClockIn, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.clock_in(actor, body.role, body.working_dir, body.focus))

    @app.post("/sessions/{session_id}/clock-out", response_model=SessionInfo, tags=["sessions"])
    async def clock_out(session_id: str, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.clock_out(actor, session_id))

    @app.get("/sessions/{session_id}", response_model=SessionState, tags=["sessions"])
    async def session_state(
        session_id: str,
        who: Caller,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(
            lambda actor: ledger.session_state(session_id, as_of=as_of, position=position, viewer=actor)
        )

    @app.post(
        "/memory/blocks",
        response_model=RememberResult,
        tags=["memory"],
        responses={201: {"model": RememberResult, "description": "stored as a new block (200: a duplicate)"}},
    )
    async def remember(body: Remember, who: Caller) -> Any:
        result = await who.run(
            lambda actor: ledger.remember(actor, body.content, body.tags, body.session_id, body.category)
        )
        code = status.HTTP_201_CREATED if result.status == "created" else status.HTTP_200_OK
        return JSONResponse(result.model_dump(mode="json"), status_code=code)

    @app.get("/memory/blocks", response_model=BlockList, tags=["memory"])
    async def memory_blocks(
        who: Caller,
        tag: str | None = Query(None, description="a tag, or a prefix ending in '/' such as project/"),
        tier: str | None = Query(None, description="permanent | durable | standard | ephemeral"),
        archived: str | None = Query(None, description="false (default): live blocks; true: archived; any: both"),
        as_of: AsOf = None,
        position: Position = None,
        limit: int = Query(100, ge=1, le=memory.MAX_LIMIT),
    ) -> Any:
        return await who.run(
            lambda _actor: ledger.memory_blocks(
                tag=tag, tier=tier, archived=_archived(archived), as_of=as_of, position=position, limit=limit
            )
        )

    @app.get("/memory/blocks/{block_id}", response_model=BlockDetail, tags=["memory"])
    async def memory_block(
        block_id: str,
        who: Caller,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(lambda _actor: ledger.memory_block(block_id, as_of=as_of, position=position))

    @app.post("/memory/recall", response_model=RecallResult, tags=["memory"])
    async def recall(body: Recall, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.recall(actor, body.query, body.frame, body.top_k, body.session_id))

    @app.post("/memory/curate", response_model=CurateResult, tags=["memory"])
    async def curate(who: Caller) -> Any:
        return await who.run(ledger.curate)

    @app.post("/memory/outcome", response_model=OutcomeResult, tags=["memory"])
    async def outcome(body: Outcome, who: Caller) -> Any:
        return await who.run(
            lambda actor: ledger.outcome(actor, body.block_ids, body.signal, body.session_id, body.note)
        )

    @app.post("/memory/search", response_model=SearchResult, tags=["memory"])
    async def search(body: Search, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.search(actor, body.session_id, body.query, body.limit))

    @app.post("/compliance/assert", response_model=AssertResult, tags=["gate"])
    async def assert_compliance(body: AssertCompliance, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.assert_compliance(actor, body.session_id, body.request_id))

    @app.post("/stamps/verify", response_model=StampVerification, tags=["gate"])
    async def verify_stamp(body: VerifyStamp, who: Reader) -> Any:
        return await who.run(lambda _actor: ledger.verify_stamp(body.receipt))

    @app.post("/anchors", response_model=AnchorResult, tags=["anchor"])
    async def odyssean_anchor(body: Anchor, who: Caller) -> Any:
        return await who.run(
            lambda actor: ledger.anchor(actor, body.session_id, body.role, body.proof_candidate, body.tier)
        )

    @app.post("/admin/sessions/{session_id}/anchor/unlock", response_model=SessionState, tags=["admin"])
    async def unlock_anchor(session_id: str, body: Unlock, who: Caller) -> Any:
        return await who.run(lambda actor: ledger.unlock_anchor(actor, session_id, body.reason))

    @app.get("/events", response_model=EventsPage, tags=["audit"])
    async def events(
        who: Caller,
        stream: str | None = None,
        type: str | None = None,
        after: int = Query(0, ge=0, le=MAX_INT64),
        limit: int = Query(100, ge=1, le=MAX_EVENTS_PAGE),
    ) -> Any:
        """The log in position order; an agent key sees only the events recorded for it."""

        def page(actor: Actor) -> EventsPage:
            rows, next_after = ledger.events_page(actor, after=after, limit=limit, stream=stream, event_type=type)
            return EventsPage(events=[event_dict(r) for r in rows], next_after=next_after)

        return await who.run(page)

    @app.get("/reports/compliance", response_model=ComplianceReport, tags=["reports"])
    async def compliance_report(
        who: Caller,
        agent: str | None = None,
        as_of: AsOf = None,
        position: Position = None,
    ) -> Any:
        return await who.run(
            lambda actor: ledger.compliance_report(agent, as_of=as_of, position=position, viewer=actor)
        )

    from api import brain, keys, metrics, tasks  # their routes use this module's Caller
    from api.cors import ScopedCors

    app.include_router(tasks.router(), responses=ERROR_RESPONSES)
    # /metrics (its own registry) and /reports/enforcement
    app.include_router(metrics.router(ledger), responses=ERROR_RESPONSES)
    app.include_router(brain.router(), responses=ERROR_RESPONSES)
    app.include_router(checkpointing.router(ledger, settings), responses=ERROR_RESPONSES)
    app.include_router(keys.router(), responses=ERROR_RESPONSES)
    app = _with_mcp_endpoint(app, ledger, settings)
    if settings.cors_origins:  # off by default; outermost, so preflights never need an API key
        app.add_middleware(ScopedCors, origins=settings.cors_origins)  # type: ignore[arg-type]
    return app


def _archived(text: str | None) -> bool | None:
    """``archived`` query parameter: omitted or false -> live blocks, true -> archived ones, any -> both."""
    value = (text or "false").strip().lower()
    if value in {"false", "0", "no"}:
        return False
    if value in {"true", "1", "yes"}:
        return True
    if value in {"any", "all"}:
        return None
    raise InvalidInput(f"archived {text!r} is not known", "send archived=false (default), true or any")


def _with_mcp_endpoint(app: FastAPI, ledger: Ledger, settings: Settings) -> FastAPI:
    app.add_middleware(_McpEndpoint, ledger=ledger, fallback_agent=settings.agent)  # type: ignore[arg-type]
    return app


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(LedgerError)
    async def ledger_error(_request: Request, exc: LedgerError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(
                error_body(
                    "malformed_json",
                    "the request body is not valid JSON",
                    "send a JSON object with Content-Type: application/json",
                ),
                status_code=400,
            )
        parts = []
        for e in errors:
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
            if e.get("type") == "extra_forbidden":
                parts.append(f"unknown field '{where}'")
            else:
                parts.append(f"{where or 'body'}: {e.get('msg')}")
        return JSONResponse(
            error_body("invalid_request", "; ".join(parts), "see /openapi.json for the fields this endpoint accepts"),
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        hint = "see /openapi.json for the available endpoints" if exc.status_code in (404, 405) else ""
        return JSONResponse(error_body(f"http_{exc.status_code}", str(exc.detail), hint), status_code=exc.status_code)

    @app.exception_handler(StoreUnavailable)
    async def store_down(_request: Request, exc: StoreUnavailable) -> JSONResponse:
        return error_response(exc)


def error_response(exc: LedgerError) -> JSONResponse:
    """The error body at the error's status; a ``Retry-After`` header when the same request may succeed soon
    (:class:`StoreBusy`: the write lock was held past the timeout and nothing was recorded)."""
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return JSONResponse(error_body(exc.code, exc.message, exc.hint), status_code=exc.status, headers=headers)
