"""vera.search through psycopg: hits as frozen dataclasses, errors as VeraErrors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from vera_client.adapters.postgres.errors import translated_errors
from vera_client.adapters.postgres.queries import query
from vera_client.domain.models import Hit, Signals


def authenticate(conn: psycopg.Connection, api_key: str) -> None:
    """Authenticate the connection's current transaction."""
    with translated_errors():
        conn.execute(query("authenticate"), {"key": api_key})


def pinned_models(conn: psycopg.Connection, groups: Sequence[str] | None = None) -> list[tuple[str, int]]:
    """The (model, dimension) pairs pinned by the groups searched (default: every readable one)."""
    with translated_errors():
        rows = conn.execute(query("pinned_models"), {"groups": list(groups) if groups is not None else None})
        return [(row[0], row[1]) for row in rows.fetchall()]


def vector_text(values: Sequence[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def search(
    conn: psycopg.Connection,
    text: str | None,
    *,
    embedding: Sequence[float] | None = None,
    k: int = 10,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
    weights: dict[str, Any] | None = None,
    embedding_model: str | None = None,
) -> list[Hit]:
    """Run vera.search in the connection's (authenticated) transaction."""
    with translated_errors():
        rows = conn.execute(
            query("search"),
            {
                "query": text,
                "embedding": vector_text(embedding) if embedding is not None else None,
                "k": k,
                "as_of": as_of,
                "groups": list(groups) if groups is not None else None,
                "weights": Jsonb(weights) if weights is not None else None,
                "embedding_model": embedding_model,
            },
        ).fetchall()
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
