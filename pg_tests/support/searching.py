"""Helpers for the read-path tests: a tiny deterministic embedder (hashed
words, so that texts sharing words are close) and search calls that return
dictionaries. These tests are of vera.search's own SQL arguments (k_rrf,
candidates, weights, every bad value), so `search` sends SQL with whatever
named arguments a test gives; Python programs call it through the client's
one mapping (vera_client.api.search.search_call)."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import psycopg

DIM = 16
MODEL = "test-hash-16"


def embed(text: str, dim: int = DIM) -> list[float]:
    """Bag of hashed words, L2-normalised: shared words make vectors close."""
    vector = [0.0] * dim
    for word in text.lower().split():
        digest = hashlib.sha256(word.strip(".,?!").encode()).digest()
        vector[digest[0] % dim] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def vector_literal(values: list[float]) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in values) + "]"


def search(conn: psycopg.Connection, query: str | None = None, **arguments: Any) -> list[dict[str, Any]]:
    """vera.search with named arguments; `embedding` (a list) becomes query_embedding."""
    names = ["query => %(query)s"]
    params: dict[str, Any] = {"query": query}
    embedding = arguments.pop("embedding", None)
    if embedding is not None:
        names.append("query_embedding => %(embedding)s::vector")
        params["embedding"] = vector_literal(embedding)
    for name, value in arguments.items():
        names.append(f"{name} => %({name})s")
        params[name] = value
    cursor = conn.execute(f"select * from vera.search({', '.join(names)})", params)  # type: ignore[arg-type]
    columns = [column.name for column in cursor.description or []]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def texts(hits: list[dict[str, Any]]) -> list[str]:
    return [hit["text"] for hit in hits]
