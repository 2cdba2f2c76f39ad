"""What the knowledge, proposal and context-pack tools answer: pydantic models
(the SDK publishes their JSON Schema as each tool's output schema), read from
the client's frozen dataclasses by attribute. Every result carries the ids an
agent needs to ask further (fact, entity, source, episode, pack) and the
citation of each fact."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from vera_client.api.reads import ConflictValue, TimelineFact
from vera_mcp.domain.shapes import PeriodOut, SignalsOut


class FromClient(BaseModel):
    """A model filled from the client's value of the same field names."""

    model_config = ConfigDict(from_attributes=True)

    @classmethod
    def of(cls, value: object) -> Self:
        return cls.model_validate(value, from_attributes=True)


class FactOut(FromClient):
    """One fact with its citation; ask further with its fact_id (explain_fact, get_evidence)."""

    fact_id: UUID
    group_id: str
    subject: str
    predicate: str
    object: str
    fact_text: str
    lifecycle: str = Field(description="published, superseded, retracted, pending_review, proposal, …")
    tier: int
    authority: float
    verification: str
    confidence: float
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    proposed_for: str | None = Field(description="for a proposal: the scope it is meant for")
    citation: dict[str, Any] = Field(description="source, episode, chunk and evidence span")


class FactExplanation(BaseModel):
    """A fact, the statements that support it, and the values of its subject and predicate it
    superseded or that superseded it (each with its citation)."""

    fact: FactOut
    supporting: list[FactOut]
    superseded: list[FactOut] = Field(description="earlier values this fact replaced")
    superseding: list[FactOut] = Field(description="later values that replaced this fact")

    @classmethod
    def of(cls, timeline: list[TimelineFact]) -> FactExplanation:
        by_relation: dict[str, list[FactOut]] = {
            "fact": [],
            "supporting": [],
            "superseded": [],
            "superseding": [],
        }
        for row in timeline:
            by_relation.setdefault(row.relation, []).append(FactOut.of(row))
        [fact] = by_relation["fact"]  # explain_fact answers the fact itself once, or refuses
        return cls(
            fact=fact,
            supporting=by_relation["supporting"],
            superseded=by_relation["superseded"],
            superseding=by_relation["superseding"],
        )


class EvidenceOut(FromClient):
    """Where a fact came from; nulls where it has no such provenance (or it was erased)."""

    fact_id: UUID
    group_id: str
    source_id: UUID | None
    source_name: str | None
    source_kind: str | None
    tier: int
    episode_id: UUID | None
    external_id: str | None
    version: int | None
    title: str | None
    uri: str | None
    observed_at: datetime | None
    recorded_at: datetime | None
    chunk_id: UUID | None
    ordinal: int | None
    heading: str | None
    chunk_text: str | None
    evidence_start: int | None
    evidence_end: int | None
    evidence_text: str | None = Field(description="the span of the chunk the fact cites")


class EntityFactOut(FactOut):
    role: str = Field(description="the entity's place in the fact: subject or object")


class EntityOut(FromClient):
    """An entity of one group (entities belong to one group), its aliases and its facts then."""

    entity_id: UUID
    group_id: str
    canonical_name: str
    entity_type: str | None
    aliases: list[str]
    facts: list[EntityFactOut]


class EntityList(BaseModel):
    name_or_id: str
    as_of: datetime | None = Field(description="knowledge time asked for; null: now")
    entities: list[EntityOut] = Field(description="one per group searched that knows the entity")


class SourceVersionOut(FromClient):
    """A version of one record of a source (an episode)."""

    episode_id: UUID
    external_id: str
    version: int
    title: str | None
    observed_at: datetime
    recorded_at: datetime
    status: str
    retracted: bool


class SourceOut(FromClient):
    """A source, its freshness and its versions, newest first."""

    source_id: UUID
    group_id: str
    kind: str
    name: str
    uri: str | None
    trust_tier: int
    created_at: datetime
    retracted_at: datetime | None
    episode_count: int
    last_recorded_at: datetime | None
    last_observed_at: datetime | None
    age_seconds: float | None = Field(description="seconds since its last version was recorded")
    versions: list[SourceVersionOut]


class ExploredFactOut(FactOut):
    hop: int = Field(description="1: the fact names the starting entity; n: reached through n-1 others")


class Exploration(BaseModel):
    entity: str
    depth: int
    as_of: datetime | None
    facts: list[ExploredFactOut]


class FactChangeOut(FactOut):
    change: str = Field(description="published, superseded or retracted")
    at: datetime


class ChangeList(BaseModel):
    since: datetime
    changes: list[FactChangeOut] = Field(description="newest first")


class ConflictingValueOut(FromClient):
    fact_id: UUID
    group_id: str
    object: str
    lifecycle: str
    tier: int
    authority: float
    verification: str
    source_id: UUID | None
    source_name: str | None
    valid_from: datetime
    recorded_at: datetime
    proposed_for: str | None


class ConflictOut(BaseModel):
    """A subject and functional predicate with two or more different current values."""

    conflict: int
    subject: str
    predicate: str
    values: list[ConflictingValueOut]


class ConflictList(BaseModel):
    conflicts: list[ConflictOut]

    @classmethod
    def of(cls, rows: list[ConflictValue]) -> ConflictList:
        grouped: dict[int, ConflictOut] = {}
        for row in rows:  # one row per value, numbered by subject and predicate
            key = grouped.setdefault(
                row.conflict, ConflictOut(conflict=row.conflict, subject=row.subject, predicate=row.predicate,
                                          values=[])
            )  # fmt: skip
            key.values.append(ConflictingValueOut.of(row))
        return cls(conflicts=list(grouped.values()))


class ProposalOut(FromClient):
    """A proposal: it waits in your personal scope (group_id) for the review of proposed_for."""

    fact_id: UUID
    group_id: str
    proposed_for: str
    lifecycle: str
    source_id: UUID
    episode_id: UUID
    chunk_id: UUID


class ProposalStateOut(FromClient):
    fact_id: UUID
    proposed_for: str
    subject: str
    predicate: str
    object: str
    fact_text: str
    lifecycle: str = Field(description="proposal (waiting), accepted, rejected or retracted")
    evidence: str | None
    recorded_at: datetime
    reviewed_at: datetime | None


class ProposalList(BaseModel):
    proposals: list[ProposalStateOut] = Field(description="yours, newest first")


class RetractedProposalOut(FromClient):
    fact_id: UUID
    lifecycle: str


class PackItemOut(FromClient):
    """An item of a pack; vote on it with pack_feedback(pack_id, position)."""

    position: int
    kind: str = Field(description="fact or passage")
    item_id: UUID
    group_id: str
    text: str = Field(description="empty once the source it came from was erased")
    tokens: int
    citation: dict[str, Any]
    signals: SignalsOut
    erased: bool = Field(description="the source it came from was erased since the pack was made")


class OmissionOut(FromClient):
    kind: str
    item_id: UUID
    reason: str = Field(description="over_budget, below_min_authority or above_max_tier")
    tokens: int | None


class PackValueOut(FromClient):
    fact_id: UUID
    group_id: str
    object: str
    lifecycle: str
    tier: int
    authority: float
    source_name: str | None


class PackConflictOut(FromClient):
    subject: str
    predicate: str
    values: list[PackValueOut]


class WarningOut(FromClient):
    kind: str
    item_id: UUID
    reason: str = Field(description="superseded, ended or stale")
    detail: str


class ContextPackOut(FromClient):
    """A context pack as it was stored: get_context_pack(pack_id) answers it again."""

    pack_id: UUID
    created_at: datetime
    query: str
    token_budget: int
    tokens_used: int = Field(description="the items' tokens, at most token_budget")
    as_of: datetime | None
    searched_groups: list[str]
    min_authority: float | None
    max_tier: int | None
    during: PeriodOut | None = Field(
        default=None,
        description="the period its search asked about, passed or read from the query; null: none",
    )
    assembler_version: str
    items: list[PackItemOut] = Field(description="in the pack's order, position from 1")
    omitted: list[OmissionOut] = Field(description="hits left out, and why")
    conflicts: list[PackConflictOut] = Field(description="competing values of packed facts, side by side")
    warnings: list[WarningOut] = Field(description="packed facts that may no longer hold")
    weights: dict[str, Any] | None = Field(description="the ranking weights of each group packed")
