"""The stdio transport: one local agent client, one caller (the key in VERA_API_KEY)."""

from __future__ import annotations

from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.tools import build_mcp_server


async def serve_stdio(runner: ToolRunner) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    await build_mcp_server(runner).run_stdio_async()
