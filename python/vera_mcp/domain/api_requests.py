"""The typed parameters of the HTTP API's routes (path, query and body), with the bounds of
limits.py and the argument types the MCP tools use, so that the OpenAPI document states
them and a request beyond them is refused (422) before any work starts."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vera_mcp.domain.arguments import (
    AsOf,
    Day,
    Depth,
    During,
    EntityName,
    EvidenceText,
    ItemKind,
    K,
    MaxTier,
    MinAuthority,
    Note,
    Object,
    Period,
    Position,
    Predicate,
    Query,
    ScopeName,
    SnapshotName,
    Subject,
    TokenBudget,
    Vote,
)
from vera_mcp.domain.limits import LIMITS

Limit = Annotated[
    int, Field(ge=LIMITS.min_rows, le=LIMITS.max_rows, description="at most this many per page")
]
Cursor = Annotated[
    str | None, Field(max_length=200, description="next_cursor of the previous page, as it came")
]
Scopes = Annotated[
    list[ScopeName] | None,
    Field(max_length=LIMITS.max_scopes, description="scopes to read (repeat the parameter); default: all"),
]
Reason = Annotated[str | None, Field(max_length=LIMITS.max_note_chars, description="kept in the audit log")]
Role = Literal["viewer", "member", "admin", "owner"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FactPath(Strict):
    fact_id: UUID


class PackPath(Strict):
    pack_id: UUID


class SourcePath(Strict):
    source_id: UUID


class EpisodePath(Strict):
    episode_id: UUID


class KeyPath(Strict):
    prefix: Annotated[str, Field(min_length=1, max_length=100, description="the key's public prefix")]


class SnapshotPath(Strict):
    scope: ScopeName
    name: SnapshotName


class MemberPath(Strict):
    scope: ScopeName
    principal_id: UUID


class SearchQuery(Strict):
    q: Query
    k: K = 10
    as_of: AsOf = None
    scopes: Scopes = None
    snapshot: Annotated[
        str | None,
        Field(max_length=LIMITS.max_name_chars, description="search this snapshot of the one scope named"),
    ] = None
    during_start: Annotated[Day, Field(description="the period asked about: its first day (YYYY-MM-DD)")] = (
        None
    )
    during_end: Annotated[Day, Field(description="the period asked about: the day after its last")] = None
    lexical_weight: Annotated[
        float, Field(ge=0, le=10, description="weight of the words half of the blend")
    ] = 1.0
    vector_weight: Annotated[
        float, Field(ge=0, le=10, description="weight of the vector half of the blend")
    ] = 1.0
    candidates: Annotated[int | None, Field(ge=1, le=1000, description="candidates per half")] = None
    rerank: Annotated[bool, Field(description="rerank the head when a reranker is configured")] = True

    @model_validator(mode="after")
    def _period(self) -> Self:
        if self.during_start and self.during_end and self.during_start >= self.during_end:
            raise ValueError("during_end must come after during_start")
        return self

    def during(self) -> Period | None:
        if self.during_start is None and self.during_end is None:
            return None
        # Period takes days as YYYY-MM-DD strings only (a number of seconds is no day): the query's
        # days, already parsed, are passed in that form (a date object itself was refused: a 500)
        start, end = self.during_start, self.during_end
        return Period(
            start=start.isoformat() if start is not None else None,  # type: ignore[arg-type]
            end=end.isoformat() if end is not None else None,  # type: ignore[arg-type]
        )


class ContextPackBody(Strict):
    query: Query
    token_budget: TokenBudget = 2000
    as_of: AsOf = None
    scopes: Scopes = None
    min_authority: MinAuthority = None
    max_tier: MaxTier = None
    during: During = None


class PackFeedbackBody(Strict):
    position: Position
    vote: Vote


class FeedbackBody(Strict):
    kind: ItemKind
    item_id: UUID
    query: Query
    vote: Vote
    as_of: AsOf = None
    scopes: Scopes = None
    during: During = None


class EntityQuery(Strict):
    name: EntityName
    as_of: AsOf = None
    scopes: Scopes = None


class ExploreQuery(Strict):
    entity: EntityName
    depth: Depth = 2
    as_of: AsOf = None
    scopes: Scopes = None
    limit: Limit = 100


class PageQuery(Strict):
    limit: Limit = 100
    cursor: Cursor = None


class SourceListQuery(PageQuery):
    scope: Annotated[ScopeName | None, Field(description="one scope; default: every scope you read")] = None


class ScopeQuery(Strict):
    scope: ScopeName


class HealthQuery(Strict):
    scope: Annotated[
        ScopeName | None, Field(description="one scope; default: every scope you administer")
    ] = None
    stalled_after: Annotated[
        float,
        Field(
            ge=1,
            le=3600,
            description="a running job counts as stalled when its worker sent no heartbeat for this many "
            "seconds (the worker's VERA_WORKER__STALLED_AFTER; default 30)",
        ),
    ] = 30.0
    usage_days: Annotated[
        int,
        Field(
            ge=1,
            le=366,
            description="the model usage covers today (UTC) and the days before it, this many in all "
            "(default 30)",
        ),
    ] = 30


class ChangesQuery(PageQuery):
    since: Annotated[datetime, Field(description="what changed after this time (ISO 8601)")]
    scopes: Scopes = None


class ConflictsQuery(PageQuery):
    scopes: Scopes = None


class SourceBody(Strict):
    scope: ScopeName
    kind: Annotated[str, Field(min_length=1, max_length=50, description="folder, git, confluence, ...")]
    name: Annotated[str, Field(min_length=1, max_length=LIMITS.max_name_chars)]
    tier: Annotated[int, Field(ge=1, le=4, description="trust tier: 1 authoritative .. 4 proposed")]
    uri: Annotated[str | None, Field(max_length=2000)] = None
    token_env: Annotated[
        str | None, Field(max_length=200, description="the environment variable holding its token")
    ] = None
    config: dict[str, Any] = Field(default_factory=dict, description="the connector's settings")


class IngestBody(Strict):
    path: Annotated[str | None, Field(max_length=4096, description="one path under the source only")] = None


class WithdrawBody(Strict):
    reason: Reason = None


class EpisodeWithdrawBody(Strict):
    scope: ScopeName
    reason: Reason = None


class MessageIn(Strict):
    role: Annotated[str, Field(min_length=1, max_length=LIMITS.max_speaker_chars)]
    content: Annotated[str, Field(min_length=1, max_length=LIMITS.max_message_chars)]
    name: Annotated[str | None, Field(max_length=LIMITS.max_speaker_chars)] = None


class EpisodeBody(Strict):
    """A text or a chat transcript (exactly one) to record as an episode of a source."""

    text: Annotated[str | None, Field(min_length=1, max_length=LIMITS.max_remember_chars)] = None
    messages: Annotated[list[MessageIn] | None, Field(min_length=1, max_length=LIMITS.max_messages)] = None
    source: Annotated[str, Field(min_length=1, max_length=LIMITS.max_name_chars)] = "memory"
    at: Annotated[datetime | None, Field(description="when it was said; default now")] = None
    scope: Annotated[ScopeName | None, Field(description="default: your personal scope")] = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.text is None) == (self.messages is None):
            raise ValueError("pass either text or messages, not both nor neither")
        return self


class ProposalBody(Strict):
    subject: Subject
    predicate: Predicate
    object: Object
    evidence: EvidenceText
    scope: Annotated[ScopeName, Field(description="the shared scope the claim is meant for")]


class ReviewBody(Strict):
    scope: ScopeName
    item_id: UUID
    decision: Literal["approve", "reject"]
    kind: ItemKind = "fact"
    note: Note = None


class SnapshotBody(Strict):
    scope: ScopeName
    name: SnapshotName


class KeyBody(Strict):
    name: Annotated[str, Field(min_length=1, max_length=LIMITS.max_name_chars)]
    expires_at: Annotated[datetime | None, Field(description="default: never")] = None


class PrincipalBody(Strict):
    scope: ScopeName
    kind: Literal["user", "service"]
    name: Annotated[str, Field(min_length=1, max_length=LIMITS.max_name_chars)]
    role: Role = "member"
    email: Annotated[str | None, Field(max_length=320)] = None


class MemberBody(Strict):
    role: Role
