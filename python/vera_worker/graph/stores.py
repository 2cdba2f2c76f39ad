"""Opens the configured graph store: `VERA_MEMORY__GRAPH_BACKEND` picks Neo4j or FalkorDB
(or none), `VERA_MEMORY__GRAPH_URL` says where it runs."""

from __future__ import annotations

from vera_client.adapters.optional import require
from vera_client.config import MemorySettings
from vera_client.domain.errors import ConfigurationError
from vera_client.domain.ports import GraphStore
from vera_worker.graph.cypher_store import DEFAULT_BATCH_SIZE, CypherGraphStore


def open_graph_store(
    backend: str,
    url: str | None,
    *,
    user: str | None = None,
    password: str | None = None,
    database: str = "neo4j",
    batch_size: int = DEFAULT_BATCH_SIZE,
    timeout_seconds: float = 30.0,
) -> GraphStore:
    """A connected store with its schema in place. ConfigurationError for an unknown backend
    or a missing URL; ProviderUnavailableError when the server does not answer."""
    if not url:
        raise ConfigurationError(f"graph backend {backend!r} needs a URL (VERA_MEMORY__GRAPH_URL)")
    store: CypherGraphStore
    if backend == "neo4j":
        require("neo4j", extra="graph", needed_for="the graph projection on Neo4j")
        from vera_worker.graph.neo4j_store import Neo4jGraphStore  # noqa: PLC0415 (one driver loaded)

        store = Neo4jGraphStore(
            url,
            user=user,
            password=password,
            database=database,
            batch_size=batch_size,
            timeout_seconds=timeout_seconds,
        )
    elif backend == "falkordb":
        require("falkordb", extra="graph", needed_for="the graph projection on FalkorDB")
        from vera_worker.graph.falkordb_store import FalkorDBGraphStore  # noqa: PLC0415

        store = FalkorDBGraphStore(
            url, username=user, password=password, batch_size=batch_size, timeout_seconds=timeout_seconds
        )
    else:
        raise ConfigurationError(f"unknown graph backend {backend!r}: neo4j, falkordb or none")
    try:
        store.ensure_schema()
    except BaseException:
        store.close()
        raise
    return store


def graph_store_from_settings(settings: MemorySettings) -> GraphStore | None:
    """The store the settings name, or None when the backend is "none" (no projection)."""
    if settings.graph_backend == "none":
        return None
    return open_graph_store(
        settings.graph_backend,
        settings.graph_url,
        user=settings.graph_user,
        password=None if settings.graph_password is None else settings.graph_password.get_secret_value(),
        database=settings.graph_database,
        batch_size=settings.graph_batch_size,
        timeout_seconds=settings.graph_timeout_seconds,
    )
