"""OpenTelemetry for ``serve`` and ``mcp`` (the optional ``[otel]`` extra): install the SDK's tracer provider
as the global one. Only ``LEDGER_OTEL_EXPORTER`` other than ``none`` imports this module.

The spans are those FastAPI and the MCP SDK already start through the OpenTelemetry API: one per HTTP request
(honouring a ``traceparent`` header) and one per tool call, ``tools/call NAME`` (honouring a ``traceparent`` in
the request's ``_meta``, else nested in the HTTP request's span), each carrying this project's request id, agent
and outcome (:mod:`api.rest.observe`, :mod:`api.mcp.observe`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ledger.core.errors import InvalidInput

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

SERVICE_NAME = "compliance-ledger"


def _exporter(name: str) -> SpanExporter:
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    if name == "console":
        return ConsoleSpanExporter(out=sys.stderr)  # never stdout: the stdio MCP protocol lives there
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise InvalidInput(
                "LEDGER_OTEL_EXPORTER=otlp needs the package opentelemetry-exporter-otlp-proto-http",
                "pip install opentelemetry-exporter-otlp-proto-http (OTEL_EXPORTER_OTLP_ENDPOINT says where spans "
                "go), or set LEDGER_OTEL_EXPORTER=console",
            ) from exc
        return OTLPSpanExporter()
    raise InvalidInput(f"unknown OpenTelemetry exporter {name!r}", "set LEDGER_OTEL_EXPORTER to none, console or otlp")


def install(exporter: str | SpanExporter, *, batch: bool = True) -> TracerProvider:
    """Make an SDK tracer provider exporting to ``exporter`` (``console``, ``otlp`` or an exporter object, e.g.
    the SDK's in-memory one) the global provider, and return it. ``batch=False`` exports each span as it ends."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as exc:
        raise InvalidInput(
            "OpenTelemetry spans need the OpenTelemetry SDK, which is not installed",
            "install the extra: pip install 'compliance-ledger[otel]'; or set LEDGER_OTEL_EXPORTER=none",
        ) from exc
    span_exporter = _exporter(exporter) if isinstance(exporter, str) else exporter
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(span_exporter) if batch else SimpleSpanProcessor(span_exporter))
    trace.set_tracer_provider(provider)
    return provider
