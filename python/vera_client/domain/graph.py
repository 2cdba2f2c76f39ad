"""The graph projection's contract: what PostgreSQL hands the graph, what the
graph answers, and how the two are compared.

PostgreSQL and the object store are the truth; a graph (Graphiti's model on
Neo4j or FalkorDB) is a projection a worker keeps up to date and can rebuild
exactly. One fact is one edge between two entity nodes; both carry VERA's ids.

Which facts a group's graph holds: exactly those vera.explore could return to
some caller of that group at some instant, i.e. facts with `retired_at` null
and lifecycle published or superseded, plus proposals (which live in their
proposer's personal group, so only that principal reads that group's graph).
Anything else (retracted, rejected, accepted, pending review) is removed from
the graph when a job names it.

Time follows VERA's validity, in Graphiti's bi-temporal fields:
    valid_at = valid_from, invalid_at = valid_to (world time),
    created_at = recorded_at, expired_at = retired_at (knowledge time).
A superseded fact keeps its edge, with invalid_at set: it is invalidated, not
deleted. An edge answers at an instant t exactly as vera.fact_visible says:
expired_at is null and valid_at <= t and (invalid_at is null or t < invalid_at).

A literal object (a fact whose object is a value, not an entity) still gets an
edge, to a node marked literal; explore returns that edge when its subject is
reached, but never walks on from a literal node (as vera.explore reaches
nothing through a literal).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal
from uuid import UUID, uuid5

# Lifecycles a group's graph holds (see the module docstring).
PROJECTED_LIFECYCLES = frozenset({"published", "superseded", "proposal"})

# Namespace of literal-object node ids: uuid5(LITERAL_NAMESPACE, f"{group_id}\x00{object_value}"),
# so the same literal value in one group is one node, replays find it again, and no two groups share one.
LITERAL_NAMESPACE = UUID("5f1b6a4e-2c39-4d0a-9a57-7d7f0e1c2b88")

GraphBackendName = Literal["neo4j", "falkordb"]


def literal_node_id(group_id: str, object_value: str) -> UUID:
    """The node that stands for a literal object value in one group."""
    return uuid5(LITERAL_NAMESPACE, f"{group_id}\x00{object_value}")


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphNode:
    """An entity (or a literal value) as a Graphiti EntityNode; `node_id` is VERA's entity id."""

    group_id: str
    node_id: UUID
    name: str
    literal: bool = False
    # the name's vector by the group's pinned model (Graphiti's name_embedding); None when unknown
    name_embedding: tuple[float, ...] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphEdge:
    """A fact as a Graphiti EntityEdge (RELATES_TO) from its subject node to its object node.

    `fact_id` is the edge's uuid. Times are timezone-aware; None means open."""

    group_id: str
    fact_id: UUID
    episode_id: UUID | None
    source_id: UUID | None
    subject_id: UUID
    object_id: UUID  # the object entity, or literal_node_id(group_id, object_value)
    predicate: str  # Graphiti's edge `name`
    fact_text: str  # Graphiti's edge `fact`
    lifecycle: str
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    retired_at: datetime | None
    fact_embedding: tuple[float, ...] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class EdgeState:
    """What `vera graph check` compares per edge: the fact and its four times."""

    fact_id: UUID
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    retired_at: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphCounts:
    """A group's graph in numbers (or the same numbers as SQL says they should be)."""

    nodes: int
    edges: int
    digest: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ExploreStep:
    """One fact an explore reached: the edge's fact id and the hop (1..depth) it was first reached at."""

    fact_id: UUID
    hop: int


def _instant(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    if moment.tzinfo is None:
        raise ValueError("graph times must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def edge_digest(states: Iterable[EdgeState]) -> str:
    """A digest of edges by fact id and validity, the same whichever side computed it:
    sha256 over the sorted lines "fact_id valid_from valid_to recorded_at retired_at"
    (UTC, microseconds, '-' for open)."""
    lines = sorted(
        f"{s.fact_id} {_instant(s.valid_from)} {_instant(s.valid_to)} {_instant(s.recorded_at)} "
        f"{_instant(s.retired_at)}"
        for s in states
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
