"""What the tools answer: pydantic models, so that the SDK publishes their JSON
Schema as each tool's output schema, built from the client's values."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field

from vera_client.api.access import Membership
from vera_client.api.curation import PendingPassage, PendingReview
from vera_client.api.search import Hit, Vote
from vera_client.api.snapshots import SnapshotInfo
from vera_client.domain.time_scopes import TimeRange


class ScopeInfo(BaseModel):
    """A scope the caller reaches: name it by group_id (or by name when no other scope shares it)."""

    group_id: str
    kind: str = Field(description="organisation, workspace, project or personal")
    name: str
    parent_group_id: str | None
    role: str = Field(description="the caller's role there: viewer, member, admin or owner")


class WhoAmI(BaseModel):
    principal_id: UUID
    display_name: str
    principal_kind: str
    via: str = Field(description="how the token was verified: api_key or oidc")
    token_scopes: list[str] = Field(
        description="what the token may attempt (roles in each scope still decide)"
    )
    scopes: list[ScopeInfo]
    server_version: str
    search_version: str
    limits: dict[str, int]


class SignalsOut(BaseModel):
    """The seven signals of the blend, each in [0, 1]."""

    relevance: float
    authority: float
    verification: float
    recency: float
    feedback: float
    confidence: float
    period: float | None = Field(
        default=None,
        description="the hit's time against the period the query asks about; null when it asks about none",
    )


class HitOut(BaseModel):
    """One ranked hit. Give feedback with its kind and item_id and the query that found it."""

    rank: int
    kind: str = Field(description="fact or passage")
    item_id: UUID
    group_id: str
    text: str
    score: float
    signals: SignalsOut
    citation: dict[str, Any] = Field(
        description="source, episode, chunk, evidence, validity, tier, verification"
    )
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    blend_score: float | None = None
    rerank_score: float | None = None

    @classmethod
    def of(cls, hit: Hit) -> HitOut:
        s = hit.signals
        return cls(
            rank=hit.rank,
            kind=hit.kind,
            item_id=hit.item_id,
            group_id=hit.group_id,
            text=hit.text,
            score=hit.score,
            signals=SignalsOut(
                relevance=s.relevance,
                authority=s.authority,
                verification=s.verification,
                recency=s.recency,
                feedback=s.feedback,
                confidence=s.confidence,
                period=s.period,
            ),
            citation=hit.citation,
            subject=hit.subject,
            predicate=hit.predicate,
            object=hit.object,
            blend_score=hit.blend_score,
            rerank_score=hit.rerank_score,
        )


class PeriodOut(BaseModel):
    """The period a search asked about: the `during` passed, or the one the query's words state."""

    start: date | None = Field(description="first day; null: open")
    end: date | None = Field(description="the day after the last; null: open")
    text: str = Field(description="the words it was read from (a period passed reads 'start .. end')")

    @classmethod
    def of(cls, period: TimeRange | None) -> PeriodOut | None:
        return cls(start=period.start, end=period.end, text=period.text) if period is not None else None


class SearchResult(BaseModel):
    query: str
    as_of: datetime | None = Field(description="knowledge time asked for; null: now")
    snapshot: str | None = None
    during: PeriodOut | None = Field(
        default=None,
        description="the period asked about, passed or read from the query's words (the period signal "
        "compares hits with it); null: none",
    )
    hits: list[HitOut]


class VoteOut(BaseModel):
    feedback_id: UUID
    group_id: str
    created: bool = Field(description="false when this vote replaced the caller's earlier one")
    signals: dict[str, float | None]

    @classmethod
    def of(cls, vote: Vote) -> VoteOut:
        return cls(
            feedback_id=vote.feedback_id, group_id=vote.group_id, created=vote.created, signals=vote.signals
        )


class SnapshotOut(BaseModel):
    snapshot_id: UUID
    scope: str
    name: str
    created_at: datetime
    sealed: bool
    item_count: int
    embedding_model: str | None
    search_version: str

    @classmethod
    def of(cls, scope: str, info: SnapshotInfo) -> SnapshotOut:
        return cls(
            snapshot_id=info.snapshot_id,
            scope=scope,
            name=info.name,
            created_at=info.created_at,
            sealed=info.sealed,
            item_count=info.item_count,
            embedding_model=info.embedding_model,
            search_version=info.search_version,
        )


class SnapshotList(BaseModel):
    scope: str
    snapshots: list[SnapshotOut]


class PendingItem(BaseModel):
    """A claim (fact) or a passage waiting for an admin's decision."""

    kind: str = Field(description="fact or passage; pass it to review")
    item_id: UUID
    group_id: str
    lifecycle: str
    text: str
    tier: int | None
    verification: str
    proposed_by: UUID | None
    recorded_at: datetime
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    source: str | None = None

    @classmethod
    def of_claim(cls, review: PendingReview) -> PendingItem:
        return cls(
            kind="fact",
            item_id=review.fact_id,
            group_id=review.fact_group_id,
            lifecycle=review.lifecycle,
            text=review.fact_text,
            tier=review.tier,
            verification=review.verification,
            proposed_by=review.proposed_by,
            recorded_at=review.recorded_at,
            subject=review.subject,
            predicate=review.predicate,
            object=review.object,
        )

    @classmethod
    def of_passage(cls, group_id: str, passage: PendingPassage) -> PendingItem:
        return cls(
            kind="passage",
            item_id=passage.chunk_id,
            group_id=group_id,
            lifecycle=passage.lifecycle,
            text=passage.text,
            tier=passage.tier,
            verification=passage.verification,
            proposed_by=passage.proposed_by,
            recorded_at=passage.stored_at,
            source=passage.source_name,
        )


class PendingList(BaseModel):
    scope: str
    items: list[PendingItem]


class ReviewOut(BaseModel):
    kind: str
    item_id: UUID
    group_id: str = Field(description="where the decided item now lives (an approved proposal is copied)")
    lifecycle: str


def scope_infos(memberships: list[Membership]) -> list[ScopeInfo]:
    return [
        ScopeInfo(
            group_id=m.group_id,
            kind=m.group_kind,
            name=m.group_name,
            parent_group_id=m.parent_group_id,
            role=m.role,
        )
        for m in memberships
    ]
