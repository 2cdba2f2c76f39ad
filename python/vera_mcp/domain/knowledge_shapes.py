"""What the knowledge, proposal and context-pack tools answer: pydantic models
(the SDK publishes their JSON Schema as each tool's output schema), read from
the client's frozen dataclasses by attribute. A model of one of the client's rows
is derived from it (domain/rows.py); those written here gather rows for an agent.
Every result carries the ids an agent needs to ask further (fact, entity, source,
episode, pack) and the citation of each fact."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field

from vera_client.api.context import Remembered
from vera_client.api.curation import Proposal, ProposalState, RetractedProposal
from vera_client.api.reads import (
    ConflictValue,
    Entity,
    Evidence,
    ExploredFact,
    Fact,
    FactChange,
    SourceDetail,
    TimelineFact,
)
from vera_client.domain.context import ConflictSet, FreshnessWarning, Omission, PackItem
from vera_mcp.domain.rows import FromClient, mirrors

# imported before any model here is derived: it declares the models of Signals and TimeRange
# that PackItemOut and ContextPackOut hold (one model per row, domain/rows.py)
from vera_mcp.domain.shapes import PeriodOut


@mirrors(Fact)
class FactOut(FromClient):
    """One fact with its citation; ask further with its fact_id (explain_fact, get_evidence)."""


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


@mirrors(Evidence)
class EvidenceOut(FromClient):
    """Where a fact came from; nulls where it has no such provenance (or it was erased)."""


@mirrors(Entity)
class EntityOut(FromClient):
    """An entity of one group (entities belong to one group), its aliases and its facts then."""


class EntityList(BaseModel):
    name_or_id: str
    as_of: datetime | None = Field(description="knowledge time asked for; null: now")
    entities: list[EntityOut] = Field(description="one per group searched that knows the entity")


@mirrors(SourceDetail)
class SourceOut(FromClient):
    """A source, its freshness and its versions, newest first."""


@mirrors(ExploredFact)
class ExploredFactOut(FromClient):
    pass


class Exploration(BaseModel):
    entity: str
    depth: int
    as_of: datetime | None
    facts: list[ExploredFactOut]


@mirrors(FactChange)
class FactChangeOut(FromClient):
    pass


class ChangeList(BaseModel):
    since: datetime
    changes: list[FactChangeOut] = Field(description="newest first")


@mirrors(ConflictValue, without=["conflict", "subject", "predicate"])
class ConflictingValueOut(FromClient):
    """One of the competing values, and where it comes from."""


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


@mirrors(Proposal)
class ProposalOut(FromClient):
    """A proposal: it waits in your personal scope (group_id) for the review of proposed_for."""


@mirrors(RetractedProposal)
class RetractedProposalOut(FromClient):
    pass


@mirrors(ProposalState)
class ProposalStateOut(FromClient):
    pass


class ProposalList(BaseModel):
    proposals: list[ProposalStateOut] = Field(description="yours, newest first")


@mirrors(PackItem)
class PackItemOut(FromClient):
    """An item of a pack; vote on it with pack_feedback(pack_id, position)."""


@mirrors(Omission)
class OmissionOut(FromClient):
    pass


@mirrors(ConflictSet)
class PackConflictOut(FromClient):
    pass


@mirrors(FreshnessWarning)
class WarningOut(FromClient):
    pass


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


# claims are never passed to remember (propose is the agent's way): their counts are always 0
@mirrors(Remembered, without=["claims_recorded", "claims_published"])
class RememberedOut(FromClient):
    """What was recorded: one episode of a source; created is false when the same content was
    remembered before (nothing new was recorded)."""
