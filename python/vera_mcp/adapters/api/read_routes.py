"""The HTTP API's reads: search, context packs, facts, entities, explore, changes and
conflicts, snapshots. Each handler is a thin adapter over one client operation; the
shapes are the MCP tools' own (domain/shapes.py, domain/knowledge_shapes.py)."""

from __future__ import annotations

from vera_client.domain.errors import InvalidArgumentError, NotFoundError
from vera_mcp.adapters.api.endpoint import ApiCall, Endpoint
from vera_mcp.domain.access import Scope, ToolClass
from vera_mcp.domain.api_requests import (
    ChangesQuery,
    ConflictsQuery,
    ContextPackBody,
    EntityQuery,
    ExploreQuery,
    FactPath,
    PackFeedbackBody,
    PackPath,
    ScopeQuery,
    SearchQuery,
    SnapshotPath,
)
from vera_mcp.domain.api_shapes import ChangePage, ConflictPage, FactHistory
from vera_mcp.domain.knowledge_shapes import (
    ConflictList,
    ContextPackOut,
    EntityList,
    EntityOut,
    EvidenceOut,
    Exploration,
    ExploredFactOut,
    FactChangeOut,
    FactExplanation,
    FactOut,
)
from vera_mcp.domain.shapes import HitOut, PeriodOut, SearchResult, SnapshotList, SnapshotOut, VoteOut


async def search(a: ApiCall) -> SearchResult:
    q = a.query_as(SearchQuery)
    groups = await a.call.scopes(q.scopes)
    period = q.during()
    days = period.days() if period is not None else None
    if q.snapshot is not None:
        if groups is None or len(groups) != 1 or q.as_of is not None:
            raise InvalidArgumentError("a snapshot search names exactly one scope and no as_of")
        hits = await a.call.vera.search_snapshot(groups[0], q.snapshot, q.q, k=q.k, during=days)
    else:
        hits = await a.call.vera.search(
            q.q,
            k=q.k,
            as_of=q.as_of,
            groups=groups,
            during=days,
            lexical_weight=q.lexical_weight,
            vector_weight=q.vector_weight,
            candidates=q.candidates,
            rerank=q.rerank,
        )
    asked = PeriodOut.of(hits.during) if hits.during is not None else None
    return SearchResult(
        query=q.q,
        as_of=q.as_of,
        snapshot=q.snapshot,
        during=asked,
        no_good_match=hits.no_good_match,
        hits=[HitOut.of(h) for h in hits],
    )


async def create_context_pack(a: ApiCall) -> ContextPackOut:
    b = a.body_as(ContextPackBody)
    pack = await a.call.vera.get_context(
        b.query,
        token_budget=b.token_budget,
        as_of=b.as_of,
        groups=await a.call.scopes(b.scopes),
        min_authority=b.min_authority,
        max_tier=b.max_tier,
        during=b.during.days() if b.during is not None else None,
    )
    return ContextPackOut.of(pack)


async def get_context_pack(a: ApiCall) -> ContextPackOut:
    return ContextPackOut.of(await a.call.vera.get_context_pack(a.path_as(PackPath).pack_id))


async def pack_feedback(a: ApiCall) -> VoteOut:
    b = a.body_as(PackFeedbackBody)
    return VoteOut.of(await a.call.vera.pack_feedback(a.path_as(PackPath).pack_id, b.position, b.vote))


async def get_fact(a: ApiCall) -> FactOut:
    return FactOut.of(await a.call.vera.get_fact(a.path_as(FactPath).fact_id))


async def explain_fact(a: ApiCall) -> FactExplanation:
    return FactExplanation.of(await a.call.vera.explain_fact(a.path_as(FactPath).fact_id))


async def get_evidence(a: ApiCall) -> EvidenceOut:
    return EvidenceOut.of(await a.call.vera.get_evidence(a.path_as(FactPath).fact_id))


async def fact_history(a: ApiCall) -> FactHistory:
    fact_id = a.path_as(FactPath).fact_id
    timeline = await a.call.vera.explain_fact(fact_id)
    versions = [row for row in timeline if row.relation in {"superseded", "fact", "superseding"}]
    versions.sort(key=lambda row: (row.valid_from, row.recorded_at))
    return FactHistory(fact_id=fact_id, versions=[FactOut.of(row) for row in versions])


async def get_entities(a: ApiCall) -> EntityList:
    q = a.query_as(EntityQuery)
    found = await a.call.vera.get_entity(q.name, groups=await a.call.scopes(q.scopes), as_of=q.as_of)
    return EntityList(name_or_id=q.name, as_of=q.as_of, entities=[EntityOut.of(e) for e in found])


async def explore(a: ApiCall) -> Exploration:
    q = a.query_as(ExploreQuery)
    found = await a.call.vera.explore(
        q.entity, depth=q.depth, as_of=q.as_of, groups=await a.call.scopes(q.scopes), limit=q.limit
    )
    return Exploration(
        entity=q.entity, depth=q.depth, as_of=q.as_of, facts=[ExploredFactOut.of(f) for f in found]
    )


async def changes(a: ApiCall) -> ChangePage:
    q = a.query_as(ChangesQuery)
    found = await a.call.vera.changes(q.since, limit=1000, groups=await a.call.scopes(q.scopes))
    page, cursor = a.page(found, q.limit, q.cursor)
    return ChangePage(since=q.since, changes=[FactChangeOut.of(c) for c in page], next_cursor=cursor)


async def conflicts(a: ApiCall) -> ConflictPage:
    q = a.query_as(ConflictsQuery)
    found = ConflictList.of(await a.call.vera.conflicts(limit=1000, groups=await a.call.scopes(q.scopes)))
    page, cursor = a.page(found.conflicts, q.limit, q.cursor)
    return ConflictPage(conflicts=page, next_cursor=cursor)


async def list_snapshots(a: ApiCall) -> SnapshotList:
    group = await a.call.scope(a.query_as(ScopeQuery).scope)
    found = await a.call.vera.list_snapshots(group)
    return SnapshotList(scope=group, snapshots=[SnapshotOut.of_scope(group, s) for s in found])


async def get_snapshot(a: ApiCall) -> SnapshotOut:
    p = a.path_as(SnapshotPath)
    group = await a.call.scope(p.scope)
    wanted = p.name.strip()
    for info in await a.call.vera.list_snapshots(group):
        if info.name == wanted:
            return SnapshotOut.of_scope(group, info)
    raise NotFoundError(f"no snapshot {wanted[:100]!r} in {group}")


R, C, F = ToolClass.READ, ToolClass.CONTEXT, ToolClass.FEEDBACK
READ = Scope.READ

READ_ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/search",
        "search",
        "Ranked, cited hits for a query",
        "search",
        READ,
        R,
        search,
        SearchResult,
        query_model=SearchQuery,
    ),
    Endpoint(
        "POST",
        "/v1/context-packs",
        "create_context_pack",
        "A context pack: the best cited items under a token budget (stored)",
        "search",
        READ,
        C,
        create_context_pack,
        ContextPackOut,
        body_model=ContextPackBody,
        status=201,
    ),
    Endpoint(
        "GET",
        "/v1/context-packs/{pack_id}",
        "get_context_pack",
        "One of your context packs again",
        "search",
        READ,
        C,
        get_context_pack,
        ContextPackOut,
        path_model=PackPath,
        etag=True,
    ),
    Endpoint(
        "POST",
        "/v1/context-packs/{pack_id}/feedback",
        "pack_feedback",
        "Vote on the item at a position of one of your packs",
        "feedback",
        Scope.FEEDBACK,
        F,
        pack_feedback,
        VoteOut,
        path_model=PackPath,
        body_model=PackFeedbackBody,
    ),
    Endpoint(
        "GET",
        "/v1/facts/{fact_id}",
        "get_fact",
        "One fact you can read, with its citation",
        "facts",
        READ,
        R,
        get_fact,
        FactOut,
        path_model=FactPath,
        etag=True,
    ),
    Endpoint(
        "GET",
        "/v1/facts/{fact_id}/explanation",
        "explain_fact",
        "Why VERA holds a fact: support, and the values it superseded or that superseded it",
        "facts",
        READ,
        R,
        explain_fact,
        FactExplanation,
        path_model=FactPath,
        etag=True,
    ),
    Endpoint(
        "GET",
        "/v1/facts/{fact_id}/evidence",
        "get_evidence",
        "Where a fact came from",
        "facts",
        READ,
        R,
        get_evidence,
        EvidenceOut,
        path_model=FactPath,
        etag=True,
    ),
    Endpoint(
        "GET",
        "/v1/facts/{fact_id}/history",
        "fact_history",
        "A fact's value over time, oldest first",
        "facts",
        READ,
        R,
        fact_history,
        FactHistory,
        path_model=FactPath,
        etag=True,
    ),
    Endpoint(
        "GET",
        "/v1/entities",
        "get_entities",
        "An entity by name, alias or id in each scope that knows it",
        "graph",
        READ,
        R,
        get_entities,
        EntityList,
        query_model=EntityQuery,
        etag=True,
    ),
    Endpoint(
        "GET",
        "/v1/explore",
        "explore",
        "The facts around an entity, breadth-first",
        "graph",
        READ,
        R,
        explore,
        Exploration,
        query_model=ExploreQuery,
        etag=True,
    ),
    Endpoint(
        "GET",
        "/v1/changes",
        "changes",
        "Facts published, superseded or retracted since a time",
        "changes",
        READ,
        R,
        changes,
        ChangePage,
        query_model=ChangesQuery,
    ),
    Endpoint(
        "GET",
        "/v1/conflicts",
        "conflicts",
        "Subjects whose functional predicate has competing values",
        "changes",
        READ,
        R,
        conflicts,
        ConflictPage,
        query_model=ConflictsQuery,
    ),
    Endpoint(
        "GET",
        "/v1/snapshots",
        "list_snapshots",
        "The snapshots of a scope",
        "snapshots",
        READ,
        R,
        list_snapshots,
        SnapshotList,
        query_model=ScopeQuery,
        etag=True,
    ),
    Endpoint(
        "GET",
        "/v1/snapshots/{scope}/{name}",
        "get_snapshot",
        "One snapshot of a scope",
        "snapshots",
        READ,
        R,
        get_snapshot,
        SnapshotOut,
        path_model=SnapshotPath,
        etag=True,
    ),
]
