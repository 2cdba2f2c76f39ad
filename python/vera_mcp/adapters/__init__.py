"""Infrastructure behind the MCP server's ports and its transports: token verification, quotas,
metrics, traces, logs, the tools and the HTTP app. The only place mcp, starlette and uvicorn are imported."""
