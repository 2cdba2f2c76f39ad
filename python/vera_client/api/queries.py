"""Loads the named queries of the SQL API's areas (api/*.sql) once."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import LiteralString

_HEADER = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)
# resolved once: query() runs on every call to the database
_AREAS = Path(__file__).parent


def named_queries(path: Path) -> dict[str, str]:
    """The queries of one .sql file by name."""
    parts = _HEADER.split(path.read_text(encoding="utf-8"))
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


@cache
def all_queries() -> dict[str, str]:
    """Every area's queries by name; a name is used once across the areas."""
    found: dict[str, str] = {}
    for path in sorted(_AREAS.glob("*.sql")):
        for name, sql in named_queries(path).items():
            if name in found:
                raise RuntimeError(f"the query {name} is named twice (in {path.name} and another area)")
            found[name] = sql
    return found


def query(name: str) -> LiteralString:
    """The SQL of a named query.

    Typed LiteralString for psycopg: the .sql files ship with the package and are never
    built from user input (values always travel as parameters).
    """
    sql: LiteralString = all_queries()[name]
    return sql
