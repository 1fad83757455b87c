"""CORS for the MCP endpoint and the brain routes, off unless origins are configured (``LEDGER_CORS_ORIGINS``).

Starlette's :class:`CORSMiddleware` decides, scoped to ``/mcp`` and ``/api/v1/``; every other route never
answers a cross-origin browser. A preflight may ask for every header current MCP clients send (``MCP-Protocol-Version``
on each request after ``initialize``, ``Mcp-Session-Id``, ``Mcp-Method`` / ``Mcp-Name``, ``Last-Event-ID``, trace
context), and answers expose what clients read (``Mcp-Session-Id``, ``Retry-After``, ``X-Request-ID``):
tests/e2e/test_ts_sdk.py runs the official TypeScript clients through a browser's CORS checks. Two refinements
for the seed's brain wrapper (AC-B6):

* every ``OPTIONS`` on those paths is answered here with **204** and the CORS headers — a browser preflight
  (a disallowed origin, method or header still gets Starlette's 400) and a bare ``curl -X OPTIONS`` alike;
  with CORS off (:class:`PlainOptions`) it is still **204**, with ``Allow`` and no CORS headers, so a browser
  preflight fails as it should and ``curl -I -X OPTIONS`` sees what the endpoint allows;
* a request from an allowed origin reaches the MCP transport without its ``Origin`` header: the transport's
  own allow-list knows only loopback origins, and the operator has just allowed this one. Its ``Host`` check
  (DNS-rebinding protection) still applies, and so do API keys.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

CORS_METHODS = ("GET", "POST", "DELETE", "OPTIONS")
# What browser MCP clients send (the TypeScript SDK's Streamable HTTP transport): the protocol version after
# initialize, the session and resumption ids, the SEP-2243 routing headers, W3C trace context; plus our API keys.
CORS_HEADERS = (
    "Content-Type",
    "Accept",
    "Authorization",
    "X-API-Key",
    "MCP-Protocol-Version",
    "Mcp-Session-Id",
    "Mcp-Method",
    "Mcp-Name",
    "Last-Event-ID",
    "traceparent",
    "tracestate",
)
# What clients read from an answer: the session id (stateful servers), and when to retry a 503 or a 429.
CORS_EXPOSE = ("Mcp-Session-Id", "Retry-After", "X-Request-ID")


def in_scope(path: str) -> bool:
    """The paths CORS applies to: the MCP endpoint and the brain API."""
    return path == "/mcp" or path.startswith(("/mcp/", "/api/v1/"))


class PlainOptions:
    """With CORS off: ``OPTIONS`` on :func:`in_scope` paths answers 204 with ``Allow`` and no CORS headers, so no
    browser may call across origins while the seed's AC-B6 status (204) holds (ASGI middleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "OPTIONS" and in_scope(scope["path"]):
            await Response(status_code=204, headers={"Allow": ", ".join(CORS_METHODS)})(scope, receive, send)
            return
        await self.app(scope, receive, send)


class ScopedCors:
    """Starlette's CORS for :func:`in_scope` paths only, with 204 preflights (ASGI middleware)."""

    def __init__(self, app: ASGIApp, origins: Sequence[str]) -> None:
        self.app = app
        self.cors = CORSMiddleware(
            app,
            allow_origins=list(origins),
            allow_methods=CORS_METHODS,
            allow_headers=CORS_HEADERS,
            expose_headers=CORS_EXPOSE,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not in_scope(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if scope["method"] == "OPTIONS":
            await self._preflight(headers, origin)(scope, receive, send)
            return
        if origin is not None and self.cors.is_allowed_origin(origin):
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"origin"]}
        await self.cors.simple_response(scope, receive, send, request_headers=headers)

    def _preflight(self, headers: Headers, origin: str | None) -> Response:
        if origin is not None and "access-control-request-method" in headers:
            decided = self.cors.preflight_response(request_headers=headers)
            if decided.status_code != 200:
                return decided  # 400 "Disallowed CORS origin|method|headers"
            allowed = {k: v for k, v in decided.headers.items() if k not in ("content-length", "content-type")}
            return Response(status_code=204, headers=allowed)
        # Not a browser preflight (e.g. `curl -I -X OPTIONS`): say what the endpoint allows.
        allowed = dict(self.cors.preflight_headers)
        if origin is not None and self.cors.is_allowed_origin(origin):
            allowed.setdefault("Access-Control-Allow-Origin", origin)
        allowed["Access-Control-Expose-Headers"] = ", ".join(CORS_EXPOSE)
        allowed["Allow"] = ", ".join(CORS_METHODS)
        return Response(status_code=204, headers=allowed)
