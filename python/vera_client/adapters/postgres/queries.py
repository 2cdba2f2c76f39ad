"""Loads the named queries of queries.sql once."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import LiteralString

_HEADER = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)
# resolved once: query() runs on every call to the database
_QUERIES = Path(__file__).with_name("queries.sql")
_MIGRATION_QUERIES = Path(__file__).with_name("migration_queries.sql")


@cache
def _load(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    parts = _HEADER.split(text)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def query(name: str) -> LiteralString:
    """The SQL of a named query.

    Typed LiteralString for psycopg: queries.sql ships with the package and is
    never built from user input (values always travel as parameters).
    """
    sql: LiteralString = _load(_QUERIES)[name]
    return sql


def migration_query(name: str) -> LiteralString:
    """The SQL of a named query of the migration runner (migration_queries.sql).

    Kept apart from the client's queries: they change with the SQL bundle's
    deployment, not with the client's API.
    """
    sql: LiteralString = _load(_MIGRATION_QUERIES)[name]
    return sql
