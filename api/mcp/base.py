"""The ledger's MCP server class: the SDK's ``MCPServer``, with three things every tool and resource relies on.

* Tool descriptions are clean text (a docstring's indentation and line breaks removed).
* Arguments that fail validation get a tool error naming each argument and what to send
  (:func:`api.mcp.arguments.explain`), on every transport: the SDK's own text quotes pydantic and links its docs.
* A resource read knows its caller: :func:`reading` gives the request's context to a resource function, which the
  SDK calls without one for a resource that is not a template.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, Icon, InputRequiredResult, ToolAnnotations
from pydantic import AnyUrl, ValidationError

from api.mcp.arguments import clean, explain
from api.mcp.protocol import SpecServer

_READING: ContextVar[Context[Any, Any] | None] = ContextVar("ledger_mcp_reading", default=None)


def reading() -> Context[Any, Any]:
    """The context of the resource read in progress (call it from a resource function)."""
    ctx = _READING.get()
    if ctx is None:
        raise RuntimeError("reading() is only available while a resource is being read")
    return ctx


class LedgerServer(SpecServer):
    """``MCPServer`` with the specification's error codes (:class:`~api.mcp.protocol.SpecServer`), clean
    descriptions, explained argument errors and known resource readers."""

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        said = description if description is not None else fn.__doc__
        super().add_tool(
            fn,
            name=name,
            title=title,
            description=clean(said) if said else None,
            annotations=annotations,
            icons=icons,
            meta=meta,
            structured_output=structured_output,
        )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            # The SDK raises a ToolError caused by a ValidationError only for arguments that fail validation.
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            tool = self._tool_manager.get_tool(name)
            schema = tool.parameters if tool is not None else {}
            raise ToolError(f"Error executing tool {name}: {explain(cause, schema)}") from cause

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        token = _READING.set(context)
        try:
            return await super().read_resource(uri, context)
        finally:
            _READING.reset(token)
