"""Loads the named queries of queries.cypher once, spelled for one backend."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_HEADER = re.compile(r"^// name: ([a-z_]+)\s*$", re.MULTILINE)
_VECTOR = "{vector}"
_INSTANT = "{instant}"


@cache
def _load() -> dict[str, str]:
    text = Path(__file__).with_name("queries.cypher").read_text(encoding="utf-8")
    parts = _HEADER.split(text)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


@cache
def cypher(name: str, vector_function: str, instant_function: str = "") -> str:
    """The Cypher of a named query, with vectors stored through vector_function
    ("vecf32" on FalkorDB, "" on Neo4j) and the instants of written rows through
    instant_function ("" on FalkorDB, "datetime" on Neo4j). queries.cypher ships with
    the package and is never built from input: values always travel as parameters."""
    return _load()[name].replace(_VECTOR, vector_function).replace(_INSTANT, instant_function)
