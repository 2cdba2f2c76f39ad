"""The knowledge tools: reading facts, their evidence and history, entities,
sources, the graph around an entity, recent changes and conflicts (read scope),
and an agent's own proposals (propose scope). Each runs through
ToolRunner.run_tool as the caller, so SQL answers only what the caller reads;
another tenant's id is refused exactly as an id that does not exist."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from vera_mcp.adapters.runner import ToolCall, ToolRunner
from vera_mcp.adapters.tool_annotations import READ_ONLY, WRITES
from vera_mcp.domain.access import Scope, ToolClass
from vera_mcp.domain.arguments import (
    AsOf,
    Depth,
    EntityName,
    EvidenceText,
    FactId,
    Object,
    Predicate,
    ReadScopes,
    Rows,
    ScopeName,
    Subject,
)
from vera_mcp.domain.knowledge_shapes import (
    ChangeList,
    ConflictList,
    EntityList,
    EntityOut,
    EvidenceOut,
    Exploration,
    ExploredFactOut,
    FactChangeOut,
    FactExplanation,
    FactOut,
    ProposalList,
    ProposalOut,
    ProposalStateOut,
    RetractedProposalOut,
    SourceOut,
)


def register_knowledge_tools(server: MCPServer[Any], runner: ToolRunner) -> None:
    """Adds the knowledge reads and the proposal tools to the server."""
    _fact_tools(server, runner)
    _graph_tools(server, runner)
    _proposal_tools(server, runner)


def _fact_tools(server: MCPServer[Any], runner: ToolRunner) -> None:
    @server.tool(annotations=READ_ONLY)
    async def get_fact(fact_id: FactId, ctx: Context) -> FactOut:
        """One fact you can read, in any lifecycle (a superseded or retracted one says so), with its
        citation."""

        async def work(call: ToolCall) -> FactOut:
            return FactOut.of(await call.vera.get_fact(fact_id))

        return await runner.run_tool(ctx, "get_fact", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def explain_fact(fact_id: FactId, ctx: Context) -> FactExplanation:
        """Why VERA holds a fact: the other statements of the same value that support it, and the
        earlier and later values of its subject and predicate, each with its citation."""

        async def work(call: ToolCall) -> FactExplanation:
            return FactExplanation.of(await call.vera.explain_fact(fact_id))

        return await runner.run_tool(ctx, "explain_fact", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def get_evidence(fact_id: FactId, ctx: Context) -> EvidenceOut:
        """Where a fact came from: its source, the version of the record (episode), the chunk's text
        and the span the fact cites."""

        async def work(call: ToolCall) -> EvidenceOut:
            return EvidenceOut.of(await call.vera.get_evidence(fact_id))

        return await runner.run_tool(ctx, "get_evidence", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def get_source(
        source_id: Annotated[UUID, Field(description="a source_id as a citation names it")], ctx: Context
    ) -> SourceOut:
        """A source you can read: its trust tier, its freshness (age since its last version) and its
        versions (episodes), newest first."""

        async def work(call: ToolCall) -> SourceOut:
            return SourceOut.of(await call.vera.get_source(source_id))

        return await runner.run_tool(ctx, "get_source", ToolClass.READ, Scope.READ, work)


def _graph_tools(server: MCPServer[Any], runner: ToolRunner) -> None:
    @server.tool(annotations=READ_ONLY)
    async def get_entity(
        *, name_or_id: EntityName, ctx: Context, scopes: ReadScopes = None, as_of: AsOf = None
    ) -> EntityList:
        """An entity by name, alias or entity_id in each scope that knows it: its aliases and the facts
        that hold with it as subject or object (at as_of)."""

        async def work(call: ToolCall) -> EntityList:
            groups = await call.scopes(scopes)
            found = await call.vera.get_entity(name_or_id, groups=groups, as_of=as_of)
            return EntityList(name_or_id=name_or_id, as_of=as_of, entities=[EntityOut.of(e) for e in found])

        return await runner.run_tool(ctx, "get_entity", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def explore(
        *,
        entity: EntityName,
        ctx: Context,
        depth: Depth = 2,
        as_of: AsOf = None,
        scopes: ReadScopes = None,
        limit: Rows = 100,
    ) -> Exploration:
        """The facts around an entity, breadth-first: hop 1 names the entity, hop n is reached through
        n-1 other entities (depth 1 to 5); each fact with its citation."""

        async def work(call: ToolCall) -> Exploration:
            groups = await call.scopes(scopes)
            found = await call.vera.explore(entity, depth=depth, as_of=as_of, groups=groups, limit=limit)
            return Exploration(
                entity=entity, depth=depth, as_of=as_of, facts=[ExploredFactOut.of(f) for f in found]
            )

        return await runner.run_tool(ctx, "explore", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def changes(
        *,
        since: Annotated[datetime, Field(description="list what changed after this time (ISO 8601)")],
        ctx: Context,
        limit: Rows = 100,
        scopes: ReadScopes = None,
    ) -> ChangeList:
        """Facts published, superseded or retracted since a time, newest first."""

        async def work(call: ToolCall) -> ChangeList:
            groups = await call.scopes(scopes)
            found = await call.vera.changes(since, limit=limit, groups=groups)
            return ChangeList(since=since, changes=[FactChangeOut.of(c) for c in found])

        return await runner.run_tool(ctx, "changes", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def conflicts(*, ctx: Context, limit: Rows = 100, scopes: ReadScopes = None) -> ConflictList:
        """Subjects whose functional predicate has two or more different current values (published,
        pending review, or proposed), the values side by side; limit counts subjects."""

        async def work(call: ToolCall) -> ConflictList:
            groups = await call.scopes(scopes)
            return ConflictList.of(await call.vera.conflicts(limit=limit, groups=groups))

        return await runner.run_tool(ctx, "conflicts", ToolClass.READ, Scope.READ, work)


def _proposal_tools(server: MCPServer[Any], runner: ToolRunner) -> None:
    @server.tool(annotations=WRITES)
    async def propose(
        *,
        subject: Subject,
        predicate: Predicate,
        object: Object,  # shadows the builtin: it is the name agents see in the schema
        evidence: EvidenceText,
        scope: Annotated[ScopeName, Field(description="the shared scope the claim is meant for")],
        ctx: Context,
    ) -> ProposalOut:
        """Propose a claim with the text it rests on, for a shared scope. It waits in your personal scope
        (only you find it in search) until an admin of that scope approves it."""

        async def work(call: ToolCall) -> ProposalOut:
            group = await call.scope(scope)
            return ProposalOut.of(await call.vera.propose(subject, predicate, object, evidence, group))

        return await runner.run_tool(ctx, "propose", ToolClass.PROPOSE, Scope.PROPOSE, work)

    @server.tool(annotations=WRITES)
    async def retract_proposal(fact_id: FactId, ctx: Context) -> RetractedProposalOut:
        """Withdraw one of your proposals that is still waiting."""

        async def work(call: ToolCall) -> RetractedProposalOut:
            return RetractedProposalOut.of(await call.vera.retract_proposal(fact_id))

        return await runner.run_tool(ctx, "retract_proposal", ToolClass.PROPOSE, Scope.PROPOSE, work)

    @server.tool(annotations=READ_ONLY)
    async def list_proposals(ctx: Context, limit: Rows = 100) -> ProposalList:
        """Your proposals, newest first: waiting (proposal), accepted, rejected or retracted."""

        async def work(call: ToolCall) -> ProposalList:
            found = await call.vera.list_proposals(limit=limit)
            return ProposalList(proposals=[ProposalStateOut.of(p) for p in found])

        return await runner.run_tool(ctx, "list_proposals", ToolClass.PROPOSE, Scope.PROPOSE, work)
