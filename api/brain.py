"""The brain API (seed 003 Layer B): MCP tools and REST routes."""

from __future__ import annotations

from fastapi import APIRouter
from mcp.server.mcpserver import MCPServer

from api.mcp_server import ToolContext


def register_tools(mcp: MCPServer, tools: ToolContext) -> None:
    """Add this module's tools to the MCP server."""


def router() -> APIRouter:
    """This module's REST routes (the service is ``request.app.state.ledger``; the caller is ``api.rest.Caller``)."""
    return APIRouter()
