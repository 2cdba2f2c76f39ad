"""Ports: what the domain needs from the outside world, as typing.Protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from vera_client.domain.models import ServerStatus


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


class GraphProjection(Protocol):
    """The graph that published facts are projected into (Graphiti on Neo4j or FalkorDB)."""

    def remove_edges(self, group_id: str, edge_ids: list[str]) -> int:
        """Remove the edges of these facts; return how many existed."""
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
