"""VERA's graph data in Graphiti's model: a GraphNode is an EntityNode, a GraphEdge an
EntityEdge (RELATES_TO), with the same property names Graphiti's own save queries
write, so Graphiti's search and readers work on a graph VERA wrote.

Mapping (domain/graph.py states the rules):
    node: uuid = entity id, name, group_id, name_embedding, summary '' , labels [Entity],
          created_at (set when first written), plus VERA's `literal`;
    edge: uuid = fact id, name = predicate, fact = fact_text, fact_embedding,
          episodes = [episode id], valid_at/invalid_at = valid_from/valid_to,
          created_at/expired_at = recorded_at/retired_at, plus VERA's fact_id,
          episode_id, source_id and lifecycle (Graphiti reads them back as attributes).

The rows (node_row, edge_row) are what the stores write: the same properties, built
without constructing Graphiti's pydantic models per item, and without importing
graphiti_core at all (graphiti_schema.py says why); tests/test_graph_model.py checks
they carry what Graphiti's own save would write.

Graphiti accepts only group ids of ASCII letters, digits, '-' and '_', and on FalkorDB
names each group's graph after its group id; VERA's ids ("o:acme", any text an operator
chose) are not of that shape, so the graph knows each group by `graph_group_id(group_id)`,
an injective and reversible spelling of it in that alphabet.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.graph import GraphEdge, GraphNode
from vera_client.domain.vectors import SpelledVector

if TYPE_CHECKING:
    from graphiti_core.edges import EntityEdge
    from graphiti_core.nodes import EntityNode

# Every graph group id starts with it: a FalkorDB server may hold other applications'
# graphs, and none of theirs can be named like one of VERA's.
GRAPH_GROUP_PREFIX = "vera-"
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
_ESCAPE = "_"
MAX_GROUP_ID_LENGTH = 512

# how a backend stores an instant (an aware UTC datetime, or None for open)
TimeEncoder = Callable[[datetime | None], Any]


def graph_group_id(group_id: str) -> str:
    """The group's id in the graph (Graphiti's group_id, FalkorDB's graph name).

    Letters, digits and '-' stand for themselves; every other character (including
    '_', the escape) becomes '_' and two lowercase hex digits per UTF-8 byte. Distinct
    VERA ids therefore never share a graph id, and nothing in one can be read as Cypher."""
    if not isinstance(group_id, str) or not group_id:
        raise InvalidArgumentError("a group id must be a non-empty string")
    if len(group_id) > MAX_GROUP_ID_LENGTH:
        raise InvalidArgumentError(f"a group id must be at most {MAX_GROUP_ID_LENGTH} characters")
    spelled = [
        char if char in _PLAIN else "".join(f"{_ESCAPE}{byte:02x}" for byte in char.encode("utf-8"))
        for char in group_id
    ]
    return GRAPH_GROUP_PREFIX + "".join(spelled)


def vera_group_id(graph_group: str) -> str:
    """The VERA group id a graph group id spells (the inverse of graph_group_id)."""
    if not graph_group.startswith(GRAPH_GROUP_PREFIX):
        raise InvalidArgumentError(f"{graph_group!r} is not a VERA graph group id")
    body = graph_group[len(GRAPH_GROUP_PREFIX) :]
    out = bytearray()
    index = 0
    while index < len(body):
        char = body[index]
        if char == _ESCAPE:
            out.append(int(body[index + 1 : index + 3], 16))
            index += 3
        else:
            out.extend(char.encode("ascii"))
            index += 1
    return out.decode("utf-8")


def aware_utc(moment: datetime, what: str) -> datetime:
    """moment in UTC; naive datetimes are refused (the graph compares instants)."""
    if not isinstance(moment, datetime) or moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidArgumentError(f"{what} must be a timezone-aware datetime")
    return moment.astimezone(UTC)


def _optional_utc(moment: datetime | None, what: str) -> datetime | None:
    return None if moment is None else aware_utc(moment, what)


def _vector(values: tuple[float, ...] | None) -> list[float] | SpelledVector | None:
    if values is None:
        return None
    if isinstance(values, SpelledVector):
        # read from PostgreSQL, where pgvector refuses empty vectors, NaN and infinities
        return values
    vector = list(map(float, values))
    # one sum instead of a test per element: NaN or an infinity anywhere makes it non-finite
    if not vector or not math.isfinite(sum(vector)):
        raise InvalidArgumentError("an embedding must be a non-empty vector of finite numbers")
    return vector


def _vector_list(values: tuple[float, ...] | None) -> list[float] | None:
    """The vector as the list Graphiti's models hold."""
    vector = _vector(values)
    return None if vector is None else list(vector)


def _text(value: str, what: str) -> str:
    """Text as the graph stores it: PostgreSQL text never holds NUL, and neither may the graph
    (FalkorDB's query parser would end the string there)."""
    if not isinstance(value, str) or "\x00" in value:
        raise InvalidArgumentError(f"{what} must be text without NUL characters")
    return value


def entity_node(node: GraphNode, *, created_at: datetime) -> EntityNode:
    """The node as Graphiti's EntityNode."""
    from graphiti_core.nodes import EntityNode  # noqa: PLC0415 (graphiti_schema.py says why)

    return EntityNode(
        uuid=str(node.node_id),
        name=node.name,
        group_id=graph_group_id(node.group_id),
        labels=["Entity"],
        created_at=aware_utc(created_at, "created_at"),
        name_embedding=_vector_list(node.name_embedding),
        summary="",
        attributes={"literal": node.literal},
    )


def entity_edge(edge: GraphEdge) -> EntityEdge:
    """The edge as Graphiti's EntityEdge."""
    from graphiti_core.edges import EntityEdge  # noqa: PLC0415 (graphiti_schema.py says why)

    return EntityEdge(
        uuid=str(edge.fact_id),
        source_node_uuid=str(edge.subject_id),
        target_node_uuid=str(edge.object_id),
        name=edge.predicate,
        fact=edge.fact_text,
        fact_embedding=_vector_list(edge.fact_embedding),
        group_id=graph_group_id(edge.group_id),
        episodes=[] if edge.episode_id is None else [str(edge.episode_id)],
        created_at=aware_utc(edge.recorded_at, "recorded_at"),
        expired_at=_optional_utc(edge.retired_at, "retired_at"),
        valid_at=aware_utc(edge.valid_from, "valid_from"),
        invalid_at=_optional_utc(edge.valid_to, "valid_to"),
        attributes=_vera_edge_attributes(edge),
    )


def _vera_edge_attributes(edge: GraphEdge) -> dict[str, Any]:
    return {
        "fact_id": str(edge.fact_id),
        "episode_id": None if edge.episode_id is None else str(edge.episode_id),
        "source_id": None if edge.source_id is None else str(edge.source_id),
        "lifecycle": _text(edge.lifecycle, "a lifecycle"),
    }


def node_row(node: GraphNode) -> dict[str, Any]:
    """The properties one node is written with (Graphiti's EntityNode.save keys, less
    created_at, which is set once when the node is created, plus VERA's `literal`)."""
    if not node.name:
        raise InvalidArgumentError("a graph node needs a name")
    return {
        "uuid": str(node.node_id),
        "name": _text(node.name, "a node name"),
        "summary": "",
        "name_embedding": _vector(node.name_embedding),
        "literal": bool(node.literal),
    }


def edge_row(edge: GraphEdge, encode_time: TimeEncoder) -> dict[str, Any]:
    """The properties one edge is written with (Graphiti's EntityEdge.save keys and VERA's
    attributes), times through the backend's encode_time; plus its two end nodes' uuids."""
    return {
        "uuid": str(edge.fact_id),
        "source": str(edge.subject_id),
        "target": str(edge.object_id),
        "name": _text(edge.predicate, "a predicate"),
        "fact": _text(edge.fact_text, "a fact's text"),
        "fact_embedding": _vector(edge.fact_embedding),
        "episodes": [] if edge.episode_id is None else [str(edge.episode_id)],
        "created_at": encode_time(aware_utc(edge.recorded_at, "recorded_at")),
        "expired_at": encode_time(_optional_utc(edge.retired_at, "retired_at")),
        "valid_at": encode_time(aware_utc(edge.valid_from, "valid_from")),
        "invalid_at": encode_time(_optional_utc(edge.valid_to, "valid_to")),
        **_vera_edge_attributes(edge),
    }
