"""Vectors as PostgreSQL hands them to the graph projection: the floats and pgvector's own
text of them, both read once from SQL.

The stores want different things: the Neo4j driver packs floats (PackStream is binary),
while FalkorDB reads parameters from the query text, where a vector has to be spelled out.
Spelling 384 floats in Python ("{:.9g}" each) cost more than FalkorDB's own work on the
edge (measured 2026-12-02: about 0.19 ms a vector), and so does parsing them from text;
pgvector's binary form unpacks into floats in one call, and its text output, made by
PostgreSQL in C, is already a Cypher list literal. So the projection's SQL returns each
vector both ways and a SpelledVector keeps the two together."""

from __future__ import annotations

import array
import sys
from collections.abc import Iterable

from vera_client.domain.errors import InvalidArgumentError

# the characters of pgvector's text output of finite floats ("[1,-0.25,3e-05]")
_NUMBER_LIST = b"0123456789.,+-e[]"


class SpelledVector(tuple[float, ...]):
    """A vector's floats (a tuple, as the domain carries vectors) with `text`, the same
    vector as a Cypher list literal, checked to hold only numbers."""

    text: str

    def __new__(cls, values: Iterable[float], text: str) -> SpelledVector:
        # (bytes.translate deletes in C; str.translate took five times as long)
        if not text.startswith("[") or not text.endswith("]") or text.encode().translate(None, _NUMBER_LIST):
            raise InvalidArgumentError("a spelled vector must be a list of numbers, as pgvector writes it")
        vector = super().__new__(cls, values)
        vector.text = text
        return vector


def from_pgvector(binary: bytes | None, text: str | None) -> SpelledVector | None:
    """The vector pgvector's vector_send wrote (int16 dimension, int16 unused, big-endian
    float4s), with its text output; None for a null vector."""
    if binary is None or text is None:
        return None
    floats = array.array("f")
    floats.frombytes(memoryview(binary)[4 : 4 + 4 * int.from_bytes(binary[:2], "big")])
    if sys.byteorder == "little":
        floats.byteswap()
    return SpelledVector(floats, text)
