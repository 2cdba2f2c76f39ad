"""Infrastructure behind the MCP server's ports: token verification, quotas, metrics, traces, logs."""
