"""The MCP server and its tools: each a typed function (the SDK publishes the JSON
Schema of its arguments and of its result) that runs through ToolRunner.run_tool
as the authenticated caller, so row-level security, roles, tiers and the
contamination guard hold exactly as in SQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal
from uuid import UUID

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import Field, ValidationError

from vera_client.domain.errors import InvalidArgumentError, NotFoundError
from vera_mcp.adapters.context_tools import register_context_tools
from vera_mcp.adapters.knowledge_tools import register_knowledge_tools
from vera_mcp.adapters.lean_schemas import lean_schema
from vera_mcp.adapters.remember_tool import register_remember_tool
from vera_mcp.adapters.runner import ToolCall, ToolRunner
from vera_mcp.adapters.tool_annotations import READ_ONLY, WRITES
from vera_mcp.domain.access import Scope, ToolClass
from vera_mcp.domain.arguments import (
    AsOf,
    During,
    ItemKind,
    K,
    Note,
    Query,
    ScopeName,
    ScopeNames,
    SnapshotName,
)
from vera_mcp.domain.limits import LIMITS
from vera_mcp.domain.shapes import (
    HitOut,
    PendingItem,
    PendingList,
    PeriodOut,
    ReviewOut,
    SearchResult,
    SnapshotList,
    SnapshotOut,
    VoteOut,
    WhoAmI,
    scope_infos,
)

INSTRUCTIONS = """VERA is a verified, time-aware knowledge memory. Call whoami first: it lists the
scopes you can read (name them by group_id, or by name when unambiguous) and the bounds of every
argument. search answers with ranked, cited hits (facts and passages) and the seven signals of each;
a hit's confidence is how likely it answers, and no_good_match says that nothing known does (then
say you don't know). get_context packs the best of them under a token budget for a prompt, with
conflicts and freshness warnings. get_fact, explain_fact, get_evidence, get_entity, get_source and
explore follow a hit to its history, evidence and neighbours; changes and conflicts show what moved
and what disagrees. propose a fact you learned (a reviewer decides); tell VERA which hits helped
with feedback (the hit's kind and item_id, and your query) or pack_feedback (the pack and the
item's position)."""


class VeraMCPServer(MCPServer[Any]):
    """MCPServer whose argument errors read as one line: each argument and what is wrong with it
    (the bound it broke), without the rejected value (it is the caller's data)."""

    # told the tool's name when its arguments are refused before run_tool (the metrics count it)
    on_invalid_arguments: Callable[[str], None] | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if not isinstance(error.__cause__, ValidationError):
                raise
            if self.on_invalid_arguments is not None:
                self.on_invalid_arguments(name)
            problems = "; ".join(
                f"{'.'.join(str(part) for part in problem['loc']) or 'arguments'}: {problem['msg']}"
                for problem in error.__cause__.errors(include_url=False, include_input=False)
            )
            raise ToolError(f"invalid arguments for {name}: {problems}") from error.__cause__

    def lean_schemas(self) -> None:
        """Publish each registered tool's input and output schemas in their lean form
        (adapters/lean_schemas.py: the same values pass, cheaper to check). Called once every tool
        is registered and before anything lists them: the SDK reads `parameters` and
        `fn_metadata.output_schema` when it lists a tool or checks a call's headers, but keeps a
        tool's `output_schema` once read."""
        for tool in self._tool_manager.list_tools():
            tool.parameters = lean_schema(tool.parameters)
            if tool.fn_metadata.output_schema is not None:
                tool.fn_metadata.output_schema = lean_schema(tool.fn_metadata.output_schema)


def build_mcp_server(
    runner: ToolRunner,
    *,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> VeraMCPServer:
    """The MCP server with VERA's tools; over HTTP with the resource-server auth of the SDK."""
    server = VeraMCPServer(
        "vera",
        title="VERA memory",
        version=runner.server_version,
        instructions=INSTRUCTIONS,
        token_verifier=token_verifier,
        auth=auth,
        log_level="WARNING",
    )

    @server.tool(annotations=READ_ONLY)
    async def whoami(ctx: Context) -> WhoAmI:
        """Who you are: your principal, the scopes you can read with your role in each, what your token
        may attempt, the server and search versions, and the bounds of every argument."""

        async def work(call: ToolCall) -> WhoAmI:
            memberships = await call.memberships()
            if not memberships:  # every principal has its personal scope; one without any can do nothing
                raise NotFoundError("your principal reaches no scope")
            first = memberships[0]
            return WhoAmI(
                principal_id=first.principal_id,
                display_name=first.display_name,
                principal_kind=first.kind,
                via=call.verified.via,
                token_scopes=sorted(scope.value for scope in call.verified.scopes),
                scopes=scope_infos(memberships),
                server_version=runner.server_version,
                search_version=await call.vera.search_version(),
                limits=LIMITS.as_dict(),
            )

        return await runner.run_tool(ctx, "whoami", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def search(
        *,
        query: Query,
        ctx: Context,
        k: K = 10,
        as_of: AsOf = None,
        scopes: ScopeNames = None,
        snapshot: Annotated[
            str | None,
            Field(
                max_length=LIMITS.max_name_chars, description="search this snapshot of the one scope named"
            ),
        ] = None,
        during: During = None,
    ) -> SearchResult:
        """Ranked, cited hits for a query: facts and passages, each with its citation (source, episode,
        evidence, validity, tier, verification), its confidence (an absolute probability that it answers)
        and the seven signals of the blend; no_good_match: nothing known answers (say "I don't know");
        during: the period asked about (passed, or read from the query's words)."""

        async def work(call: ToolCall) -> SearchResult:
            groups = await call.scopes(scopes)
            days = during.days() if during is not None else None
            if snapshot is not None:
                if groups is None or len(groups) != 1 or as_of is not None:
                    raise InvalidArgumentError("a snapshot search names exactly one scope and no as_of")
                hits = await call.vera.search_snapshot(groups[0], snapshot, query, k=k, during=days)
            else:
                hits = await call.vera.search(query, k=k, as_of=as_of, groups=groups, during=days)
            asked = PeriodOut.of(hits.during) if hits.during is not None else None
            return SearchResult(
                query=query,
                as_of=as_of,
                snapshot=snapshot,
                during=asked,
                hits=[HitOut.of(h) for h in hits],
                no_good_match=hits.no_good_match,
            )

        return await runner.run_tool(ctx, "search", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=WRITES)
    async def feedback(
        *,
        kind: ItemKind,
        item_id: UUID,
        query: Query,
        vote: Literal["up", "down"],
        ctx: Context,
        as_of: AsOf = None,
        scopes: ScopeNames = None,
        during: During = None,
    ) -> VoteOut:
        """Say whether a hit helped: its kind and item_id as search returned them, the query that found
        it (and the as_of, scopes and during of that search). Your later vote on the same hit and query
        replaces this one."""

        async def work(call: ToolCall) -> VoteOut:
            groups = await call.scopes(scopes)
            days = during.days() if during is not None else None
            vote_ = await call.vera.feedback(
                kind, item_id, query, vote, as_of=as_of, groups=groups, during=days
            )
            return VoteOut.of(vote_)

        return await runner.run_tool(ctx, "feedback", ToolClass.FEEDBACK, Scope.FEEDBACK, work)

    _snapshot_tools(server, runner)
    _review_tools(server, runner)
    register_knowledge_tools(server, runner)
    register_context_tools(server, runner)
    register_remember_tool(server, runner)
    server.lean_schemas()
    return server


def _snapshot_tools(server: VeraMCPServer, runner: ToolRunner) -> None:
    @server.tool(annotations=WRITES)
    async def create_snapshot(scope: ScopeName, name: SnapshotName, ctx: Context) -> SnapshotOut:
        """Freeze what search answers in a scope now, under a name, so later searches of the snapshot give
        the same answers (admins of the scope)."""

        async def work(call: ToolCall) -> SnapshotOut:
            group = await call.scope(scope)
            await call.vera.create_snapshot(group, name)
            return await _snapshot(call, group, name)

        return await runner.run_tool(ctx, "create_snapshot", ToolClass.SNAPSHOT, Scope.SNAPSHOT, work)

    @server.tool(annotations=READ_ONLY)
    async def get_snapshot(scope: ScopeName, name: SnapshotName, ctx: Context) -> SnapshotOut:
        """One snapshot of a scope: when it was taken, how many items, which search version."""

        async def work(call: ToolCall) -> SnapshotOut:
            return await _snapshot(call, await call.scope(scope), name)

        return await runner.run_tool(ctx, "get_snapshot", ToolClass.READ, Scope.READ, work)

    @server.tool(annotations=READ_ONLY)
    async def list_snapshots(scope: ScopeName, ctx: Context) -> SnapshotList:
        """The snapshots of a scope."""

        async def work(call: ToolCall) -> SnapshotList:
            group = await call.scope(scope)
            found = await call.vera.list_snapshots(group)
            return SnapshotList(scope=group, snapshots=[SnapshotOut.of_scope(group, s) for s in found])

        return await runner.run_tool(ctx, "list_snapshots", ToolClass.READ, Scope.READ, work)


def _review_tools(server: VeraMCPServer, runner: ToolRunner) -> None:
    @server.tool(annotations=READ_ONLY)
    async def pending_reviews(scope: ScopeName, ctx: Context) -> PendingList:
        """Claims and passages waiting for a decision in a scope: tier-3 knowledge and proposals made
        for it (admins of the scope)."""

        async def work(call: ToolCall) -> PendingList:
            group = await call.scope(scope)
            claims = await call.vera.pending_reviews(group)
            passages = await call.vera.pending_passages(group)
            items = [PendingItem.of_claim(c) for c in claims]
            items += [PendingItem.of_passage(group, p) for p in passages]
            return PendingList(scope=group, items=items)

        return await runner.run_tool(ctx, "pending_reviews", ToolClass.REVIEW, Scope.REVIEW, work)

    @server.tool(annotations=WRITES)
    async def review(
        *,
        scope: ScopeName,
        item_id: UUID,
        decision: Literal["approve", "reject"],
        ctx: Context,
        kind: ItemKind = "fact",
        note: Note = None,
    ) -> ReviewOut:
        """Approve (publish, human verified) or reject a pending claim or passage of a scope, as
        pending_reviews listed it (admins of the scope); the note is kept in the audit log."""

        async def work(call: ToolCall) -> ReviewOut:
            group = await call.scope(scope)
            if kind == "fact":
                claim = await call.vera.review(group, item_id, decision, note)
                return ReviewOut(kind=kind, item_id=claim.fact_id, group_id=claim.group_id,
                                        lifecycle=claim.lifecycle)  # fmt: skip
            passage = await call.vera.review_passage(group, item_id, decision, note)
            return ReviewOut(kind=kind, item_id=passage.chunk_id, group_id=passage.group_id,
                                    lifecycle=passage.lifecycle)  # fmt: skip

        return await runner.run_tool(ctx, "review", ToolClass.REVIEW, Scope.REVIEW, work)


async def _snapshot(call: ToolCall, group: str, name: str) -> SnapshotOut:
    wanted = name.strip()
    for info in await call.vera.list_snapshots(group):
        if info.name == wanted:
            return SnapshotOut.of_scope(group, info)
    raise NotFoundError(f"no snapshot {wanted[:100]!r} in {group}")
