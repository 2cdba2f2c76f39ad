"""Instruments a built MCP server: metrics labelled with the tools it registered
(so a new tool is labelled without a list to keep in step), its tool calls
observed by ToolCallObserver (spans when tracing is on), argument errors the SDK
raises before ToolRunner.run_tool counted too, and the quota ledger, whose
Valkey failures the metrics count. Both transports go through here."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vera_mcp.adapters.metrics import McpMetrics
from vera_mcp.adapters.observability import ToolCallObserver
from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.tools import VeraMCPServer
from vera_mcp.adapters.tracing import Tracing
from vera_mcp.domain.ports import QuotaLedger

# Builds the quota ledger once the metrics exist (None: no quotas).
LedgerFactory = Callable[[McpMetrics], QuotaLedger | None]


def no_ledger(_metrics: McpMetrics) -> QuotaLedger | None:
    return None


async def instrument(
    server: VeraMCPServer,
    runner: ToolRunner,
    *,
    tracing: Tracing,
    ledger: LedgerFactory = no_ledger,
    routes: frozenset[str] | None = None,
    extra_names: Sequence[str] = (),
) -> McpMetrics:
    """Give runner (the one server was built with) its observer and ledger; the metrics back.
    extra_names: other operations observed as tools are (the HTTP API's, when it is served too)."""
    tools = [tool.name for tool in await server.list_tools()] + list(extra_names)
    metrics = McpMetrics(tools=tools) if routes is None else McpMetrics(tools=tools, routes=routes)
    runner.observer = ToolCallObserver(metrics, tracing)
    runner.ledger = ledger(metrics)
    server.on_invalid_arguments = runner.invalid_arguments
    return metrics
