"""`vera graph`: rebuild a group's graph from PostgreSQL, check it against
PostgreSQL, explore through it, and serve a Neo4j for development (docs/graph.md)."""

from __future__ import annotations

import dataclasses
import json
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vera_cli.output import print_explored
from vera_cli.plumbing import client_from_env, database_from_env, fail, friendly_errors, start_if_embedded

if TYPE_CHECKING:
    from vera_client.bootstrap import Database
    from vera_worker.graph.projection import GraphCheck, GraphProjection
    from vera_worker.graph.servers.local import LocalServer


def _started_projection(database: Database) -> GraphProjection:
    """The configured graph's projection, with the database started. The graph comes first: a
    missing setting or [graph] extra is said before an embedded server is started for nothing."""
    from vera_worker.entrypoints.graph_wiring import projection_into, required_graph_store

    store = required_graph_store(database)
    start_if_embedded(database)
    return projection_into(database, store)


@click.group("graph")
def graph() -> None:
    """The graph projection of published knowledge: rebuild, check, explore, serve."""


@graph.command("rebuild")
@click.option("--group", help="Rebuild only this group's graph (default: every group with facts).")
@friendly_errors
def rebuild_command(group: str | None) -> None:
    """Drop each group's graph and project it again from PostgreSQL alone."""
    from vera_worker.entrypoints.graph_wiring import close_projection

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
        close_projection(projection)


def _check_line(check: GraphCheck) -> str:
    result = check.result
    state = f"DRIFT: {result.drift}" if result.drift else "in step"
    return (
        f"{result.group_id}: edges {result.sql_edges} (sql) / {result.graph_edges} (graph), "
        f"nodes {result.sql_nodes} / {result.graph_nodes}, digest {check.sql_digest[:12]} / "
        f"{check.graph_digest[:12]}: {state}"
    )


def _say_what_is_behind(database: Database, group: str | None) -> None:
    """With no graph configured: the groups whose facts a worker without a graph left unprojected
    (recorded by the projection job), then the usual one-line error. Exit 1."""
    from vera_client.adapters.postgres import provisioning
    from vera_worker.entrypoints.graph_wiring import required_graph_store

    # the recorded state is the operator's to read: the embedded server's, or VERA_DB__ADMIN_DSN's
    if database.server is not None or database.settings.db.admin_dsn:
        start_if_embedded(database)
        _, checks = provisioning.projection_state(database.admin_dsn)
        behind = [c for c in checks if c.backend == "none" and (group is None or c.group_id == group)]
        for check in behind:
            click.echo(f"{check.group_id}: behind: {check.drift}")
        if behind:
            click.echo(f"{len(behind)} groups behind: no graph is configured here")
    required_graph_store(database)  # raises the usual one-line error


@graph.command("check")
@click.option("--group", help="Check only this group (default: every group with facts).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per group.")
@friendly_errors
def check_command(group: str | None, as_json: bool) -> None:
    """Compare each group's graph with PostgreSQL (counts and a digest of edges by fact id
    and validity); the result is recorded for `vera db status`. Exit 1 on drift."""
    from vera_worker.entrypoints.graph_wiring import close_projection, graph_store

    database = database_from_env()
    if graph_store(database) is None:
        _say_what_is_behind(database, group)  # and exit: there is no graph here to compare
    projection = _started_projection(database)
    try:
        checks = projection.check_all(group)
    finally:
        close_projection(projection)
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
        if drifted:  # e.g. facts a worker without a graph left unprojected (docs/graph.md)
            click.echo("the graph is behind PostgreSQL: `vera graph rebuild` projects it again")
    if drifted:
        sys.exit(1)


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
    from vera_worker.entrypoints.graph_wiring import required_graph_store

    database = database_from_env()
    store = required_graph_store(database)
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


# the standard Bolt port: what a Neo4j client tries first
NEO4J_PORT = 7687
# how often `serve` looks whether the server it watches still answers
WATCH_SECONDS = 2.0


def _stop_on_signals() -> None:
    """Ctrl-C, SIGTERM and SIGHUP (a closed terminal) stop the server. SIGINT too is set here:
    a process started in the background by a non-interactive shell inherits SIGINT ignored,
    and Python then installs no KeyboardInterrupt for it."""

    def interrupted(_signal: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), interrupted)


def _watch(server: LocalServer) -> None:
    """Until Ctrl-C: the server must keep answering (a crash is one line naming its log)."""
    while True:
        time.sleep(WATCH_SECONDS)
        if not server.status().running:
            fail(f"Neo4j stopped answering (log: {server.log_file})")


@graph.command("serve")
@click.option("--neo4j", "neo4j", is_flag=True, help="Serve Neo4j 5.26 Community (Java 17+ and Maven).")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Its store and log.  [default: neo4j/ beside the embedded PostgreSQL's data]",
)
@click.option(
    "--port", type=click.IntRange(1, 65535), default=NEO4J_PORT, show_default=True, help="Bolt port."
)
@click.option("--heap", default="1g", show_default=True, help="Java heap (512m, 2g, ...).")
@friendly_errors
def serve_command(neo4j: bool, data_dir: Path | None, port: int, heap: str) -> None:
    """Run the Neo4j the tests use, for development: Bolt on 127.0.0.1 without authentication.

    The first start builds its launcher with Maven (java/neo4j-launcher of a source checkout);
    a start takes ~40 s. It prints the bolt URL and the VERA_MEMORY__GRAPH_* settings that
    point VERA at it, and runs until Ctrl-C, which stops it. A Neo4j already running from
    the same folder is reused, and left running.
    """
    if not neo4j:
        fail("say which server: --neo4j (FalkorDB needs no server of its own: `vera demo` starts one)")
    from vera_worker.graph.servers import neo4j as launcher_module

    folder = data_dir or database_from_env().settings.db.data_dir.parent / "neo4j"
    server = launcher_module.Neo4jLauncher(folder, port, heap=heap, launcher_dir=launcher_module.LAUNCHER_DIR)
    already = server.status().running
    _stop_on_signals()
    try:
        if not already:
            click.echo(f"starting Neo4j from {server.data_dir} (a minute or so; the first start builds it)")
        url = server.start()
        click.echo(f"Neo4j {'was already running' if already else 'runs'} at {url} (log: {server.log_file})")
        click.echo("point VERA at it (development only: no authentication, 127.0.0.1 only):")
        click.echo("  export VERA_MEMORY__GRAPH_BACKEND=neo4j")
        click.echo(f"  export VERA_MEMORY__GRAPH_URL={url}")
        click.echo("then `vera graph rebuild` once; `vera worker` keeps it up to date.")
        click.echo(
            "Ctrl-C stops it." if not already else "Ctrl-C leaves it running (started before this command)."
        )
        _watch(server)
    except KeyboardInterrupt:
        if already:
            click.echo(f"left running from {server.data_dir}")
            return
        server.stop()
        click.echo("Neo4j stopped")
