"""The HTTP API's curation: sources (list, add, ingest request, retract, erase), episodes
(record, retract, erase), proposals and review, feedback, snapshots. Each handler is a
thin adapter over one client operation; SQL checks the caller's role in the scope."""

from __future__ import annotations

from typing import Any

from vera_mcp.adapters.api.endpoint import ApiCall, Endpoint
from vera_mcp.adapters.api.read_routes import get_snapshot
from vera_mcp.domain.access import Scope, ToolClass
from vera_mcp.domain.api_requests import (
    EpisodeBody,
    EpisodePath,
    EpisodeWithdrawBody,
    FactPath,
    FeedbackBody,
    IngestBody,
    PageQuery,
    ProposalBody,
    ReviewBody,
    ScopeQuery,
    SnapshotBody,
    SnapshotPath,
    SourceBody,
    SourceListQuery,
    SourcePath,
    WithdrawBody,
)
from vera_mcp.domain.api_shapes import (
    JobQueued,
    ProposalPage,
    SourceCreated,
    SourcePage,
    SourceRowOut,
    WithdrawalOut,
)
from vera_mcp.domain.knowledge_shapes import ProposalOut, ProposalStateOut, RetractedProposalOut, SourceOut
from vera_mcp.domain.knowledge_shapes import RememberedOut as EpisodeOut
from vera_mcp.domain.shapes import PendingItem, PendingList, ReviewOut, SnapshotOut, VoteOut


async def list_sources(a: ApiCall) -> SourcePage:
    q = a.query_as(SourceListQuery)
    group = await a.call.scope(q.scope) if q.scope is not None else None
    page, cursor = a.page(await a.call.vera.list_sources(group), q.limit, q.cursor)
    return SourcePage(sources=[SourceRowOut.of(s) for s in page], next_cursor=cursor)


async def add_source(a: ApiCall) -> SourceCreated:
    b = a.body_as(SourceBody)
    group = await a.call.scope(b.scope)
    source_id = await a.call.vera.register_source(
        group, b.kind, b.name, b.tier, token_env=b.token_env, config=b.config, uri=b.uri
    )
    return SourceCreated(source_id=source_id, group_id=group)


async def get_source(a: ApiCall) -> SourceOut:
    return SourceOut.of(await a.call.vera.get_source(a.path_as(SourcePath).source_id, max_episodes=100))


async def _source_group(a: ApiCall) -> str:
    """The scope of a source the caller reads (NotFoundError otherwise, as for an unknown id)."""
    return (await a.call.vera.get_source(a.path_as(SourcePath).source_id, max_episodes=1)).group_id


async def request_ingest(a: ApiCall) -> JobQueued:
    group = await _source_group(a)
    job = await a.call.vera.request_ingest(group, a.path_as(SourcePath).source_id, a.body_as(IngestBody).path)
    return JobQueued(job_id=job)


async def retract_source(a: ApiCall) -> WithdrawalOut:
    group = await _source_group(a)
    done = await a.call.vera.retract_source(
        group, a.path_as(SourcePath).source_id, a.body_as(WithdrawBody).reason
    )
    return WithdrawalOut.of(done)


async def erase_source(a: ApiCall) -> WithdrawalOut:
    group = await _source_group(a)
    done = await a.call.vera.erase_source(
        group, a.path_as(SourcePath).source_id, a.body_as(WithdrawBody).reason
    )
    return WithdrawalOut.of(done)


async def record_episode(a: ApiCall) -> EpisodeOut:
    b = a.body_as(EpisodeBody)
    group = await a.call.scope(b.scope) if b.scope is not None else None
    said: str | list[dict[str, Any]] = (
        b.text if b.text is not None else [m.model_dump(exclude_none=True) for m in b.messages or ()]
    )
    return EpisodeOut.of(await a.call.vera.remember(said, source=b.source, at=b.at, group=group))


async def retract_episode(a: ApiCall) -> WithdrawalOut:
    b = a.body_as(EpisodeWithdrawBody)
    group = await a.call.scope(b.scope)
    return WithdrawalOut.of(
        await a.call.vera.retract_episode(group, a.path_as(EpisodePath).episode_id, b.reason)
    )


async def erase_episode(a: ApiCall) -> WithdrawalOut:
    b = a.body_as(EpisodeWithdrawBody)
    group = await a.call.scope(b.scope)
    return WithdrawalOut.of(
        await a.call.vera.erase_episode(group, a.path_as(EpisodePath).episode_id, b.reason)
    )


async def list_proposals(a: ApiCall) -> ProposalPage:
    q = a.query_as(PageQuery)
    page, cursor = a.page(await a.call.vera.list_proposals(limit=1000), q.limit, q.cursor)
    return ProposalPage(proposals=[ProposalStateOut.of(p) for p in page], next_cursor=cursor)


async def propose(a: ApiCall) -> ProposalOut:
    b = a.body_as(ProposalBody)
    group = await a.call.scope(b.scope)
    return ProposalOut.of(await a.call.vera.propose(b.subject, b.predicate, b.object, b.evidence, group))


async def retract_proposal(a: ApiCall) -> RetractedProposalOut:
    return RetractedProposalOut.of(await a.call.vera.retract_proposal(a.path_as(FactPath).fact_id))


async def pending_reviews(a: ApiCall) -> PendingList:
    group = await a.call.scope(a.query_as(ScopeQuery).scope)
    items = [PendingItem.of_claim(c) for c in await a.call.vera.pending_reviews(group)]
    items += [PendingItem.of_passage(group, p) for p in await a.call.vera.pending_passages(group)]
    return PendingList(scope=group, items=items)


async def review(a: ApiCall) -> ReviewOut:
    b = a.body_as(ReviewBody)
    group = await a.call.scope(b.scope)
    if b.kind == "fact":
        claim = await a.call.vera.review(group, b.item_id, b.decision, b.note)
        return ReviewOut(
            kind=b.kind, item_id=claim.fact_id, group_id=claim.group_id, lifecycle=claim.lifecycle
        )
    passage = await a.call.vera.review_passage(group, b.item_id, b.decision, b.note)
    return ReviewOut(
        kind=b.kind, item_id=passage.chunk_id, group_id=passage.group_id, lifecycle=passage.lifecycle
    )


async def feedback(a: ApiCall) -> VoteOut:
    b = a.body_as(FeedbackBody)
    vote = await a.call.vera.feedback(
        b.kind,
        b.item_id,
        b.query,
        b.vote,
        as_of=b.as_of,
        groups=await a.call.scopes(b.scopes),
        during=b.during.days() if b.during is not None else None,
    )
    return VoteOut.of(vote)


async def create_snapshot(a: ApiCall) -> SnapshotOut:
    b = a.body_as(SnapshotBody)
    group = await a.call.scope(b.scope)
    await a.call.vera.create_snapshot(group, b.name)
    a.path = SnapshotPath(scope=group, name=b.name)
    return await get_snapshot(a)


ADMIN, REVIEW, PROPOSE = Scope.ADMIN, Scope.REVIEW, Scope.PROPOSE
A, V, P = ToolClass.ADMIN, ToolClass.REVIEW, ToolClass.PROPOSE

WRITE_ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/sources",
        "list_sources",
        "The sources you read, by name",
        "sources",
        Scope.READ,
        ToolClass.READ,
        list_sources,
        SourcePage,
        query_model=SourceListQuery,
        etag=True,
    ),
    Endpoint(
        "POST",
        "/v1/sources",
        "add_source",
        "Register (or update, by name) a source (admins)",
        "sources",
        ADMIN,
        A,
        add_source,
        SourceCreated,
        body_model=SourceBody,
        status=201,
    ),
    Endpoint(
        "GET",
        "/v1/sources/{source_id}",
        "get_source",
        "A source, its freshness and its versions",
        "sources",
        Scope.READ,
        ToolClass.READ,
        get_source,
        SourceOut,
        path_model=SourcePath,
        etag=True,
    ),
    Endpoint(
        "POST",
        "/v1/sources/{source_id}/ingest-requests",
        "request_ingest",
        "Queue an ingestion run of a source for the worker",
        "sources",
        ADMIN,
        A,
        request_ingest,
        JobQueued,
        path_model=SourcePath,
        body_model=IngestBody,
        status=202,
    ),
    Endpoint(
        "POST",
        "/v1/sources/{source_id}/retraction",
        "retract_source",
        "Retract a source: its knowledge stops being served (admins)",
        "sources",
        ADMIN,
        A,
        retract_source,
        WithdrawalOut,
        path_model=SourcePath,
        body_model=WithdrawBody,
    ),
    Endpoint(
        "POST",
        "/v1/sources/{source_id}/erasure",
        "erase_source",
        "Erase a source: its text is deleted everywhere (admins)",
        "sources",
        ADMIN,
        A,
        erase_source,
        WithdrawalOut,
        path_model=SourcePath,
        body_model=WithdrawBody,
    ),
    Endpoint(
        "POST",
        "/v1/episodes",
        "record_episode",
        "Record a text or transcript as an episode (remember)",
        "episodes",
        PROPOSE,
        P,
        record_episode,
        EpisodeOut,
        body_model=EpisodeBody,
        status=201,
    ),
    Endpoint(
        "POST",
        "/v1/episodes/{episode_id}/retraction",
        "retract_episode",
        "Retract an episode (admins)",
        "episodes",
        ADMIN,
        A,
        retract_episode,
        WithdrawalOut,
        path_model=EpisodePath,
        body_model=EpisodeWithdrawBody,
    ),
    Endpoint(
        "POST",
        "/v1/episodes/{episode_id}/erasure",
        "erase_episode",
        "Erase an episode (admins)",
        "episodes",
        ADMIN,
        A,
        erase_episode,
        WithdrawalOut,
        path_model=EpisodePath,
        body_model=EpisodeWithdrawBody,
    ),
    Endpoint(
        "GET",
        "/v1/proposals",
        "list_proposals",
        "Your proposals, newest first",
        "proposals",
        PROPOSE,
        P,
        list_proposals,
        ProposalPage,
        query_model=PageQuery,
    ),
    Endpoint(
        "POST",
        "/v1/proposals",
        "propose",
        "Propose a claim for a shared scope (a reviewer decides)",
        "proposals",
        PROPOSE,
        P,
        propose,
        ProposalOut,
        body_model=ProposalBody,
        status=201,
    ),
    Endpoint(
        "DELETE",
        "/v1/proposals/{fact_id}",
        "retract_proposal",
        "Withdraw one of your waiting proposals",
        "proposals",
        PROPOSE,
        P,
        retract_proposal,
        RetractedProposalOut,
        path_model=FactPath,
    ),
    Endpoint(
        "GET",
        "/v1/reviews",
        "pending_reviews",
        "Claims and passages waiting for a decision (admins)",
        "reviews",
        REVIEW,
        V,
        pending_reviews,
        PendingList,
        query_model=ScopeQuery,
    ),
    Endpoint(
        "POST",
        "/v1/reviews",
        "review",
        "Approve or reject a pending claim or passage (admins)",
        "reviews",
        REVIEW,
        V,
        review,
        ReviewOut,
        body_model=ReviewBody,
    ),
    Endpoint(
        "POST",
        "/v1/feedback",
        "feedback",
        "Say whether a hit helped",
        "feedback",
        Scope.FEEDBACK,
        ToolClass.FEEDBACK,
        feedback,
        VoteOut,
        body_model=FeedbackBody,
    ),
    Endpoint(
        "POST",
        "/v1/snapshots",
        "create_snapshot",
        "Freeze what search answers in a scope now (admins)",
        "snapshots",
        Scope.SNAPSHOT,
        ToolClass.SNAPSHOT,
        create_snapshot,
        SnapshotOut,
        body_model=SnapshotBody,
        status=201,
    ),
]
