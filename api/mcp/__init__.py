"""MCP adapter: ``server`` builds the server, one module per capability adds its tools, ``context`` is what
they share."""
