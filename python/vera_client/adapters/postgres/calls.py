"""The SQL API as call descriptions: which named query (queries.sql), with
which parameters, read by column name into which result. Every caller runs
them through the executor (executor.py), so each SQL function is mapped to
Python once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeVar
from uuid import UUID

from pgvector import Vector
from psycopg import IsolationLevel
from psycopg.types.json import Jsonb
from psycopg.types.range import Range

from vera_client.adapters.graph.vectors import from_pgvector
from vera_client.domain.context import (
    ContextPack,
    conflicts_json,
    during_json,
    items_json,
    omitted_json,
    pack_from_row,
    warnings_json,
)
from vera_client.domain.graph import EdgeState
from vera_client.domain.models import (
    SIGNAL_NAMES,
    ApiKeyInfo,
    Calibration,
    ConflictValue,
    Entity,
    EntityFact,
    EpisodeVersion,
    Evidence,
    ExploredFact,
    ExtractionContext,
    ExtractionRun,
    Fact,
    FactChange,
    GraphCheckResult,
    GraphFactRow,
    Hit,
    Membership,
    NewApiKey,
    PassageReviewOutcome,
    PassageToExtract,
    PassageToTimeScope,
    PendingPassage,
    PendingReview,
    Proposal,
    ProposalState,
    PublishedClaim,
    QueueLag,
    Remembered,
    RememberPreview,
    RetractedProposal,
    ReviewOutcome,
    Signals,
    SnapshotInfo,
    SnapshotTaken,
    Source,
    SourceDetail,
    SourceVersion,
    StoredChunk,
    Tenant,
    TimelineFact,
    VectorIndexBuild,
    Vote,
)
from vera_client.domain.time_scopes import TimeRange

T = TypeVar("T")
Rows = list[tuple[Any, ...]]
Reader = Callable[[Sequence[str], Rows], T]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One SQL API call: run `query` with `params` in an authenticated transaction, then `read` the rows."""

    query: str
    params: Mapping[str, Any]
    read: Reader[T]
    isolation: IsolationLevel | None = None


def scalar(_columns: Sequence[str], rows: Rows) -> Any:
    return rows[0][0] if rows else None


def nothing(_columns: Sequence[str], _rows: Rows) -> None:
    return None


def records(cls: type[T]) -> Reader[list[T]]:
    def read(columns: Sequence[str], rows: Rows) -> list[T]:
        return [cls(**dict(zip(columns, row, strict=True))) for row in rows]

    return read


def record(cls: type[T]) -> Reader[T]:
    many = records(cls)

    def read(columns: Sequence[str], rows: Rows) -> T:
        return many(columns, rows)[0]

    return read


def hits(columns: Sequence[str], rows: Rows) -> list[Hit]:
    """vera.search's and vera.search_snapshot's rows, read by column name."""
    found = []
    for row in rows:
        values = dict(zip(columns, row, strict=True))
        signals = Signals(**{name: values.pop(name) for name in SIGNAL_NAMES})
        found.append(Hit(signals=signals, **values))
    return found


def period_range(during: TimeRange | None) -> Range[datetime] | None:
    """The period asked about as vera.search's during: days from midnight UTC, end exclusive."""
    if during is None:
        return None
    start, end = (
        datetime(d.year, d.month, d.day, tzinfo=UTC) if d is not None else None
        for d in (during.start, during.end)
    )
    return Range(start, end, "[)")


def pins(columns: Sequence[str], rows: Rows) -> list[tuple[str, int]]:
    """(embedding_model, embedding_dim) pairs; rows without a model are left out."""
    return [
        (values["embedding_model"], values["embedding_dim"])
        for values in (dict(zip(columns, row, strict=True)) for row in rows)
        if values["embedding_model"] is not None
    ]


def _vector(values: Sequence[float] | None) -> Vector | None:
    """A vector as pgvector's binary dumper sends it (see executor.py): float32, without numpy."""
    return Vector([float(v) for v in values]) if values is not None else None


# --- tenancy and keys -------------------------------------------------------------------------------


def whoami() -> Call[list[Membership]]:
    return Call("whoami", {}, records(Membership))


def create_group(parent: str, kind: str, name: str) -> Call[str]:
    return Call("create_group", {"parent": parent, "kind": kind, "name": name}, scalar)


def create_principal(group: str, kind: str, name: str, role: str, email: str | None) -> Call[UUID]:
    params = {"group": group, "kind": kind, "name": name, "role": role, "email": email}
    return Call("create_principal", params, scalar)


def set_member_role(group: str, principal: UUID, role: str) -> Call[None]:
    return Call("set_member_role", {"group": group, "principal": principal, "role": role}, nothing)


def remove_member(group: str, principal: UUID) -> Call[bool]:
    return Call("remove_member", {"group": group, "principal": principal}, scalar)


def create_api_key(name: str, expires_at: datetime | None, principal: UUID | None) -> Call[NewApiKey]:
    params = {"name": name, "expires_at": expires_at, "principal": principal}
    return Call("create_api_key", params, record(NewApiKey))


def revoke_api_key(key: str) -> Call[bool]:
    return Call("revoke_api_key", {"key": key}, scalar)


def list_api_keys() -> Call[list[ApiKeyInfo]]:
    return Call("list_api_keys", {}, records(ApiKeyInfo))


def setting(group: str, name: str) -> Call[Any]:
    return Call("setting", {"group": group, "name": name}, scalar)


def set_setting(group: str, name: str, value: Any) -> Call[Any]:
    params = {"group": group, "name": name, "value": Jsonb(value) if value is not None else None}
    return Call("set_setting", params, scalar)


# --- the write path ---------------------------------------------------------------------------------


def register_source(
    group: str,
    kind: str,
    name: str,
    tier: int,
    *,
    token_env: str | None,
    config: Mapping[str, Any],
    uri: str | None,
) -> Call[UUID]:
    params = {
        "group": group,
        "kind": kind,
        "name": name,
        "tier": tier,
        "token_env": token_env,
        "config": Jsonb(dict(config)),
        "uri": uri,
    }
    return Call("register_source", params, scalar)


def list_sources(group: str | None) -> Call[list[Source]]:
    return Call("list_sources", {"group": group}, records(Source))


def request_ingest(group: str, source: UUID, path: str | None) -> Call[int]:
    return Call("request_ingest", {"group": group, "source": source, "path": path}, scalar)


def source_cursor(group: str, source: UUID) -> Call[dict[str, Any]]:
    """A source's incremental cursor ({} before the first run)."""

    def read(columns: Sequence[str], rows: Rows) -> dict[str, Any]:
        value = scalar(columns, rows)
        return dict(value) if value else {}

    return Call("source_cursor", {"group": group, "source": source}, read)


def advance_source_cursor(group: str, source: UUID, changes: Mapping[str, Any]) -> Call[int]:
    """Merges per-record cursor entries (None removes one); how many records are tracked."""
    return Call(
        "advance_source_cursor", {"group": group, "source": source, "changes": Jsonb(dict(changes))}, scalar
    )


def record_episode(
    group: str,
    source: UUID,
    external_id: str,
    sha256: bytes,
    *,
    object_key: str | None,
    mime: str | None,
    observed_at: datetime | str | None,  # a string is parsed by PostgreSQL
    title: str | None,
    uri: str | None,
) -> Call[EpisodeVersion]:
    params = {
        "group": group,
        "source": source,
        "external_id": external_id,
        "sha256": sha256,
        "object_key": object_key,
        "mime": mime,
        "observed_at": observed_at,
        "title": title,
        "uri": uri,
    }
    return Call("record_episode", params, record(EpisodeVersion))


def store_chunks(
    group: str, episode: UUID, chunks: Sequence[Mapping[str, Any]], embedding_model: str | None
) -> Call[list[StoredChunk]]:
    params = {
        "group": group,
        "episode": episode,
        "chunks": Jsonb([dict(c) for c in chunks]),
        "embedding_model": embedding_model,
    }
    return Call("store_chunks", params, records(StoredChunk))


def publish_claims(
    group: str, episode: UUID | None, claims: Sequence[Mapping[str, Any]], embedding_model: str | None
) -> Call[list[PublishedClaim]]:
    params = {
        "group": group,
        "episode": episode,
        "claims": Jsonb([dict(c) for c in claims]),
        "embedding_model": embedding_model,
    }
    return Call("publish_claims", params, records(PublishedClaim))


def declare_predicate(group: str, name: str, cardinality: str, description: str | None) -> Call[str]:
    params = {"group": group, "name": name, "cardinality": cardinality, "description": description}
    return Call("declare_predicate", params, scalar)


def pending_reviews(group: str) -> Call[list[PendingReview]]:
    return Call("pending_reviews", {"group": group}, records(PendingReview))


def review_claim(group: str, fact: UUID, decision: str, note: str | None) -> Call[ReviewOutcome]:
    params = {"group": group, "fact": fact, "decision": decision, "note": note}
    return Call("review_claim", params, record(ReviewOutcome))


Withdrawal = Literal["retract_episode", "erase_episode", "retract_source", "erase_source"]


def pending_passages(group: str) -> Call[list[PendingPassage]]:
    return Call("pending_passages", {"group": group}, records(PendingPassage))


def review_passage(group: str, chunk: UUID, decision: str, note: str | None) -> Call[PassageReviewOutcome]:
    params = {"group": group, "chunk": chunk, "decision": decision, "note": note}
    return Call("review_passage", params, record(PassageReviewOutcome))


def withdraw(what: Withdrawal, group: str, target: UUID, reason: str | None) -> Call[int]:
    """retract_episode, erase_episode, retract_source or erase_source: the cleanup job's id."""
    return Call(what, {"group": group, "id": target, "reason": reason}, scalar)


def complete_cleanup(job: int) -> Call[bool]:
    return Call("complete_cleanup", {"job": job}, scalar)


# --- the read path ----------------------------------------------------------------------------------


def search_version() -> Call[str]:
    return Call("search_version", {}, scalar)


def pinned_models(groups: Sequence[str] | None) -> Call[list[tuple[str, int]]]:
    """The embedding models (and dimensions) pinned by the groups (default: every readable group)."""
    return Call("pinned_models", {"groups": list(groups) if groups is not None else None}, pins)


def search(
    text: str | None,
    *,
    embedding: Sequence[float] | None,
    embedding_model: str | None,
    k: int,
    as_of: datetime | None,
    groups: Sequence[str] | None,
    weights: Mapping[str, Any] | None,
    lexical_weight: float,
    vector_weight: float,
    k_rrf: int,
    candidates: int | None,
    ef_search: int | None,
    during: TimeRange | None = None,
) -> Call[list[Hit]]:
    params = {
        "during": period_range(during),
        "query": text,
        "embedding": _vector(embedding),
        "embedding_model": embedding_model,
        "k": k,
        "as_of": as_of,
        "groups": list(groups) if groups is not None else None,
        "weights": Jsonb(dict(weights)) if weights is not None else None,
        "lexical_weight": lexical_weight,
        "vector_weight": vector_weight,
        "k_rrf": k_rrf,
        "candidates": candidates,
        "ef_search": ef_search,
    }
    return Call("search", params, hits)


def record_feedback(
    kind: str,
    item: UUID,
    text: str,
    vote: str,
    *,
    embedding: Sequence[float] | None,
    embedding_model: str | None,
    as_of: datetime | None,
    groups: Sequence[str] | None,
    during: TimeRange | None = None,
) -> Call[Vote]:
    params = {
        "during": period_range(during),
        "kind": kind,
        "item_id": item,
        "query": text,
        "vote": vote,
        "embedding": _vector(embedding),
        "embedding_model": embedding_model,
        "as_of": as_of,
        "groups": list(groups) if groups is not None else None,
    }
    return Call("record_feedback", params, record(Vote))


def calibrate_weights(group: str, min_samples: int | None) -> Call[Calibration]:
    return Call("calibrate_weights", {"group": group, "min_samples": min_samples}, record(Calibration))


def active_weights(group: str) -> Call[dict[str, Any]]:
    return Call("active_weights", {"group": group}, scalar)


def reset_weights(group: str) -> Call[None]:
    return Call("reset_weights", {"group": group}, nothing)


def create_snapshot(group: str, name: str) -> Call[SnapshotTaken]:
    # one view of the data for the pins and every copied row
    return Call(
        "create_snapshot",
        {"group": group, "name": name},
        record(SnapshotTaken),
        isolation=IsolationLevel.REPEATABLE_READ,
    )


def list_snapshots(group: str) -> Call[list[SnapshotInfo]]:
    return Call("list_snapshots", {"group": group}, records(SnapshotInfo))


def drop_snapshot(group: str, name: str) -> Call[None]:
    return Call("drop_snapshot", {"group": group, "name": name}, nothing)


def snapshot_pin(group: str, name: str) -> Call[list[tuple[str, int]]]:
    """The snapshot's embedding pin ([] without vectors, or for a snapshot the caller cannot see)."""
    return Call("snapshot_pin", {"group": group, "name": name}, pins)


def search_snapshot(
    group: str,
    name: str,
    text: str | None,
    *,
    embedding: Sequence[float] | None,
    embedding_model: str | None,
    k: int,
    k_rrf: int,
    candidates: int | None,
    during: TimeRange | None = None,
) -> Call[list[Hit]]:
    params = {
        "during": period_range(during),
        "group": group,
        "name": name,
        "query": text,
        "embedding": _vector(embedding),
        "embedding_model": embedding_model,
        "k": k,
        "k_rrf": k_rrf,
        "candidates": candidates,
    }
    return Call("search_snapshot", params, hits)


# --- operator work (an operator connection: no caller, row-level security does not apply) -----------


def create_tenant(organisation: str, owner: str, email: str | None) -> Call[Tenant]:
    """A new organisation, its owner and the owner's first API key (shown once)."""

    def read(columns: Sequence[str], rows: Rows) -> Tenant:
        values = dict(zip(columns, rows[0], strict=True))
        return Tenant(group_id=values["group_id"], owner_principal_id=values["principal_id"],
                      api_key=values["api_key"])  # fmt: skip

    return Call("create_tenant", {"organisation": organisation, "owner": owner, "email": email}, read)


def find_tenant_owner(organisation: str) -> Call[tuple[str, UUID] | None]:
    """The oldest organisation of that name and its first owner, if any."""

    def read(columns: Sequence[str], rows: Rows) -> tuple[str, UUID] | None:
        if not rows:
            return None
        values = dict(zip(columns, rows[0], strict=True))
        return str(values["group_id"]), values["principal_id"]

    return Call("find_tenant_owner", {"organisation": organisation}, read)


def revoke_all_keys(principal: UUID) -> Call[None]:
    """Revokes every live key of a principal."""
    return Call("revoke_all_keys", {"principal": principal}, nothing)


def issue_api_key(principal: UUID, name: str) -> Call[str]:
    """A new key for a principal, returned once."""
    return Call("issue_key", {"principal": principal, "name": name}, scalar)


def read_path_installed() -> Call[bool]:
    """Whether the database has the read path's functions yet (a fresh one may not)."""
    return Call("read_path_installed", {}, scalar)


def missing_vector_indexes(min_rows: int) -> Call[list[VectorIndexBuild]]:
    """The per-group HNSW indexes that are due, with the statements that build them."""
    return Call("missing_vector_indexes", {"min_rows": min_rows}, records(VectorIndexBuild))


# --- jobs the worker runs for a principal -----------------------------------------------------------


def facts_to_embed(group: str, fact_ids: Sequence[UUID]) -> Call[list[tuple[UUID, str]]]:
    """The facts among fact_ids that still have no vector, with the text to embed."""

    def read(columns: Sequence[str], rows: Rows) -> list[tuple[UUID, str]]:
        return [(v["fact_id"], v["fact_text"]) for v in (dict(zip(columns, r, strict=True)) for r in rows)]

    return Call("facts_to_embed", {"group": group, "fact_ids": list(fact_ids)}, read)


def set_fact_embeddings(
    group: str, fact_ids: Sequence[UUID], vectors: Sequence[Sequence[float]], embedding_model: str
) -> Call[int]:
    """Stores one vector per fact (facts that got one meanwhile are left as they are)."""
    params = {
        "group": group,
        "fact_ids": list(fact_ids),
        "embeddings": [_vector(v) for v in vectors],
        "embedding_model": embedding_model,
    }
    return Call("set_fact_embeddings", params, scalar)


# --- knowledge reads, proposals and context packs (the MCP server's tools) -------------------------


def _groups(groups: Sequence[str] | None) -> list[str] | None:
    return list(groups) if groups is not None else None


def get_fact(fact: UUID, groups: Sequence[str] | None) -> Call[Fact]:
    return Call("get_fact", {"fact": fact, "groups": _groups(groups)}, record(Fact))


def get_evidence(fact: UUID, groups: Sequence[str] | None) -> Call[Evidence]:
    return Call("get_evidence", {"fact": fact, "groups": _groups(groups)}, record(Evidence))


def explain_fact(fact: UUID, groups: Sequence[str] | None) -> Call[list[TimelineFact]]:
    return Call("explain_fact", {"fact": fact, "groups": _groups(groups)}, records(TimelineFact))


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


def get_entity(
    entity: str, groups: Sequence[str] | None, as_of: datetime | None, max_rows: int
) -> Call[list[Entity]]:
    params = {"entity": entity, "groups": _groups(groups), "as_of": as_of, "max_rows": max_rows}
    return Call("get_entity", params, entities)


def source_detail(columns: Sequence[str], rows: Rows) -> SourceDetail:
    values = dict(zip(columns, rows[0], strict=True))
    episodes = values.pop("episodes")
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
        for e in episodes
    ]
    return SourceDetail(versions=versions, **values)


def get_source(source: UUID, max_episodes: int) -> Call[SourceDetail]:
    return Call("get_source", {"source": source, "max_episodes": max_episodes}, source_detail)


def explore(
    entity: str, depth: int, as_of: datetime | None, groups: Sequence[str] | None, max_rows: int
) -> Call[list[ExploredFact]]:
    params = {
        "entity": entity,
        "depth": depth,
        "as_of": as_of,
        "groups": _groups(groups),
        "max_rows": max_rows,
    }
    return Call("explore", params, records(ExploredFact))


def changes(since: datetime, max_rows: int, groups: Sequence[str] | None) -> Call[list[FactChange]]:
    params = {"since": since, "max_rows": max_rows, "groups": _groups(groups)}
    return Call("changes", params, records(FactChange))


def conflicts(max_rows: int, groups: Sequence[str] | None) -> Call[list[ConflictValue]]:
    return Call("conflicts", {"max_rows": max_rows, "groups": _groups(groups)}, records(ConflictValue))


def propose(subject: str, predicate: str, obj: str, evidence: str, for_group: str) -> Call[Proposal]:
    params = {"subject": subject, "predicate": predicate, "object": obj, "evidence": evidence,
              "for_group": for_group}  # fmt: skip
    return Call("propose", params, record(Proposal))


def retract_proposal(fact: UUID) -> Call[RetractedProposal]:
    return Call("retract_proposal", {"fact": fact}, record(RetractedProposal))


def list_proposals(max_rows: int) -> Call[list[ProposalState]]:
    return Call("list_proposals", {"max_rows": max_rows}, records(ProposalState))


def store_context_pack(pack: ContextPack) -> Call[UUID]:
    params = {
        "query": pack.query,
        "token_budget": pack.token_budget,
        "items": Jsonb(items_json(pack)),
        "as_of": pack.as_of,
        "groups": pack.groups,
        "min_authority": pack.min_authority,
        "max_tier": pack.max_tier,
        "weights": Jsonb(pack.weights) if pack.weights is not None else None,
        "assembler_version": pack.assembler_version,
        "omitted": Jsonb(omitted_json(pack)),
        "conflicts": Jsonb(conflicts_json(pack)),
        "warnings": Jsonb(warnings_json(pack)),
        "during": Jsonb(period) if (period := during_json(pack)) is not None else None,
    }
    return Call("store_context_pack", params, scalar)


def get_context_pack(pack: UUID) -> Call[ContextPack]:
    def read(columns: Sequence[str], rows: Rows) -> ContextPack:
        return pack_from_row(dict(zip(columns, rows[0], strict=True)))

    return Call("get_context_pack", {"pack": pack}, read)


def record_pack_feedback(
    pack: UUID, position: int, vote: str, *, embedding: Sequence[float] | None, embedding_model: str | None
) -> Call[Vote]:
    params = {
        "pack": pack,
        "position": position,
        "vote": vote,
        "embedding": _vector(embedding),
        "embedding_model": embedding_model,
    }
    return Call("record_pack_feedback", params, record(Vote))


# --- remember in one call ----------------------------------------------------------------------------


def remember(
    *,
    content: str | None,
    messages: Sequence[Mapping[str, Any]] | None,
    source: str,
    at: datetime | None,
    group: str | None,
    claims: Sequence[Mapping[str, Any]],
    embeddings: Sequence[Sequence[float]] | None = None,
    embedding_model: str | None = None,
    time_scopes: Sequence[Mapping[str, Any]] | None = None,
) -> Call[Remembered]:
    params = {
        "content": content,
        "messages": _messages(messages),
        "source": source,
        "at": at,
        "group": group,
        "claims": Jsonb(list(claims)),
        "embeddings": Jsonb([list(v) for v in embeddings]) if embeddings is not None else None,
        "embedding_model": embedding_model,
        "time_scopes": Jsonb([dict(t) for t in time_scopes]) if time_scopes is not None else None,
    }
    return Call("remember", params, record(Remembered))


def remember_passages(
    *, content: str | None, messages: Sequence[Mapping[str, Any]] | None, group: str | None
) -> Call[RememberPreview]:
    params = {"content": content, "messages": _messages(messages), "group": group}
    return Call("remember_passages", params, record(RememberPreview))


def _messages(messages: Sequence[Mapping[str, Any]] | None) -> Jsonb | None:
    return Jsonb(list(messages)) if messages is not None else None


# --- the graph projection (sql/functions/230_graph.sql)


def graph_fact_rows(columns: Sequence[str], rows: Rows) -> list[GraphFactRow]:
    """vera.graph_facts' and vera.graph_group_facts' rows, each vector a SpelledVector
    (its floats and its text, graph/vectors.py)."""
    found = []
    for row in rows:
        values = dict(zip(columns, row, strict=True))
        for name in ("fact_embedding", "subject_embedding", "object_embedding"):
            values[name] = from_pgvector(values[name], values.pop(f"{name}_text"))
        found.append(GraphFactRow(**values))
    return found


def graph_facts(group: str, fact_ids: Sequence[UUID]) -> Call[list[GraphFactRow]]:
    """The named facts of a group as the graph needs them (worker, operator)."""
    return Call("graph_facts", {"group": group, "fact_ids": list(fact_ids)}, graph_fact_rows)


def graph_group_facts(group: str, after: UUID | None, max_rows: int) -> Call[list[GraphFactRow]]:
    """A keyset page of the facts that belong in a group's graph (worker, operator)."""
    return Call("graph_group_facts", {"group": group, "after": after, "max_rows": max_rows}, graph_fact_rows)


def graph_edge_states(group: str) -> Call[list[EdgeState]]:
    """The edges a group's graph should hold, with their times (worker, operator)."""
    return Call("graph_edge_states", {"group": group}, records(EdgeState))


def graph_expected_nodes(group: str) -> Call[int]:
    """How many nodes a group's graph should hold (worker, operator)."""
    return Call("graph_expected_nodes", {"group": group}, scalar)


def graph_groups(group: str | None) -> Call[list[str]]:
    """The groups a rebuild or check covers: every group with facts, or the one named (worker, operator)."""
    return Call("graph_groups", {"group": group}, lambda _c, rows: [r[0] for r in rows])


def record_graph_check(result: GraphCheckResult, sql_digest: str, graph_digest: str) -> Call[None]:
    """Records the last check of a group's graph (worker, operator)."""
    params = {
        "group": result.group_id,
        "backend": result.backend,
        "sql_edges": result.sql_edges,
        "graph_edges": result.graph_edges,
        "sql_nodes": result.sql_nodes,
        "graph_nodes": result.graph_nodes,
        "sql_digest": sql_digest,
        "graph_digest": graph_digest,
        "drift": result.drift,
    }
    return Call("record_graph_check", params, nothing)


def graph_check_results() -> Call[list[GraphCheckResult]]:
    """The last graph check of every group, drift first (worker, operator)."""
    return Call("graph_check_results", {}, records(GraphCheckResult))


def queue_lag() -> Call[list[QueueLag]]:
    """How far each queue (and all of them, queue None) is behind (worker, operator)."""
    return Call("queue_lag", {}, records(QueueLag))


def explore_starts(entity: str, groups: Sequence[str] | None) -> Call[list[tuple[str, UUID]]]:
    """The (group, entity) pairs an explore starts from, as vera.explore finds them."""
    return Call(
        "explore_starts",
        {"entity": entity, "groups": _groups(groups)},
        lambda _c, rows: [(g, e) for g, e in rows],
    )


def explore_facts(
    steps: Sequence[tuple[UUID, int]],
    as_of: datetime | None,
    groups: Sequence[str] | None,
    max_rows: int,
) -> Call[list[ExploredFact]]:
    """vera.explore's rows for (fact id, hop) pairs a graph walk reached, re-checked for the caller."""
    params = {
        "fact_ids": [fact for fact, _ in steps],
        "hops": [hop for _, hop in steps],
        "as_of": as_of,
        "groups": _groups(groups),
        "max_rows": max_rows,
    }
    return Call("explore_facts", params, records(ExploredFact))


# --- extraction and the judges (issue 15): the LLM worker's calls, as its principal -----------------


def request_extraction(group: str, redo: bool) -> Call[int]:
    """Defers an extract job over the group's passages; its job id."""
    return Call("request_extraction", {"group": group, "redo": redo}, scalar)


def passages_to_extract(
    group: str, model_version: str, redo: bool, max_rows: int
) -> Call[list[PassageToExtract]]:
    params = {"group": group, "model_version": model_version, "redo": redo, "max_rows": max_rows}
    return Call("passages_to_extract", params, records(PassageToExtract))


def take_passage(group: str, chunk: UUID, model_version: str, redo: bool) -> Call[bool]:
    params = {"group": group, "chunk": chunk, "model_version": model_version, "redo": redo}
    return Call("take_passage", params, scalar)


def extraction_run(
    group: str, sha256: bytes, model_version: str, any_model: bool
) -> Call[ExtractionRun | None]:
    def read(columns: Sequence[str], rows: Rows) -> ExtractionRun | None:
        return ExtractionRun(**dict(zip(columns, rows[0], strict=True))) if rows else None

    params = {"group": group, "sha256": sha256, "model_version": model_version, "any_model": any_model}
    return Call("extraction_run", params, read)


def record_extraction(
    group: str,
    chunk: UUID,
    sha256: bytes,
    model_version: str,
    *,
    outcome: str,
    claims: Sequence[Mapping[str, Any]],
    dropped: int,
    detail: str | None,
    facts: int,
) -> Call[None]:
    params = {
        "group": group,
        "chunk": chunk,
        "sha256": sha256,
        "model_version": model_version,
        "outcome": outcome,
        "claims": Jsonb([dict(c) for c in claims]),
        "dropped": dropped,
        "detail": detail,
        "facts": facts,
    }
    return Call("record_extraction", params, nothing)


def extraction_context(group: str, passage: str, max_entities: int) -> Call[ExtractionContext]:
    params = {"group": group, "passage": passage, "max_entities": max_entities}
    return Call("extraction_context", params, record(ExtractionContext))


def judge_verdict(group: str, judge: str, sha256: bytes, model: str, prompt_version: str) -> Call[Any]:
    params = {
        "group": group,
        "judge": judge,
        "sha256": sha256,
        "model": model,
        "prompt_version": prompt_version,
    }
    return Call("judge_verdict", params, scalar)


def store_verdict(
    group: str, judge: str, sha256: bytes, verdict: Mapping[str, Any], *, model: str, prompt_version: str
) -> Call[Any]:
    params = {"group": group, "judge": judge, "sha256": sha256, "model": model,
              "prompt_version": prompt_version, "verdict": Jsonb(dict(verdict))}  # fmt: skip
    return Call("store_verdict", params, scalar)


def equivalence_case(group: str, entity: UUID) -> Call[Any]:
    return Call("equivalence_case", {"group": group, "entity": entity}, scalar)


def settle_entity(
    group: str, entity: UUID, same_as: UUID | None, reason: str, *, model: str, prompt_version: str
) -> Call[str]:
    params = {"group": group, "entity": entity, "same_as": same_as, "reason": reason, "model": model,
              "prompt_version": prompt_version}  # fmt: skip
    return Call("settle_entity", params, scalar)


def contradiction_case(group: str, fact: UUID) -> Call[Any]:
    return Call("contradiction_case", {"group": group, "fact": fact}, scalar)


def replace_values(
    group: str, fact: UUID, replaced: Sequence[UUID], reason: str, *, model: str, prompt_version: str
) -> Call[int]:
    params = {"group": group, "fact": fact, "replaced": list(replaced), "reason": reason, "model": model,
              "prompt_version": prompt_version}  # fmt: skip
    return Call("replace_values", params, scalar)


# --- time scopes of passages (sql/functions/107_time_scopes.sql)


def passages_to_time_scope(
    group: str, reader_version: int, after: UUID | None, max_rows: int
) -> Call[list[PassageToTimeScope]]:
    params = {"group": group, "reader_version": reader_version, "after": after, "max_rows": max_rows}
    return Call("passages_to_time_scope", params, records(PassageToTimeScope))


def set_time_scopes(group: str, scopes: Sequence[Mapping[str, Any]]) -> Call[int]:
    return Call("set_time_scopes", {"group": group, "scopes": Jsonb([dict(s) for s in scopes])}, scalar)
