"""`vera db`: the embedded server's lifecycle, migrations, and what a DBA needs (a psql script,
the connection URL, the vector indexes search needs)."""

from __future__ import annotations

import dataclasses
from datetime import UTC
from typing import TYPE_CHECKING, Any

import click

from vera_cli.output import echo_json
from vera_cli.plumbing import database_from_env, ensure_local_app_login, friendly_errors, require_embedded

if TYPE_CHECKING:
    from vera_client.domain.deployment import ServerStatus


def _print_status(status: ServerStatus) -> None:
    state = f"running (pid {status.pid})" if status.running else "stopped"
    click.echo(f"server:   {state}")
    click.echo(f"data:     {status.data_dir}")
    if status.running:
        click.echo(f"app url:  {status.app_url}")
        click.echo(f"admin url: {status.admin_url}")
        click.echo(f"tcp:      {status.tcp_address or 'off (Unix socket only)'}")
    click.echo(f"log:      {status.log_file}")


@click.group()
def db() -> None:
    """The database: embedded server lifecycle and migrations."""


@db.command()
@click.option("--tcp/--no-tcp", default=None, help="Also listen on 127.0.0.1 (password auth).")
@friendly_errors
def start(tcp: bool | None) -> None:
    """Start the embedded PostgreSQL (initialising it on first use), and the demo's graph beside it."""
    from vera_worker.entrypoints.graph_wiring import demo_graph

    database = database_from_env(tcp)
    require_embedded(database)
    assert database.server is not None
    _print_status(database.server.start())
    graph = demo_graph(database)
    if graph is not None:
        click.echo(f"graph:    the demo's FalkorDB at {graph.start()} (data in {graph.data_dir})")


@db.command()
@friendly_errors
def stop() -> None:
    """Stop the embedded PostgreSQL, and the FalkorDB `vera demo` started beside it."""
    from vera_worker.entrypoints.graph_wiring import demo_graph

    database = database_from_env()
    require_embedded(database)
    assert database.server is not None
    _print_status(database.server.stop())
    graph = demo_graph(database)
    if graph is not None:
        running = graph.status()
        if running.running:
            graph.stop()
            click.echo(f"graph:    stopped the demo's FalkorDB (pid {running.pid}, port {running.port})")
        else:
            click.echo(f"graph:    the demo's FalkorDB in {graph.data_dir} was not running")


@db.command()
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object: server, migrations, job queue, indexes."
)
@friendly_errors
def status(as_json: bool) -> None:
    """Show the server (when embedded) and which migrations are applied."""
    from vera_client.adapters.postgres import provisioning
    from vera_client.adapters.postgres.errors import redact
    from vera_worker.entrypoints.graph_wiring import graph_in_use

    database = database_from_env()
    graph = graph_in_use(database)
    shown_graph = {"backend": graph.backend, "url": graph.url, "source": graph.source}
    report: dict[str, object] = {"graph": shown_graph}
    if database.server is not None:
        server_status = database.server.status()
        report["server"] = dataclasses.asdict(server_status) | {"embedded": True}
        if not as_json:
            _print_status(server_status)
            click.echo(f"graph:    {graph.line}")
        if not server_status.running:
            if as_json:
                echo_json(report)
            return
    else:
        app_dsn = database.settings.db.dsn  # never the admin DSN (see Database.app_dsn)
        shown = redact(app_dsn) if app_dsn else "VERA_DB__DSN is not set: applications cannot connect"
        report["server"] = {"embedded": False, "app_url": redact(app_dsn) if app_dsn else None}
        if not as_json:
            click.echo(f"server:   external, {shown}")
            click.echo(f"graph:    {graph.line}")
    runner = database.migration_runner()
    migrations = []
    for state in runner.states():
        mark = "edited!" if state.edited else ("applied" if state.applied else "pending")
        migrations.append({"name": state.migration.name, "state": mark.rstrip("!")})
        if not as_json:
            click.echo(f"  {state.migration.name:<40} {mark}")
    queue = runner.job_queue_version()
    due = provisioning.missing_vector_indexes(database.admin_dsn)
    projection = _projection(database.admin_dsn) if queue else None
    if as_json:
        echo_json(report | {"migrations": migrations, "job_queue": queue, "vector_indexes_due": len(due),
                            "graph_projection": projection})  # fmt: skip
        return
    click.echo(f"  {'job queue (procrastinate)':<40} {queue or 'not installed'}")
    if due:
        click.echo(f"  {'vector indexes':<40} {len(due)} due: run vera db maintain")
    if projection is not None:
        _print_projection(projection)


def _projection(admin_dsn: str) -> dict[str, Any]:
    """The graph projection's lag (the oldest due project_to_graph job) and its last checks."""
    from vera_client.adapters.postgres import provisioning

    lags, checks = provisioning.projection_state(admin_dsn)
    waiting = next((lag for lag in lags if lag.queue == "project_to_graph"), None)
    return {
        "jobs_due": waiting.waiting if waiting else 0,
        "lag_seconds": waiting.lag_seconds if waiting else 0.0,
        "checks": [
            {"group_id": c.group_id, "checked_at": c.checked_at.astimezone(UTC).isoformat(), "drift": c.drift}
            for c in checks
        ],
    }


def _print_projection(projection: dict[str, Any]) -> None:
    due, checks = projection["jobs_due"], projection["checks"]
    lag = f"{due} jobs due, oldest {projection['lag_seconds']:.0f}s ago" if due else "none waiting"
    click.echo(f"  {'graph projection lag':<40} {lag}")
    if checks:
        drifted = [check for check in checks if check["drift"]]
        last = max(check["checked_at"] for check in checks)
        summary = f"{len(checks)} groups, {len(drifted)} with drift (last {last[:16].replace('T', ' ')} UTC)"
        click.echo(f"  {'graph check':<40} {summary}")
        for check in drifted:
            click.echo(f"    {check['group_id']}: {check['drift']}")


@db.command()
@click.option("--admin", is_flag=True, help="The superuser/migration URL instead of the app role's.")
@friendly_errors
def url(admin: bool) -> None:
    """Print the connection URL (for psql, an application, ...)."""
    database = database_from_env()
    click.echo(database.admin_dsn if admin else database.app_dsn)


@db.command()
@friendly_errors
def migrate() -> None:
    """Apply pending migrations, then re-apply the functions and row-level security."""
    from vera_client.adapters.postgres import provisioning

    database = database_from_env()
    if database.server is not None:
        database.server.start()
    applied = database.migration_runner().migrate(on_apply=lambda m: click.echo(f"applied {m.name}"))
    ensure_local_app_login(database)
    if not applied:
        click.echo("nothing to migrate: the database is up to date")
    click.echo("functions and row-level security re-applied")
    due = provisioning.missing_vector_indexes(database.admin_dsn)
    if due:
        click.echo(f"{len(due)} large groups have no vector index of their own yet: run vera db maintain")


@db.command("sql")
@friendly_errors
def sql_script() -> None:
    """Print one psql script that does what `vera db migrate` does.

    For a DBA with nothing but psql: psql -v ON_ERROR_STOP=1 -1 -f vera.sql.
    Pending migrations only (guarded by vera_meta.migrations), then the
    functions and row-level security, then the job queue when missing.
    """
    from vera_client.adapters.postgres import deployment

    click.echo(deployment.psql_script(), nl=False)


@db.command()
@click.option("--min-rows", default=5000, show_default=True, type=click.IntRange(min=1),
              help="Vectors a group needs in a table before it gets an HNSW index of its own.")  # fmt: skip
@friendly_errors
def maintain(min_rows: int) -> None:
    """Build the per-group HNSW indexes that search needs (concurrently)."""
    from vera_client.adapters.postgres import provisioning

    database = database_from_env()
    if database.server is not None:
        database.server.start()
    built = provisioning.build_missing_vector_indexes(
        database.admin_dsn,
        min_rows,
        on_build=lambda b: click.echo(
            f"building {b.index_name} ({b.vector_rows:,} vectors of {b.dim} dimensions in {b.table_name}) ..."
        ),
    )
    if not built:
        click.echo("nothing to build: every group large enough has its own vector index")
