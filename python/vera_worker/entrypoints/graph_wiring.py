"""The graph projection as the settings configure it (VERA_MEMORY__GRAPH_BACKEND): the worker's
projection job and `vera graph` build it here. Without the job queue: `vera graph` works on an
install without the [worker] extra.

The one place that decides which graph a process uses (graph_memory): the settings when they
name a backend (explicitly, even "none"); otherwise, beside an embedded database, the FalkorDB
that `vera demo` made (the folder `falkordb` next to the database's data folder), started when
it is not running, so the commands that follow the demo keep its memory one memory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

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


NO_GRAPH = (
    "none configured: facts are not projected (set VERA_MEMORY__GRAPH_BACKEND=neo4j|falkordb and "
    "VERA_MEMORY__GRAPH_URL, then `vera graph rebuild` once; docs/graph.md)"
)


@dataclass(frozen=True, slots=True)
class GraphInUse:
    """Which graph graph_memory would give a process, told without starting anything (for `vera db
    status`): where the choice comes from ("settings", "demo" or "default"), the backend, its URL
    with any password hidden, and one line for a person."""

    source: str
    backend: str
    url: str | None
    line: str


def shown_url(url: str | None) -> str | None:
    """A graph server URL safe to print: its password, if any, replaced by ***."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def graph_in_use(database: Database) -> GraphInUse:
    """The graph this process's settings and folders point at, as graph_memory decides, but without
    starting the demo's FalkorDB (a status reads; it starts nothing)."""
    memory = database.settings.memory
    if "graph_backend" not in memory.model_fields_set:
        server = demo_graph(database)
        if server is not None:
            state = server.status()
            stopped = "stopped, started by the next command that needs it"
            where = shown_url(state.url) if state.running else stopped
            line = f"falkordb, the demo's in {server.data_dir} ({where})"
            return GraphInUse("demo", "falkordb", shown_url(state.url), line)
    source = "settings" if "graph_backend" in memory.model_fields_set else "default"
    if memory.graph_backend == "none":
        return GraphInUse(source, "none", None, NO_GRAPH)
    url = shown_url(memory.graph_url)
    missing = "no URL: set VERA_MEMORY__GRAPH_URL (the worker fails without it)"
    line = f"{memory.graph_backend} at {url or missing}"
    return GraphInUse(source, memory.graph_backend, url, line)


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
