"""MCP/HTTP adapters: the infrastructure behind the MCP server's ports."""
