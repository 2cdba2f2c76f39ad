"""Reads: facts with their citations, evidence and history, entities, sources, what lies
around an entity (in SQL or walked on the graph), recent changes and conflicts
(sql/functions/185_read_facts.sql, 210_fact_reads.sql, 211_entities_sources.sql,
212_explore.sql, 213_changes_conflicts.sql; queries in reads.sql; tests in pg_tests/reads/).
Each answers as the caller, through row-level security: another tenant's id reads as an id
that does not exist."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from vera_client.api.call import Call, Rows, expects, listed, record, records, row_columns
from vera_client.api.operation import Plan, Session, Work, ask, operation, plan
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.ports import GraphStore


@dataclass(frozen=True, kw_only=True, slots=True)
class Fact:
    """One fact as read_facts and search show it, with its citation (source, episode, chunk, evidence)."""

    fact_id: UUID
    group_id: str
    subject: str
    predicate: str
    object: str
    fact_text: str
    lifecycle: str = field(
        metadata={"description": "published, superseded, retracted, pending_review, proposal, …"}
    )
    tier: int
    authority: float
    verification: str
    confidence: float
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    proposed_for: str | None = field(metadata={"description": "for a proposal: the scope it is meant for"})
    citation: dict[str, Any] = field(metadata={"description": "source, episode, chunk and evidence span"})


@dataclass(frozen=True, kw_only=True, slots=True)
class TimelineFact(Fact):
    """A fact of explain_fact's timeline: relation is 'fact', 'supporting', 'superseded' or 'superseding'."""

    relation: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ExploredFact(Fact):
    """A fact explore reached, at hop 1 (it names the starting entity) or later."""

    hop: int = field(
        metadata={"description": "1: the fact names the starting entity; n: reached through n-1 others"}
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class FactChange(Fact):
    """What happened to a fact lately: change is 'published', 'superseded' or 'retracted', at `at`."""

    change: str = field(metadata={"description": "published, superseded or retracted"})
    at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class EntityFact(Fact):
    """A fact about an entity: role 'subject' or 'object'."""

    role: str = field(metadata={"description": "the entity's place in the fact: subject or object"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Entity:
    """An entity of one group, its aliases and the facts that hold with it (as of the instant asked)."""

    entity_id: UUID
    group_id: str
    canonical_name: str
    entity_type: str | None
    aliases: list[str]
    facts: list[EntityFact]


@dataclass(frozen=True, kw_only=True, slots=True)
class Evidence:
    """Where a fact came from: source, episode (version of a record), chunk text and the cited span."""

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
    evidence_text: str | None = field(metadata={"description": "the span of the chunk the fact cites"})


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceVersion:
    """One episode of a source: a version of one of its records."""

    episode_id: UUID
    external_id: str
    version: int
    title: str | None
    observed_at: datetime
    recorded_at: datetime
    status: str
    retracted: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceDetail:
    """A source with its freshness (last ingestion, age in seconds) and its versions, newest first."""

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
    age_seconds: float | None = field(metadata={"description": "seconds since its last version was recorded"})
    versions: list[SourceVersion]


@dataclass(frozen=True, kw_only=True, slots=True)
class ConflictValue:
    """One of the competing values of a subject and predicate (conflict numbers the subject+predicate)."""

    conflict: int
    subject: str
    predicate: str
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


def get_fact(fact: UUID, *, groups: Sequence[str] | None = None) -> Call[Fact]:
    """One fact with its citation (NotFoundError when the caller cannot read it)."""
    return Call("get_fact", {"fact": fact, "groups": listed(groups)}, record(Fact))


def get_evidence(fact: UUID, *, groups: Sequence[str] | None = None) -> Call[Evidence]:
    """Where a fact came from: source, episode, chunk text and the cited span."""
    return Call("get_evidence", {"fact": fact, "groups": listed(groups)}, record(Evidence))


def explain_fact(fact: UUID, *, groups: Sequence[str] | None = None) -> Call[list[TimelineFact]]:
    """The fact, the statements supporting it, and the values it superseded or that superseded it."""
    return Call("explain_fact", {"fact": fact, "groups": listed(groups)}, records(TimelineFact))


_ENTITY_COLUMNS = ("entity_id", "entity_group_id", "canonical_name", "entity_type", "aliases")


def entities(columns: Sequence[str], rows: Rows) -> list[Entity]:
    """vera.get_entity's rows (one per entity and fact) as entities with their facts, in order."""
    found: dict[tuple[str, UUID], tuple[dict[str, Any], list[EntityFact]]] = {}
    for row in rows:
        values = dict(zip(columns, row, strict=True))
        head = {name: values.pop(name) for name in _ENTITY_COLUMNS}
        key = (head["entity_group_id"], head["entity_id"])
        _, facts = found.setdefault(key, (head, []))
        if values["fact_id"] is not None:
            facts.append(EntityFact(**values))
    return [
        Entity(
            entity_id=head["entity_id"],
            group_id=head["entity_group_id"],
            canonical_name=head["canonical_name"],
            entity_type=head["entity_type"],
            aliases=list(head["aliases"] or []),
            facts=facts,
        )
        for head, facts in found.values()
    ]


expects(entities, row_columns(EntityFact, plus=_ENTITY_COLUMNS))


def get_entity(
    name_or_id: str,
    *,
    groups: Sequence[str] | None = None,
    as_of: datetime | None = None,
    limit: int = 200,
) -> Call[list[Entity]]:
    """The entity of that name (or id) in each group searched, its aliases and its facts then
    (at most limit rows, 1-1000)."""
    params = {"entity": name_or_id, "groups": listed(groups), "as_of": as_of, "max_rows": limit}
    return Call("get_entity", params, entities)


def source_detail(columns: Sequence[str], rows: Rows) -> SourceDetail:
    values = dict(zip(columns, rows[0], strict=True))
    versions = [
        SourceVersion(
            episode_id=UUID(e["episode_id"]),
            external_id=e["external_id"],
            version=e["version"],
            title=e["title"],
            observed_at=datetime.fromisoformat(e["observed_at"]),
            recorded_at=datetime.fromisoformat(e["recorded_at"]),
            status=e["status"],
            retracted=e["retracted"],
        )
        for e in values.pop("episodes")
    ]
    return SourceDetail(versions=versions, **values)


expects(source_detail, row_columns(SourceDetail, without=["versions"], plus=["episodes"]))


def get_source(source: UUID, *, max_episodes: int = 100) -> Call[SourceDetail]:
    """A source, its freshness and its versions (episodes), newest first."""
    return Call("get_source", {"source": source, "max_episodes": max_episodes}, source_detail)


def explore(
    entity: str,
    *,
    depth: int = 2,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
    limit: int = 100,
) -> Call[list[ExploredFact]]:
    """Facts reached breadth-first from an entity, 1-5 hops (vera.explore's order), at most limit."""
    params = {
        "entity": entity,
        "depth": depth,
        "as_of": as_of,
        "groups": listed(groups),
        "max_rows": limit,
    }
    return Call("explore", params, records(ExploredFact))


def changes(
    since: datetime, *, limit: int = 100, groups: Sequence[str] | None = None
) -> Call[list[FactChange]]:
    """Facts published, superseded or retracted after since, newest first."""
    return Call("changes", {"since": since, "max_rows": limit, "groups": listed(groups)}, records(FactChange))


def conflicts(*, limit: int = 100, groups: Sequence[str] | None = None) -> Call[list[ConflictValue]]:
    """Competing values of functional predicates, side by side (one row per value)."""
    return Call("conflicts", {"max_rows": limit, "groups": listed(groups)}, records(ConflictValue))


def explore_starts(entity: str, groups: Sequence[str] | None) -> Call[list[tuple[str, UUID]]]:
    """The (group, entity) pairs an explore starts from, as vera.explore finds them."""
    return Call(
        "explore_starts",
        {"entity": entity, "groups": listed(groups)},
        lambda _c, rows: [(g, e) for g, e in rows],
    )


def explore_facts(
    steps: Sequence[tuple[UUID, int]], as_of: datetime | None, groups: Sequence[str] | None, max_rows: int
) -> Call[list[ExploredFact]]:
    """vera.explore's rows for (fact id, hop) pairs a graph walk reached, re-checked for the caller."""
    params = {"fact_ids": [fact for fact, _ in steps], "hops": [hop for _, hop in steps], "as_of": as_of,
              "groups": listed(groups), "max_rows": max_rows}  # fmt: skip
    return Call("explore_facts", params, records(ExploredFact))


def explore_graph(
    session: Session,
    graph: GraphStore,
    entity: str,
    *,
    depth: int = 2,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
    limit: int = 100,
) -> Plan[list[ExploredFact]]:
    """explore's answer walked on the graph projection: the start entities and the rows
    (order, citations, what the caller may read) come from SQL, the walk from the graph."""
    if not 1 <= depth <= 5:
        raise InvalidArgumentError(f"depth must be between 1 and 5, got {depth}")
    starts = yield from ask(explore_starts(entity, groups))
    # one instant for the walk and the re-check, as vera.explore uses one
    instant = as_of if as_of is not None else datetime.now(UTC)
    steps = yield from ask(Work(lambda: graph.explore(starts, depth, instant)))
    reached = [(step.fact_id, step.hop) for step in steps]
    return (yield from ask(explore_facts(reached, instant, groups, limit)))


class Reads:
    """The read operations of a client face."""

    get_fact = operation(get_fact)
    get_evidence = operation(get_evidence)
    explain_fact = operation(explain_fact)
    get_entity = operation(get_entity)
    get_source = operation(get_source)
    explore = operation(explore)
    explore_graph = plan(explore_graph)
    changes = operation(changes)
    conflicts = operation(conflicts)
