"""The graph projection as the settings configure it (VERA_MEMORY__GRAPH_BACKEND): the worker's
projection job and `vera graph` build it here. Without the job queue: `vera graph` works on an
install without the [worker] extra.

The one place that decides which graph a process uses (graph_memory): the settings when they
name a backend (explicitly, even "none"); otherwise, beside an embedded database, the FalkorDB
that `vera demo` made (the folder `falkordb` next to the database's data folder), started when
it is not running, so the commands that follow the demo keep its memory one memory."""

from __future__ import annotations

from pathlib import Path

from vera_client.adapters.postgres.executor import Executor, check_reachable
from vera_client.bootstrap import Database
from vera_client.config import MemorySettings
from vera_client.domain.errors import ConfigurationError
from vera_client.domain.ports import GraphStore
from vera_worker.graph.projection import GraphProjection
from vera_worker.graph.servers.falkordb import CONFIG_FILE, EmbeddedFalkorDB

DEMO_GRAPH_FOLDER = "falkordb"


def demo_graph_folder(database: Database) -> Path | None:
    """Where `vera demo` keeps its FalkorDB: beside the embedded database's data folder (None for
    an external database, which has no such neighbour)."""
    if database.server is None:
        return None
    return database.settings.db.data_dir.expanduser().absolute().parent / DEMO_GRAPH_FOLDER


def demo_graph(database: Database) -> EmbeddedFalkorDB | None:
    """The FalkorDB a demo made beside the embedded database (its settings file is there), or None."""
    folder = demo_graph_folder(database)
    if folder is None or not (folder / CONFIG_FILE).is_file():
        return None
    return EmbeddedFalkorDB(folder)


def graph_memory(database: Database) -> MemorySettings:
    """The graph this process uses: the settings' when they name a backend, else the demo's
    FalkorDB beside the embedded database (started if it is not running), else none."""
    memory = database.settings.memory
    if "graph_backend" in memory.model_fields_set:
        return memory  # explicit settings win, "none" included
    server = demo_graph(database)
    if server is None:
        return memory
    return memory.model_copy(update={"graph_backend": "falkordb", "graph_url": server.start()})


def graph_store(database: Database) -> GraphStore | None:
    """The graph server graph_memory decides on, or None for none."""
    memory = graph_memory(database)
    if memory.graph_backend == "none":
        return None
    # imported only when a graph is configured: the graph clients (Graphiti, the drivers) take
    # seconds to import, which every other `vera` command would pay for nothing
    from vera_worker.graph.stores import graph_store_from_settings  # noqa: PLC0415

    return graph_store_from_settings(memory)


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
            "(and VERA_MEMORY__GRAPH_URL to its server), or run `vera demo` for one beside the "
            "embedded database"
        )
    return store


def close_projection(projection: GraphProjection) -> None:
    """A command's projection done: its pool, then the graph store, which the command opened for it."""
    projection.sql.close()
    projection.graph.close()
