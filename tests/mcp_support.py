"""Calling MCP tools from tests through a real client."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call(client: Client, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)
