"""Ports: what the domain needs from the outside world, as typing.Protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID

from vera_client.domain.deployment import ServerStatus
from vera_client.domain.graph import EdgeState, ExploreStep, GraphBackendName, GraphEdge, GraphNode


class DatabaseServer(Protocol):
    """A PostgreSQL server whose lifecycle VERA manages (the embedded one)."""

    def start(self) -> ServerStatus:
        """Initialise if needed and start; a no-op when it already runs."""
        ...

    def stop(self) -> ServerStatus:
        """Stop if running; a no-op otherwise."""
        ...

    def status(self) -> ServerStatus:
        """Report whether it runs and how to reach it."""
        ...


class ObjectStore(Protocol):
    """Raw bytes of source records, by key (the episode's object_key)."""

    def put(self, key: str, data: bytes) -> None:
        """Store data under key, replacing what was there."""
        ...

    def get(self, key: str) -> bytes:
        """The bytes under key; NotFoundError when there are none."""
        ...

    def delete(self, key: str) -> bool:
        """Remove key; False when it was already gone (deleting is idempotent)."""
        ...


class GraphStore(Protocol):
    """One graph server (Neo4j or FalkorDB) holding the projection of many groups.

    Every method is scoped to the groups it names; none ever reads or writes
    another group's nodes or edges. All writes are idempotent."""

    @property
    def backend(self) -> GraphBackendName:
        """Which server kind this is."""
        ...

    def upsert(self, group_id: str, nodes: Sequence[GraphNode], edges: Sequence[GraphEdge]) -> int:
        """Create or update these nodes and edges of one group (matched by VERA's ids);
        return the number of edges written. Replaying the same call changes nothing."""
        ...

    def remove_edges(self, group_id: str, edge_ids: Sequence[UUID]) -> int:
        """Remove these edges of one group, then the group's nodes left without any edge;
        return how many edges existed."""
        ...

    def drop_group(self, group_id: str) -> None:
        """Remove every node and edge of one group (the first step of a rebuild)."""
        ...

    def edge_states(self, group_id: str) -> list[EdgeState]:
        """Every edge of one group with its times (for `vera graph check`)."""
        ...

    def node_count(self, group_id: str) -> int:
        """How many nodes (entities and literals) one group's graph holds."""
        ...

    def explore(self, starts: Sequence[tuple[str, UUID]], depth: int, as_of: datetime) -> list[ExploreStep]:
        """Breadth-first from these (group, node id) starts, as vera.explore defines it:
        hop h returns every edge answering at as_of, not returned before, one of whose
        end nodes was reached before hop h; a literal node reaches nothing; a walk never
        leaves the group of its start. Unordered: SQL orders and cites the result."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class Embedder(Protocol):
    """Turns texts into vectors of one model and dimension (a group pins both)."""

    @property
    def model(self) -> str:
        """The model's name, as groups pin it."""
        ...

    @property
    def dim(self) -> int:
        """The vectors' dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order."""
        ...


@dataclass(frozen=True, slots=True)
class RerankScore:
    """A reranker's relevance for one document, 0..1 (1 = answers the query)."""

    index: int
    score: float


class Reranker(Protocol):
    """Scores (query, document) pairs as a cross-encoder would: stage 3 of search."""

    @property
    def model(self) -> str:
        """The model's name."""
        ...

    def rerank(self, query: str, documents: Sequence[str]) -> list[RerankScore]:
        """One score per document, in the order of the documents, each 0..1."""
        ...
