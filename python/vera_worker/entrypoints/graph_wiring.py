"""The graph projection as the settings configure it (VERA_MEMORY__GRAPH_BACKEND): the worker's
projection job and `vera graph` build it here. Without the job queue: `vera graph` works on an
install without the [worker] extra."""

from __future__ import annotations

from vera_client.adapters.postgres.executor import Executor, check_reachable
from vera_client.bootstrap import Database
from vera_client.domain.errors import ConfigurationError
from vera_client.domain.ports import GraphStore
from vera_worker.graph.projection import GraphProjection


def graph_store(database: Database) -> GraphStore | None:
    """The graph server the settings name (VERA_MEMORY__GRAPH_BACKEND), or None for none."""
    if database.settings.memory.graph_backend == "none":
        return None
    # imported only when a graph is configured: the graph clients (Graphiti, the drivers) take
    # seconds to import, which every other `vera` command would pay for nothing
    from vera_worker.graph.stores import graph_store_from_settings  # noqa: PLC0415

    return graph_store_from_settings(database.settings.memory)


def graph_projection(database: Database, sql: Executor) -> GraphProjection | None:
    """The worker's projection into the configured graph, through its executor, or None when
    there is none."""
    store = graph_store(database)
    if store is None:
        return None
    return GraphProjection(sql, store)


def projection_into(database: Database, store: GraphStore) -> GraphProjection:
    """A command's projection, on a pool of its own (closed by close_projection); a database that
    cannot be reached is one line, before the pool would retry."""
    check_reachable(database.worker_dsn, connect_timeout=database.settings.db.connect_timeout)
    return GraphProjection(database.worker_executor(), store)


def required_graph_store(database: Database) -> GraphStore:
    store = graph_store(database)
    if store is None:
        raise ConfigurationError(
            "no graph is configured: set VERA_MEMORY__GRAPH_BACKEND to neo4j or falkordb "
            "(and VERA_MEMORY__GRAPH_URL to its server)"
        )
    return store


def close_projection(projection: GraphProjection) -> None:
    """A command's projection done: its pool, then the graph store, which the command opened for it."""
    projection.sql.close()
    projection.graph.close()
