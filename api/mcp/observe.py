"""Every MCP ``tools/call``, on every transport: one log line, the per-key rate limit (a tool error that says
when to retry), and the call's facts as attributes of its OpenTelemetry span.

The span is the SDK's own ``tools/call NAME``, recorded when a tracer provider is set (``LEDGER_OTEL_EXPORTER``);
it honours a ``traceparent`` in the request's ``_meta``. Over HTTP the call keeps the id of the HTTP request that
carried it (:mod:`api.calls`), so both log lines match.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from opentelemetry import trace
from pydantic import ValidationError

from api import calls, logs
from api.auth import key_from_headers, proven_for_request
from api.ratelimit import RateLimiter, key_for


def _failed(result: HandlerResult) -> bool:
    if isinstance(result, CallToolResult):
        return result.is_error
    return isinstance(result, dict) and result.get("isError") is True


class ToolObserver:
    """MCP server middleware (``MCPServer.middleware``) observing ``tools/call``; other messages pass untouched.

    ``agent`` is the one agent a stdio or in-memory server acts for; over HTTP (``agent`` is ``None``) the agent
    is the one the HTTP front end proved for the request, and without an API key the caller draws on the
    ``fallback_agent``'s budget."""

    def __init__(self, *, transport: str, agent: str | None, fallback_agent: str, limiter: RateLimiter | None) -> None:
        self.transport = transport
        self.agent = agent
        self.fallback_agent = fallback_agent
        self.limiter = limiter

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        started = time.perf_counter()
        name = ctx.params.get("name") if ctx.params else None
        scope: Mapping[str, Any] | None = getattr(ctx.request, "scope", None)
        proven = proven_for_request(scope)
        call = calls.of_scope(scope) or calls.Call(calls.new_request_id())
        call.agent = self.agent or (proven.agent if proven is not None else call.agent)
        outcome: logs.Outcome = "error"
        try:
            with calls.bound(call):
                wait = await self.limiter.take_async(self._budget(scope)) if self.limiter is not None else None
                if wait is not None and self.limiter is not None:
                    outcome = "rate_limited"
                    refusal = self.limiter.refusal(wait)
                    text = f"{refusal.message}. {refusal.hint}"
                    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
                result = await call_next(ctx)
                outcome = "refused" if _failed(result) else "ok"
                return result
        except (MCPError, ValidationError):  # an unknown tool, malformed params: the client's mistake
            outcome = "refused"
            raise
        finally:
            span = trace.get_current_span()  # the SDK's span for this message
            if span.is_recording():
                span.set_attribute("compliance_ledger.request_id", call.request_id)
                span.set_attribute("compliance_ledger.outcome", outcome)
                if call.agent:
                    span.set_attribute("compliance_ledger.agent", call.agent)
            logs.tool_call(
                request_id=call.request_id,
                rpc_id=ctx.request_id,
                agent=call.agent,
                transport=self.transport,
                tool=name if isinstance(name, str) else None,
                outcome=outcome,
                duration_ms=(time.perf_counter() - started) * 1000,
            )

    def _budget(self, scope: Mapping[str, Any] | None) -> str:
        """The rate-limit key: the API key the HTTP request carried, else the agent."""
        if self.agent is not None:
            return key_for(None, self.agent)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])} if scope else {}
        return key_for(key_from_headers(headers), self.fallback_agent)
