"""What the tools answer: pydantic models, so that the SDK publishes their JSON
Schema as each tool's output schema, filled from the client's values. A model of
one of the client's rows is derived from it (domain/rows.py); those written here
reshape or gather rows for an agent."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, Field

from vera_client.api.access import Membership
from vera_client.api.curation import PendingPassage, PendingReview
from vera_client.api.hits import Hit, Signals
from vera_client.api.search import Vote
from vera_client.api.snapshots import SnapshotInfo
from vera_client.domain.time_scopes import TimeRange
from vera_mcp.domain.rows import FromClient, mirrors


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


@mirrors(Signals)
class SignalsOut(FromClient):
    """The seven signals of the blend, each in [0, 1]."""


@mirrors(Hit)
class HitOut(FromClient):
    """One ranked hit. Give feedback with its kind and item_id and the query that found it."""


@mirrors(TimeRange, without=["char_start"])
class PeriodOut(FromClient):
    """The period a search asked about: the `during` passed, or the one the query's words state."""


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
    no_good_match: bool = Field(
        description="true when no hit is a good match (none, or the best one's confidence is below 0.5): "
        "nothing known answers the query; say so rather than cite a weak hit"
    )


@mirrors(Vote)
class VoteOut(FromClient):
    pass


@mirrors(SnapshotInfo, without=["embedding_dim", "weights", "pins"])
class SnapshotOut(FromClient):
    scope: str

    @classmethod
    def of_scope(cls, scope: str, info: SnapshotInfo) -> SnapshotOut:
        return cls.model_validate({**asdict(info), "scope": scope})


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
