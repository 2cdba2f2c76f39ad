"""Loads a knowledge bundle through the SQL API: a JSON document of sources
(name, kind, tier, uri), their episodes (external_id, title, observed_at),
and each episode's passages ("chunks") and claims: for bulk loads and tests
that want knowledge in place without the worker.

Every write goes through the same functions an application calls
(register_source, record_episode, store_chunks, publish_claims), so trust
tiers, the contamination guard and supersession apply. Loading again is a
no-op for episodes whose content is unchanged. The caller commits.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from vera_client.adapters.postgres.errors import translated_errors
from vera_client.adapters.postgres.queries import query
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.ports import Embedder


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadReport:
    sources: int
    episodes: int
    unchanged: int
    passages: int
    claims: int


def read_corpus(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list):
        raise InvalidArgumentError(f"{path}: expected an object with a list of sources")
    return data


def _source_id(conn: psycopg.Connection, group: str, source: dict[str, Any]) -> Any:
    found = conn.execute(query("find_source"), {"group": group, "name": source["name"]}).fetchone()
    if found is not None:
        return found[0]
    row = conn.execute(
        query("register_source"),
        {
            "group": group,
            "kind": source["kind"],
            "name": source["name"],
            "tier": source["tier"],
            "uri": source.get("uri"),
        },
    ).fetchone()
    assert row is not None
    return row[0]


def _with_embeddings(
    items: list[dict[str, Any]], field: str, embedder: Embedder | None
) -> list[dict[str, Any]]:
    if embedder is None:
        return items
    vectors = embedder.embed([item[field] for item in items])
    return [{**item, "embedding": vector} for item, vector in zip(items, vectors, strict=True)]


def load_corpus(
    conn: psycopg.Connection, group: str, corpus: dict[str, Any], embedder: Embedder | None = None
) -> LoadReport:
    """Write the bundle into group (see _load); a malformed bundle is one InvalidArgumentError."""
    try:
        return _load(conn, group, corpus, embedder)
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidArgumentError(
            f"malformed corpus: sources need name, kind and tier; episodes need external_id ({exc!r})"
        ) from exc


def _load(
    conn: psycopg.Connection, group: str, corpus: dict[str, Any], embedder: Embedder | None
) -> LoadReport:
    """Write the bundle into group through the SQL API, in the caller's authenticated
    transaction; with an embedder, passages and facts carry its vectors (the group pins it)."""
    model = embedder.model if embedder is not None else None
    episodes = unchanged = passages = claims = 0
    with translated_errors():
        for source in corpus["sources"]:
            source_id = _source_id(conn, group, source)
            for episode in source.get("episodes", []):
                content = json.dumps(episode, sort_keys=True, ensure_ascii=False).encode()
                episode_id, _version, created = conn.execute(  # type: ignore[misc]
                    query("record_episode"),
                    {
                        "group": group,
                        "source": source_id,
                        "external_id": episode["external_id"],
                        "sha256": hashlib.sha256(content).digest(),
                        "object_key": None,
                        "mime": "application/json",
                        "observed_at": episode.get("observed_at"),
                        "title": episode.get("title"),
                        "uri": episode.get("uri"),
                    },
                ).fetchone()
                episodes += 1
                if not created:
                    unchanged += 1
                    continue
                for name in episode.get("functional", []):
                    conn.execute(
                        query("declare_predicate"),
                        {"group": group, "name": name, "cardinality": "functional"},
                    )
                if episode.get("chunks"):
                    conn.execute(
                        query("store_chunks"),
                        {"group": group, "episode": episode_id,
                         "chunks": Jsonb(_with_embeddings(episode["chunks"], "text", embedder)),
                         "embedding_model": model},
                    )  # fmt: skip
                    passages += len(episode["chunks"])
                if episode.get("claims"):
                    conn.execute(
                        query("publish_claims"),
                        {"group": group, "episode": episode_id,
                         "claims": Jsonb(_with_embeddings(episode["claims"], "fact_text", embedder)),
                         "embedding_model": model},
                    )  # fmt: skip
                    claims += len(episode["claims"])
    return LoadReport(
        sources=len(corpus["sources"]),
        episodes=episodes,
        unchanged=unchanged,
        passages=passages,
        claims=claims,
    )
