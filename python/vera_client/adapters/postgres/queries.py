"""Loads the migration runner's named queries (migration_queries.sql) once.

Kept apart from the SQL API's queries (vera_client/api/*.sql): they change with the SQL
bundle's deployment, not with the client's API.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import LiteralString

from vera_client.api.queries import named_queries

_MIGRATION_QUERIES = Path(__file__).with_name("migration_queries.sql")


@cache
def _load() -> dict[str, str]:
    return named_queries(_MIGRATION_QUERIES)


def migration_query(name: str) -> LiteralString:
    """The SQL of a named query of the migration runner."""
    sql: LiteralString = _load()[name]
    return sql
