"""SpelledVector: the floats of pgvector's binary form with its text, the text checked
to be a list of numbers before the FalkorDB store puts it into a query's text."""

from __future__ import annotations

import struct

import pytest

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.vectors import SpelledVector, from_pgvector
from vera_worker.graph.falkordb_store import _CypherFloats
from vera_worker.graph.graphiti_model import _vector


def _binary(values: list[float]) -> bytes:
    """What pgvector's vector_send writes: int16 dimension, int16 unused, big-endian float4s."""
    return struct.pack(f">hh{len(values)}f", len(values), 0, *values)


def test_binary_and_text_become_one_vector() -> None:
    vector = from_pgvector(_binary([1.0, -0.25, 3e-05]), "[1,-0.25,3e-05]")
    assert isinstance(vector, SpelledVector)
    assert vector == pytest.approx((1.0, -0.25, 3e-05))
    assert vector.text == "[1,-0.25,3e-05]"
    assert from_pgvector(None, None) is None


@pytest.mark.parametrize(
    "text", ["[1] RETURN 1 //", "1,2", "[1,'a']", "[1]}) DETACH DELETE n //", "[1,NaN]", "[1]\n"]
)
def test_text_other_than_a_list_of_numbers_is_refused(text: str) -> None:
    with pytest.raises(InvalidArgumentError):
        SpelledVector([1.0], text)


def test_the_falkordb_store_sends_the_text_as_it_is() -> None:
    vector = from_pgvector(_binary([0.5, 2.0]), "[0.5,2]")
    assert vector is not None
    assert _vector(vector) is vector  # no copy, no float work
    assert str(_CypherFloats(vector)) == "[0.5,2]"
    assert str(_CypherFloats([0.5, 2.0])) == "[0.5,2]"  # any other vector is spelled there
