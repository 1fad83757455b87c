"""Build the HTTP application: every capability's REST router, in the order the OpenAPI document lists them, and
the MCP Streamable HTTP endpoint mounted at ``/mcp``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import Depends, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import SCOPE_KEY, identity_from_headers
from api.cors import PlainOptions, ScopedCors
from api.ratelimit import RESPONSES as RATE_LIMITED
from api.ratelimit import RateLimiter, limiter
from api.responses import ERROR_RESPONSES
from api.rest import (
    anchor,
    audit,
    brain,
    checkpointing,
    gate,
    health,
    keys,
    memory,
    metrics,
    sessions,
    tasks,
    transparency,
)
from api.rest.context import error_response, install_error_handlers, refuse_unstorable_text
from api.rest.docs import install as install_offline_docs
from api.rest.mcp_endpoint import Built, LazyMcp
from api.rest.observe import RateLimit, RequestLog
from api.rest.ui import install as install_dashboard
from api.settings import Settings
from api.version import package_version
from ledger.core.errors import LedgerError, StoreUnavailable
from ledger.service import Ledger


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


def build_app(ledger: Ledger, settings: Settings) -> FastAPI:
    """Build the HTTP application: REST routes plus MCP (stateless JSON mode) at ``/mcp``, built on its first
    request (:class:`~api.rest.mcp_endpoint.LazyMcp`); one rate limiter for both, a log line per request."""
    limits = limiter(settings.rate_limit, settings.rate_limit_window_seconds, ledger.store)
    mcp = LazyMcp(lambda: _mcp_app(ledger, settings, limits))
    writer = checkpointing.checkpointer(ledger, settings)
    signer = checkpointing.note_signer(ledger, settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with mcp.running(), checkpointing.running(writer, signer):
            yield

    app = FastAPI(
        title="Compliance Ledger",
        version=package_version(),
        description="Hash-chained audit ledger of AI agents' memory discipline. MCP at /mcp.",
        lifespan=lifespan,
        docs_url=None,  # served by api/rest/docs.py from local assets
        redoc_url=None,
        dependencies=[Depends(refuse_unstorable_text)],
        responses=ERROR_RESPONSES,
    )
    app.state.ledger = ledger
    app.state.settings = settings
    app.state.mcp = mcp
    app.state.note_signer = signer
    app.state.metrics = metrics.registry_for(ledger)  # from now on: its durations count every check
    app.mount("/mcp", mcp)
    install_error_handlers(app)
    install_offline_docs(app)
    install_dashboard(app)

    app.include_router(health.router(), responses=ERROR_RESPONSES)  # never rate-limited
    for router in (
        sessions.router(),
        memory.router(),
        gate.router(),
        anchor.router(),
        audit.router(),
        tasks.router(),
        metrics.router(),  # /metrics (the app's registry) and /reports/enforcement
        brain.router(),
        checkpointing.router(),
        transparency.router(),
        keys.router(),
    ):
        app.include_router(router, responses={**ERROR_RESPONSES, **(RATE_LIMITED if limits else {})})
    app.add_middleware(_McpEndpoint, ledger=ledger, fallback_agent=settings.agent)  # type: ignore[arg-type]
    if limits is not None:  # inside CORS, so a browser can read the 429
        app.add_middleware(RateLimit, limiter=limits, fallback_agent=settings.agent)  # type: ignore[arg-type]
    if settings.cors_origins:  # off by default; outside the key checks, so preflights never need an API key
        app.add_middleware(ScopedCors, origins=settings.cors_origins)  # type: ignore[arg-type]
    else:  # OPTIONS on /mcp and /api/v1/ still answers 204 (with Allow, without CORS headers)
        app.add_middleware(PlainOptions)
    app.add_middleware(RequestLog)  # outermost: every request gets an id and a log line
    return app


def _mcp_app(ledger: Ledger, settings: Settings, limits: RateLimiter | None) -> Built:
    """The MCP server's Streamable HTTP app and its session manager; the MCP SDK loads here, on the first request
    to ``/mcp`` (the REST modules never import it)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from api.mcp.server import build_mcp

    mcp = build_mcp(ledger, fallback_agent=settings.agent, limiter=limits, checkpoint_file=settings.checkpoint_path)
    loopback = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*loopback, *settings.allowed_hosts],
        allowed_origins=[f"http://{h}" for h in [*loopback, *settings.allowed_hosts]],
    )
    app = mcp.streamable_http_app(
        streamable_http_path="/",
        stateless_http=True,
        json_response=True,
        transport_security=security,
        host=settings.host,
    )
    return app, mcp.session_manager.run
