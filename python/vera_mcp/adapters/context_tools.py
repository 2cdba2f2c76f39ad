"""The context-pack tools: get_context assembles and stores a pack (the best
cited items that fit a token budget, what was left out and why, competing
values, freshness warnings), get_context_pack reads one of the caller's packs
again, and pack_feedback votes on the item at a position of a pack."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from vera_mcp.adapters.runner import ToolCall, ToolRunner
from vera_mcp.adapters.tool_annotations import READ_ONLY, WRITES
from vera_mcp.domain.access import Scope, ToolClass
from vera_mcp.domain.arguments import (
    AsOf,
    During,
    MaxTier,
    MinAuthority,
    PackId,
    Position,
    Query,
    ReadScopes,
    TokenBudget,
    Vote,
)
from vera_mcp.domain.knowledge_shapes import ContextPackOut
from vera_mcp.domain.shapes import VoteOut


def register_context_tools(server: MCPServer[Any], runner: ToolRunner) -> None:
    """Adds get_context, get_context_pack and pack_feedback to the server."""

    @server.tool(annotations=WRITES)  # it stores the pack, so that feedback can name its positions
    async def get_context(
        *,
        query: Query,
        ctx: Context,
        token_budget: TokenBudget = 2000,
        as_of: AsOf = None,
        scopes: ReadScopes = None,
        min_authority: MinAuthority = None,
        max_tier: MaxTier = None,
        during: During = None,
    ) -> ContextPackOut:
        """A context pack for a query: the best cited items (facts and passages) that fit token_budget,
        in order, each with its position, citation and seven signals; what was left out and why; competing
        values side by side; warnings about facts that may no longer hold; the period asked about (during,
        passed or read from the query's words). Stored under pack_id."""

        async def work(call: ToolCall) -> ContextPackOut:
            groups = await call.scopes(scopes)
            pack = await call.vera.get_context(
                query,
                token_budget=token_budget,
                as_of=as_of,
                groups=groups,
                min_authority=min_authority,
                max_tier=max_tier,
                during=during.days() if during is not None else None,
            )
            return ContextPackOut.of(pack)

        return await runner.run_tool(ctx, "get_context", ToolClass.CONTEXT, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def get_context_pack(pack_id: PackId, ctx: Context) -> ContextPackOut:
        """One of your context packs again, as it was made (the text of an item whose source was erased
        since is gone, and the item says so)."""

        async def work(call: ToolCall) -> ContextPackOut:
            return ContextPackOut.of(await call.vera.get_context_pack(pack_id))

        return await runner.run_tool(ctx, "get_context_pack", ToolClass.CONTEXT, Scope.READ, work)

    @server.tool(annotations=WRITES)
    async def pack_feedback(pack_id: PackId, position: Position, vote: Vote, ctx: Context) -> VoteOut:
        """Say whether the item at a position of one of your packs helped, as feedback on a search hit
        of the pack's query. Your later vote on the same item and query replaces this one."""

        async def work(call: ToolCall) -> VoteOut:
            return VoteOut.of(await call.vera.pack_feedback(pack_id, position, vote))

        return await runner.run_tool(ctx, "pack_feedback", ToolClass.FEEDBACK, Scope.FEEDBACK, work)
