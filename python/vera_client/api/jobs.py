"""The worker's calls, made as the principal a job acts for (or, for the graph's rebuild
and check, as the operator): vectors for facts written without one, the graph projection's
rows and checks, queue lag, extraction and the judges, the time scopes of passages
(sql/functions/105_embed_jobs.sql, 107_time_scopes.sql, 230_graph.sql, 240_extraction.sql;
queries in jobs.sql; tests in pg_tests/jobs/)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from vera_client.api.call import (
    Call,
    Columns,
    Json,
    Rows,
    column,
    embedding,
    expects,
    nothing,
    optional_record,
    record,
    records,
    row_columns,
    scalar,
)
from vera_client.domain.graph import EdgeState
from vera_client.domain.vectors import from_pgvector


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphFactRow:
    """A fact as the graph projection needs it (vera.graph_facts, vera.graph_group_facts).

    object_id is None for a literal object (object_name is then the value); the
    embeddings are None when not known; belongs says whether the group's graph holds it."""

    fact_id: UUID
    group_id: str
    episode_id: UUID | None
    source_id: UUID | None
    subject_id: UUID
    subject_name: str
    object_id: UUID | None
    object_name: str
    predicate: str
    fact_text: str
    lifecycle: str
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    retired_at: datetime | None
    fact_embedding: tuple[float, ...] | None
    subject_embedding: tuple[float, ...] | None
    object_embedding: tuple[float, ...] | None
    belongs: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphCheckResult:
    """The last check of one group's graph against PostgreSQL; drift None means none."""

    group_id: str
    backend: str
    checked_at: datetime
    sql_edges: int
    graph_edges: int
    sql_nodes: int
    graph_nodes: int
    drift: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class QueueLag:
    """How far one queue (None: every queue) is behind: jobs due, when the oldest fell due, its age."""

    queue: str | None
    waiting: int
    oldest_due: datetime | None
    lag_seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class PassageToTimeScope:
    """A passage whose time scope VERA's reader has not read, or read with an older version."""

    chunk_id: UUID
    heading: str | None
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class PassageToExtract:
    """A passage the extract job has still to send through the extraction model."""

    chunk_id: UUID
    episode_id: UUID
    ordinal: int
    text: str
    content_sha256: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractionRun:
    """The validated claims a model version extracted from one passage text."""

    model_version: str
    outcome: str
    claims: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractionContext:
    """What the extraction prompt offers about a group: its predicates and known entity names."""

    predicates: list[dict[str, str]]
    entities: list[str]


# --- vectors for facts written without one (sql/functions/105_embed_jobs.sql)


def facts_to_embed(group: str, fact_ids: Sequence[UUID]) -> Call[list[tuple[UUID, str]]]:
    """The facts among fact_ids that still have no vector, with the text to embed."""

    def read(columns: Sequence[str], rows: Rows) -> list[tuple[UUID, str]]:
        return [(v["fact_id"], v["fact_text"]) for v in (dict(zip(columns, r, strict=True)) for r in rows)]

    both = frozenset({"fact_id", "fact_text"})
    params = {"group": group, "fact_ids": list(fact_ids)}
    return Call("facts_to_embed", params, expects(read, Columns(both, both)))


def set_fact_embeddings(
    group: str, fact_ids: Sequence[UUID], vectors: Sequence[Sequence[float]], embedding_model: str
) -> Call[int]:
    """Stores one vector per fact (facts that got one meanwhile are left as they are)."""
    params = {"group": group, "fact_ids": list(fact_ids), "embeddings": [embedding(v) for v in vectors],
              "embedding_model": embedding_model}  # fmt: skip
    return Call("set_fact_embeddings", params, scalar)


# --- the graph projection (sql/functions/230_graph.sql)


_VECTORS = ("fact_embedding", "subject_embedding", "object_embedding")


def graph_fact_rows(columns: Sequence[str], rows: Rows) -> list[GraphFactRow]:
    """vera.graph_facts' and vera.graph_group_facts' rows, each vector a SpelledVector
    (its floats and its text, domain/vectors.py)."""
    found = []
    for row in rows:
        values = dict(zip(columns, row, strict=True))
        for name in _VECTORS:
            values[name] = from_pgvector(values[name], values.pop(f"{name}_text"))
        found.append(GraphFactRow(**values))
    return found


expects(graph_fact_rows, row_columns(GraphFactRow, plus=[f"{name}_text" for name in _VECTORS]))


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
    return Call("graph_groups", {"group": group}, column)


def record_graph_check(result: GraphCheckResult, sql_digest: str, graph_digest: str) -> Call[None]:
    """Records the last check of a group's graph (worker, operator)."""
    params = {"group": result.group_id, "backend": result.backend, "sql_edges": result.sql_edges,
              "graph_edges": result.graph_edges, "sql_nodes": result.sql_nodes,
              "graph_nodes": result.graph_nodes, "sql_digest": sql_digest, "graph_digest": graph_digest,
              "drift": result.drift}  # fmt: skip
    return Call("record_graph_check", params, nothing)


def record_graph_behind(group: str, facts: int) -> Call[None]:
    """Records that a worker without a graph left facts of a group unprojected (worker, operator)."""
    return Call("record_graph_behind", {"group": group, "facts": facts}, nothing)


def record_model_usage(group: str, usage: Sequence[Mapping[str, Any]]) -> Call[None]:
    """Adds what one job's model calls for a group used to its totals for today (the worker only):
    entries {provider, model, purpose, calls, failed_calls, input_tokens, output_tokens, cost_usd,
    unpriced_calls}, at most 100."""
    return Call("record_model_usage", {"group": group, "usage": Json(list(usage))}, nothing)


def graph_check_results() -> Call[list[GraphCheckResult]]:
    """The last graph check of every group, drift first (worker, operator)."""
    return Call("graph_check_results", {}, records(GraphCheckResult))


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueDepth:
    """Jobs of one queue: due and waiting, waiting for a later time, running."""

    queue: str
    todo: int
    scheduled: int
    doing: int


def queue_depth() -> Call[list[QueueDepth]]:
    """How many jobs wait in each queue (the worker's backpressure signal)."""
    return Call("queue_depth", {}, records(QueueDepth))


def queue_lag() -> Call[list[QueueLag]]:
    """How far each queue (and all of them, queue None) is behind (worker, operator)."""
    return Call("queue_lag", {}, records(QueueLag))


# --- extraction and the judges: the LLM worker's calls, as its principal (240_extraction.sql)


def passages_to_extract(
    group: str, model_version: str, redo: bool, max_rows: int
) -> Call[list[PassageToExtract]]:
    params = {"group": group, "model_version": model_version, "redo": redo, "max_rows": max_rows}
    return Call("passages_to_extract", params, records(PassageToExtract))


def episode_passages_to_extract(
    group: str, model_version: str, episodes: Sequence[UUID], max_rows: int
) -> Call[list[PassageToExtract]]:
    """The passages of those episodes that no model has been through (what an ingestion wrote)."""
    params = {"group": group, "model_version": model_version, "episodes": list(episodes)}
    return Call("episode_passages_to_extract", params | {"max_rows": max_rows}, records(PassageToExtract))


def take_passage(group: str, chunk: UUID, model_version: str, redo: bool) -> Call[bool]:
    params = {"group": group, "chunk": chunk, "model_version": model_version, "redo": redo}
    return Call("take_passage", params, scalar)


def extraction_run(
    group: str, sha256: bytes, model_version: str, any_model: bool
) -> Call[ExtractionRun | None]:
    params = {"group": group, "sha256": sha256, "model_version": model_version, "any_model": any_model}
    return Call("extraction_run", params, optional_record(ExtractionRun))


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
    params = {"group": group, "chunk": chunk, "sha256": sha256, "model_version": model_version,
              "outcome": outcome, "claims": Json([dict(c) for c in claims]), "dropped": dropped,
              "detail": detail, "facts": facts}  # fmt: skip
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
              "prompt_version": prompt_version, "verdict": Json(dict(verdict))}  # fmt: skip
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
    return Call("set_time_scopes", {"group": group, "scopes": Json([dict(s) for s in scopes])}, scalar)
