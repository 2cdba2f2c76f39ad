"""The stdio transport: one local agent client, one caller (the key in VERA_API_KEY)."""

from __future__ import annotations

from vera_mcp.adapters.instruments import LedgerFactory, instrument
from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.tools import build_mcp_server
from vera_mcp.adapters.tracing import Tracing


async def serve_stdio(runner: ToolRunner, *, tracing: Tracing, ledger: LedgerFactory) -> None:
    """Serve MCP on stdin/stdout until the client closes them (metrics are kept, not served:
    the log lines and spans are what a local server reports)."""
    server = build_mcp_server(runner)
    await instrument(server, runner, tracing=tracing, ledger=ledger)
    await server.run_stdio_async()
