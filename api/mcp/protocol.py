"""The MCP server class: the SDK's, answering with the JSON-RPC error codes the MCP specification names where the SDK
answers otherwise.

* ``tools/call`` of a tool the server does not have is a protocol error, ``-32602`` Invalid params ("Unknown
  tool: …" is the specification's own example); the SDK answers a tool result with ``isError``. Arguments a tool
  rejects stay tool results (``isError``), as the specification asks since 2025-11-25, so a model can correct them.
* ``prompts/get`` of an unknown prompt, with arguments the prompt does not declare or without one it requires, is
  ``-32602``; a prompt that fails while rendering is ``-32603`` Internal error. The SDK answers all of them with
  code ``0``, which JSON-RPC does not define.

An unknown resource (``-32602`` with the URI in ``data``), an unknown method (``-32601``) and malformed params
(``-32602``) already carry the specification's codes in the SDK.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult


class SpecServer(MCPServer[Any]):
    """:class:`MCPServer` with the specification's error codes for unknown tools and prompts and bad prompt
    arguments."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self._tool_manager.get_tool(name) is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown tool: {name!r}; tools/list names the tools this server has",
                data={"name": name},
            )
        return await super().call_tool(name, arguments, context)

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            known = ", ".join(p.name for p in self._prompt_manager.list_prompts())
            raise MCPError(
                code=INVALID_PARAMS, message=f"Unknown prompt: {name!r}; the prompts are: {known}", data={"name": name}
            )
        declared = {arg.name: arg.required for arg in prompt.arguments or []}
        given = set(arguments or {})
        unknown = sorted(given - set(declared))
        missing = sorted(arg for arg, required in declared.items() if required and arg not in given)
        if unknown or missing:
            problems = ([f"unknown arguments {unknown}"] if unknown else []) + (
                [f"missing required arguments {missing}"] if missing else []
            )
            accepted = ", ".join(declared) or "none"
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Prompt {name!r}: {'; '.join(problems)}; the arguments it takes: {accepted}",
                data={"name": name, "unknown": unknown, "missing": missing},
            )
        try:
            return await super().get_prompt(name, arguments, context)
        except MCPError:
            raise
        except Exception as exc:  # the SDK wraps every rendering failure in a ValueError (code 0 on the wire)
            raise MCPError(code=INTERNAL_ERROR, message=f"Error rendering prompt {name!r}") from exc
