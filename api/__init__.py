"""Adapters only: MCP tools, REST routes, CLI commands, settings and auth. No decision logic lives here."""
