"""Infrastructure behind the MCP server's ports: quotas, metrics, traces, logs."""
