"""Helpers shared by the SQL API's callers: per-transaction authentication and pgvector's text form."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from vera_client.adapters.postgres.errors import translated_errors
from vera_client.adapters.postgres.queries import query


def authenticate(conn: psycopg.Connection, api_key: str) -> None:
    """Authenticate the connection's current transaction."""
    with translated_errors():
        conn.execute(query("authenticate"), {"key": api_key})


def vector_text(values: Sequence[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"
