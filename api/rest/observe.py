"""The HTTP front end's operations middleware: a request id and one log line per request (:class:`RequestLog`,
outermost), and the per-key rate limit on REST routes (:class:`RateLimit`, a 429 with ``Retry-After``).

MCP tool calls at ``/mcp`` are limited one by one where the tool is called (:mod:`api.mcp.observe`), so that a
client gets a tool error it can read rather than a failed transport; ``/health`` and the documentation are never
limited (probes and people reading the docs are not load).
"""

from __future__ import annotations

import time

from opentelemetry import trace
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import calls, logs
from api.auth import key_from_headers
from api.ratelimit import RateLimiter, key_for
from api.rest.context import error_response

UNLIMITED_PREFIXES = ("/health", "/docs", "/redoc", "/openapi.json", "/mcp")
_MAX_LOGGED_PATH = 200


def _route_of(scope: Scope) -> str:
    """The matched route's template (``/sessions/{session_id}``), else the path as sent, cut short."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    if isinstance(template, str):
        return template
    path = str(scope.get("path", ""))
    return path if len(path) <= _MAX_LOGGED_PATH else path[:_MAX_LOGGED_PATH] + "..."


def _annotate_span(call: calls.Call) -> None:
    """Name the request id and agent on FastAPI's request span, when OpenTelemetry records one (it ends as the
    response is sent, so this runs as the response starts)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute("compliance_ledger.request_id", call.request_id)
        if call.agent:
            span.set_attribute("compliance_ledger.agent", call.agent)


class RequestLog:
    """Give each request a :class:`~api.calls.Call` (the client's ``X-Request-ID`` if well formed, else a new
    id, echoed in the response's ``X-Request-ID``), and log one line when it ends (ASGI middleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        call = calls.Call(calls.request_id_from(Headers(scope=scope).get(calls.REQUEST_ID_HEADER)))
        scope = {**scope, calls.SCOPE_KEY: call}
        status = 500  # if the app fails before it answers, the server answers 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)[calls.REQUEST_ID_HEADER] = call.request_id
                _annotate_span(call)
            await send(message)

        try:
            with calls.bound(call):
                await self.app(scope, receive, send_with_id)
        finally:
            logs.http_request(
                request_id=call.request_id,
                agent=call.agent,
                method=scope["method"],
                route=_route_of(scope),
                status=status,
                duration_ms=(time.perf_counter() - started) * 1000,
            )


class RateLimit:
    """Refuse a REST request past its key's rate limit with a 429 and ``Retry-After`` (ASGI middleware). Without
    an API key the caller is the local agent (``fallback_agent``), so all keyless callers share one budget."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter, fallback_agent: str) -> None:
        self.app = app
        self.limiter = limiter
        self.fallback_agent = fallback_agent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "OPTIONS" or scope["path"].startswith(UNLIMITED_PREFIXES):
            await self.app(scope, receive, send)
            return
        api_key = key_from_headers(Headers(scope=scope))
        wait = await self.limiter.take_async(key_for(api_key, self.fallback_agent))
        if wait is None:
            await self.app(scope, receive, send)
            return
        if api_key is None:
            calls.note_agent(self.fallback_agent)
        await error_response(self.limiter.refusal(wait))(scope, receive, send)
