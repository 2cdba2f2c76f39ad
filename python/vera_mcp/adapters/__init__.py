"""The MCP server's adapters: the only place mcp, starlette and uvicorn are imported."""
