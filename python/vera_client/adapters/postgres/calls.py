"""The SQL API as call descriptions: which named query, with which
parameters, read into which result. The synchronous and the asynchronous
client run the same descriptions, so each function is described once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from uuid import UUID

from psycopg import IsolationLevel
from psycopg.types.json import Jsonb

from vera_client.adapters.postgres.search import vector_text
from vera_client.domain.models import (
    ApiKeyInfo,
    Calibration,
    EpisodeVersion,
    Hit,
    Membership,
    NewApiKey,
    PendingReview,
    PublishedClaim,
    ReviewOutcome,
    Signals,
    SnapshotInfo,
    SnapshotTaken,
    Source,
    StoredChunk,
    Vote,
)

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


def hits(_columns: Sequence[str], rows: Rows) -> list[Hit]:
    return [
        Hit(
            rank=row[0],
            kind=row[1],
            item_id=row[2],
            group_id=row[3],
            text=row[4],
            subject=row[5],
            predicate=row[6],
            object=row[7],
            score=row[8],
            signals=Signals(
                relevance=row[9],
                authority=row[10],
                verification=row[11],
                recency=row[12],
                feedback=row[13],
                confidence=row[14],
            ),
            citation=row[15],
        )
        for row in rows
    ]


def _vector(values: Sequence[float] | None) -> str | None:
    return vector_text(values) if values is not None else None


# --- tenancy and keys -------------------------------------------------------------------------------


def whoami() -> Call[list[Membership]]:
    return Call("api_whoami", {}, records(Membership))


def create_group(parent: str, kind: str, name: str) -> Call[str]:
    return Call("api_create_group", {"parent": parent, "kind": kind, "name": name}, scalar)


def create_principal(group: str, kind: str, name: str, role: str, email: str | None) -> Call[UUID]:
    params = {"group": group, "kind": kind, "name": name, "role": role, "email": email}
    return Call("api_create_principal", params, scalar)


def set_member_role(group: str, principal: UUID, role: str) -> Call[None]:
    return Call("api_set_member_role", {"group": group, "principal": principal, "role": role}, nothing)


def remove_member(group: str, principal: UUID) -> Call[bool]:
    return Call("api_remove_member", {"group": group, "principal": principal}, scalar)


def create_api_key(name: str, expires_at: datetime | None, principal: UUID | None) -> Call[NewApiKey]:
    params = {"name": name, "expires_at": expires_at, "principal": principal}
    return Call("api_create_api_key", params, record(NewApiKey))


def revoke_api_key(key: str) -> Call[bool]:
    return Call("api_revoke_api_key", {"key": key}, scalar)


def list_api_keys() -> Call[list[ApiKeyInfo]]:
    return Call("api_list_api_keys", {}, records(ApiKeyInfo))


def setting(group: str, name: str) -> Call[Any]:
    return Call("api_setting", {"group": group, "name": name}, scalar)


def set_setting(group: str, name: str, value: Any) -> Call[Any]:
    params = {"group": group, "name": name, "value": Jsonb(value) if value is not None else None}
    return Call("api_set_setting", params, scalar)


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
    return Call("api_register_source", params, scalar)


def list_sources(group: str | None) -> Call[list[Source]]:
    return Call("list_sources", {"group": group}, records(Source))


def request_ingest(group: str, source: UUID, path: str | None) -> Call[int]:
    return Call("request_ingest", {"group": group, "source": source, "path": path}, scalar)


def record_episode(
    group: str,
    source: UUID,
    external_id: str,
    sha256: bytes,
    *,
    object_key: str | None,
    mime: str | None,
    observed_at: datetime | None,
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
    return Call("api_store_chunks", params, records(StoredChunk))


def publish_claims(
    group: str, episode: UUID | None, claims: Sequence[Mapping[str, Any]], embedding_model: str | None
) -> Call[list[PublishedClaim]]:
    params = {
        "group": group,
        "episode": episode,
        "claims": Jsonb([dict(c) for c in claims]),
        "embedding_model": embedding_model,
    }
    return Call("api_publish_claims", params, records(PublishedClaim))


def declare_predicate(group: str, name: str, cardinality: str, description: str | None) -> Call[str]:
    params = {"group": group, "name": name, "cardinality": cardinality, "description": description}
    return Call("api_declare_predicate", params, scalar)


def pending_reviews(group: str) -> Call[list[PendingReview]]:
    return Call("api_pending_reviews", {"group": group}, records(PendingReview))


def review_claim(group: str, fact: UUID, decision: str, note: str | None) -> Call[ReviewOutcome]:
    params = {"group": group, "fact": fact, "decision": decision, "note": note}
    return Call("api_review_claim", params, record(ReviewOutcome))


def withdraw(what: str, group: str, target: UUID, reason: str | None) -> Call[int]:
    """retract_episode, erase_episode, retract_source or erase_source: the cleanup job's id."""
    return Call(f"api_{what}", {"group": group, "id": target, "reason": reason}, scalar)


def complete_cleanup(job: int) -> Call[bool]:
    return Call("api_complete_cleanup", {"job": job}, scalar)


# --- the read path ----------------------------------------------------------------------------------


def pinned_models(groups: Sequence[str] | None) -> Call[list[tuple[str, int]]]:
    def read(_columns: Sequence[str], rows: Rows) -> list[tuple[str, int]]:
        return [(row[0], row[1]) for row in rows]

    return Call("pinned_models", {"groups": list(groups) if groups is not None else None}, read)


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
) -> Call[list[Hit]]:
    params = {
        "query": text,
        "embedding": _vector(embedding),
        "embedding_model": embedding_model,
        "k": k,
        "as_of": as_of,
        "groups": list(groups) if groups is not None else None,
        "weights": Jsonb(dict(weights)) if weights is not None else None,
        "lexical_weight": lexical_weight,
        "vector_weight": vector_weight,
    }
    return Call("api_search", params, hits)


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
) -> Call[Vote]:
    params = {
        "kind": kind,
        "item_id": item,
        "query": text,
        "vote": vote,
        "embedding": _vector(embedding),
        "embedding_model": embedding_model,
        "as_of": as_of,
        "groups": list(groups) if groups is not None else None,
    }
    return Call("api_record_feedback", params, record(Vote))


def calibrate_weights(group: str, min_samples: int | None) -> Call[Calibration]:
    return Call("calibrate_weights", {"group": group, "min_samples": min_samples}, record(Calibration))


def active_weights(group: str) -> Call[dict[str, Any]]:
    return Call("api_active_weights", {"group": group}, scalar)


def reset_weights(group: str) -> Call[None]:
    return Call("api_reset_weights", {"group": group}, nothing)


def create_snapshot(group: str, name: str) -> Call[SnapshotTaken]:
    # one view of the data for the pins and every copied row
    return Call(
        "api_create_snapshot",
        {"group": group, "name": name},
        record(SnapshotTaken),
        isolation=IsolationLevel.REPEATABLE_READ,
    )


def list_snapshots(group: str) -> Call[list[SnapshotInfo]]:
    return Call("api_list_snapshots", {"group": group}, records(SnapshotInfo))


def drop_snapshot(group: str, name: str) -> Call[None]:
    return Call("api_drop_snapshot", {"group": group, "name": name}, nothing)


def snapshot_pin(group: str, name: str) -> Call[list[tuple[str, int]]]:
    """The snapshot's embedding pin ([] without vectors, or for a snapshot the caller cannot see)."""

    def read(_columns: Sequence[str], rows: Rows) -> list[tuple[str, int]]:
        return [(row[0], row[1]) for row in rows if row[0] is not None]

    return Call("api_snapshot_pin", {"group": group, "name": name}, read)


def search_snapshot(
    group: str,
    name: str,
    text: str | None,
    *,
    embedding: Sequence[float] | None,
    embedding_model: str | None,
    k: int,
) -> Call[list[Hit]]:
    params = {
        "group": group,
        "name": name,
        "query": text,
        "embedding": _vector(embedding),
        "embedding_model": embedding_model,
        "k": k,
    }
    return Call("api_search_snapshot", params, hits)
