"""The worker's part of the `vera` command line: `vera worker`, `vera ingest`,
`vera demo` (vera_cli assembles the whole command)."""

from __future__ import annotations

import json
import logging
import shlex
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import click
import procrastinate

from vera_client.adapters.examples import example_dir
from vera_client.adapters.postgres import provisioning
from vera_client.bootstrap import Database, build_providers
from vera_client.client import VeraClient
from vera_client.config import DbSettings
from vera_client.domain.errors import VeraError
from vera_client.entrypoints.cli import (
    database_from_env,
    ensure_local_app_login,
    fail,
    friendly_errors,
    print_hits,
    start_if_embedded,
)
from vera_worker.adapters.embedding import FactEmbedding
from vera_worker.adapters.ingestion import (
    IngestEvent,
    IngestReport,
    IngestRequest,
    SourceIngestion,
    summarize,
)
from vera_worker.adapters.manifest_sources import register_manifest, request_all
from vera_worker.adapters.queue import SERVED_QUEUES, build_app, drain, serve, served_queues
from vera_worker.adapters.queue_metrics import (
    DEFAULT_THRESHOLD,
    BacklogMonitor,
    database_graph_health,
    database_queue_depths,
)
from vera_worker.entrypoints.graph_cli import graph_projection, show_demo_explore, with_demo_graph

logger = logging.getLogger(__name__)


@click.group()
def commands() -> None:
    """The worker's commands."""


DEMO_ORGANISATION = "Demo Organisation"
DEMO_OWNER = "Demo Owner"
DEMO_KEY_NAME = "demo key"
DEMO_QUESTIONS: list[tuple[str, datetime | None]] = [
    ("Which cluster does billing-api run on?", None),
    ("Which cluster did billing-api run on before the migration?", datetime(2026, 6, 1, tzinfo=UTC)),
    ("route-planner chạy trên cụm nào?", None),
    ("How do I restart billing-api after a failed deploy?", None),
]


def _print_event(event: IngestEvent) -> None:
    if event.kind == "planned":
        click.echo(f"  {event.source}: {event.total} files to read or retract")
        return
    counter = f"[{event.done}/{event.total}]"
    if event.kind == "ingested":
        detail = f"{event.passages} passages, {event.claims} claims, {event.embeddings} embeddings"
    elif event.kind == "failed":
        detail = f"FAILED: {event.message}"
    else:
        detail = event.kind
    click.echo(f"  {counter:>9} {event.key}: {detail}")


def _app(
    database: Database,
    *,
    on_progress: Callable[[IngestEvent], None] | None = None,
    on_report: Callable[[IngestReport], None] | None = None,
    on_failure: Callable[[IngestRequest, VeraError], None] | None = None,
    extra_roots: Sequence[Path] = (),
) -> procrastinate.App:
    settings = database.settings
    providers = build_providers(settings)
    objects = providers.objects

    def reported(report: IngestReport) -> None:
        # what hosted models cost this process so far (a local model costs nothing)
        spent = providers.meter.grand_total()
        if spent.requests:
            logger.info(
                "provider usage so far: %d requests (%d failed), %d input tokens, about $%.4f",
                spent.requests, spent.failed_requests, spent.input_tokens, spent.estimated_cost_usd,
            )  # fmt: skip
        if on_report is not None:
            on_report(report)

    ingestion = SourceIngestion(
        database.worker_dsn,
        objects=objects,
        embedder_for_model=providers.embedder_for_model,
        on_progress=on_progress,
        on_report=reported,
        on_failure=on_failure,
        connect_timeout=settings.db.connect_timeout,
        allowed_roots=(*settings.worker.source_roots, *extra_roots),
    )
    embedding = FactEmbedding(
        database.worker_dsn,
        embedder_for_model=providers.embedder_for_model,
        connect_timeout=settings.db.connect_timeout,
    )
    return build_app(
        database.worker_dsn,
        objects=objects,
        projection=graph_projection(database),
        ingestion=ingestion,
        embedding=embedding,
    )


def _drain_with_progress(database: Database, extra_roots: Sequence[Path] = ()) -> list[IngestReport]:
    """Work the queue off here, printing progress; a run that failed as a whole is one error line."""
    reports: list[IngestReport] = []
    failures: list[str] = []

    def failed(request: IngestRequest, error: VeraError) -> None:
        failures.append(f"ingestion of source {request.source_id} failed: {error}")

    # the failure is reported here in one line; Procrastinate would log it with a traceback
    logging.getLogger("procrastinate").setLevel(logging.CRITICAL)
    app = _app(
        database,
        on_progress=_print_event,
        on_report=reports.append,
        on_failure=failed,
        extra_roots=extra_roots,
    )
    drain(app, stalled_after=database.settings.worker.stalled_after)
    if failures:
        for line in failures[:-1]:
            click.echo(f"vera: error: {line}", err=True)
        fail(failures[-1])
    return reports


@commands.command("worker")
@click.option("--once", is_flag=True, help="Run the jobs that are due, then exit.")
@click.option("--queue", "queues", multiple=True, type=click.Choice(SERVED_QUEUES),
              help="Serve only this queue (repeatable; default: all the worker runs).")  # fmt: skip
@click.option("--metrics-port", type=click.IntRange(1, 65535),
              help="Serve Prometheus metrics (queue depth, backlog signal) on this port.")  # fmt: skip
@click.option("--metrics-host", default="127.0.0.1", show_default=True, help="Address of the metrics port.")
@click.option("--backlog-threshold", type=click.IntRange(min=0),
              help=f"Signal a queue's backlog above this many due jobs [{DEFAULT_THRESHOLD}].")  # fmt: skip
@friendly_errors
def worker_command(
    once: bool,
    queues: tuple[str, ...],
    metrics_port: int | None,
    metrics_host: str,
    backlog_threshold: int | None,
) -> None:
    """Run the worker: ingestion runs, embeddings, graph projection, judges, cleanup after retraction.

    With --metrics-port (or --backlog-threshold) it also watches the depth of every queue: a
    queue whose due jobs exceed the threshold sets vera_queue_backlog_over_threshold and logs
    a warning once.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    database = database_from_env()
    start_if_embedded(database)
    app = _app(database)
    concurrency = database.settings.worker.concurrency
    backlog = None
    if metrics_port is not None or backlog_threshold is not None:
        read = database_queue_depths(
            database.worker_dsn, connect_timeout=database.settings.db.connect_timeout
        )
        threshold = DEFAULT_THRESHOLD if backlog_threshold is None else backlog_threshold
        graph_health = (
            database_graph_health(database.worker_dsn, connect_timeout=database.settings.db.connect_timeout)
            if database.settings.memory.graph_backend != "none"
            else None
        )
        backlog = BacklogMonitor(read, queues=SERVED_QUEUES, threshold=threshold, read_graph=graph_health)
    metrics_server = None
    if backlog is not None and metrics_port is not None:
        metrics_server = backlog.serve(metrics_port, metrics_host)
        click.echo(f"vera worker: metrics on http://{metrics_host}:{metrics_port}/metrics")
    until = "until idle" if once else "Ctrl+C stops"
    click.echo(f"vera worker: queues {', '.join(queues or served_queues(app))}; {until}")
    try:
        serve(
            app,
            database.worker_dsn,
            queues=queues or served_queues(app),
            once=once,
            concurrency=concurrency,
            stalled_after=database.settings.worker.stalled_after,
            backlog=backlog,
        )
    finally:
        if metrics_server is not None:
            metrics_server.shutdown()


@commands.command("ingest")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option(
    "--source", "source_name", help="The source to read (name or id); default: the one holding PATH."
)
@click.option("--group", help="The group of the source.")
@click.option("--no-wait", is_flag=True, help="Only queue the run for a running `vera worker`.")
@click.option(
    "--api-key", envvar="VERA_API_KEY", required=True, help="Key of a member of the source's group."
)
@friendly_errors
def ingest_command(path: Path | None, source_name: str | None, group: str | None, no_wait: bool,
                   api_key: str) -> None:  # fmt: skip
    """Read a registered source, or the part of one at PATH, incrementally.

    New and changed files are published, unchanged ones skipped, deleted ones
    retracted. Without --no-wait the queued run is worked off here, with progress.
    """
    if path is None and source_name is None:
        fail("give a PATH below a registered source's folder, or --source NAME")
    database = database_from_env()
    start_if_embedded(database)
    with VeraClient.from_settings(api_key, database.settings) as vera:
        if source_name is not None:
            source = vera.find_source(source_name, group)
            scope = None
            if path is not None:
                root = Path(str(source.config.get("root", "")))
                target = path.expanduser().resolve()
                if target != root and root not in target.parents:
                    fail(f"{path} is not inside source {source.name!r} ({root})")
                scope = None if target == root else target.relative_to(root).as_posix()
        else:
            assert path is not None
            source, scope = vera.source_for_path(path, group)
        job = vera.request_ingest(source.group_id, source.source_id, scope)
    click.echo(f"queued ingestion of {source.name!r}{f' ({scope})' if scope else ''}: job {job}")
    if no_wait:
        return
    reports = _drain_with_progress(database)
    click.echo(summarize(reports))
    if any(report.failed for report in reports):
        fail("some files could not be ingested (see above); they are read again on the next run")


@commands.command()
@friendly_errors
def demo() -> None:
    """Start the embedded PostgreSQL, ingest the example corpus through the worker, and ask it questions."""
    database = database_from_env()
    if database.server is not None:
        click.echo("starting the embedded PostgreSQL ...")
        server_status = database.server.start()
        click.echo(f"  running, data in {server_status.data_dir}")
    applied = database.migration_runner().migrate(on_apply=lambda m: click.echo(f"  applied {m.name}"))
    click.echo(f"migrations: {len(applied)} applied now, database up to date")
    ensure_local_app_login(database)
    demo_tenant = provisioning.ensure_tenant(database.admin_dsn, DEMO_ORGANISATION, DEMO_OWNER, DEMO_KEY_NAME)
    click.echo(f"tenant:     {DEMO_ORGANISATION} ({demo_tenant.group_id}), owner {DEMO_OWNER}")
    click.echo(f"api key:    {demo_tenant.api_key}")
    click.echo("            (a new key each run; earlier demo keys are revoked)")
    database = with_demo_graph(database)  # the graph projection beside the database

    example = example_dir()
    with VeraClient.from_settings(demo_tenant.api_key, database.settings) as vera:
        registered = register_manifest(vera, demo_tenant.group_id, example / "sources.toml")
        request_all(vera, registered)
    click.echo(f"\nexample corpus (Lumen Freight, fictional), {len(registered)} sources:")
    for source in registered:
        click.echo(f"  tier {source.trust_tier}  {source.name:<28} {source.config['root']}")
    click.echo("worker: reading them (embeddings by the local all-MiniLM-L6-v2) ...")
    reports = _drain_with_progress(database, extra_roots=(example,))  # the example corpus ships with VERA
    click.echo(f"worker: queue empty. {summarize(reports)}")

    with VeraClient.from_settings(demo_tenant.api_key, database.settings) as vera:
        for question, as_of in DEMO_QUESTIONS:
            hits = vera.search(question, k=3, as_of=as_of)
            when = f" (as of {as_of:%Y-%m-%d})" if as_of else ""
            click.echo(f"\n? {question}{when}")
            print_hits(hits, explain=False)
    show_demo_explore(database, demo_tenant.api_key)

    installed = Path(sys.executable).with_name("vera")
    command = shlex.quote(str(installed)) if installed.exists() else "vera"
    key = demo_tenant.api_key
    # the embedded server ships its own psql; for an external server, the one on PATH
    psql = str(database.server.bin_dir / "psql") if database.server is not None else "psql"
    click.echo("\nNext:")
    click.echo(f'  VERA_API_KEY={key} {command} search "who owns ledger-db?" --explain')
    click.echo(f"  VERA_API_KEY={key} {command} eval {example / 'golden.toml'}")
    click.echo(f"  VERA_API_KEY={key} {command} source list")
    click.echo(f"  {shlex.quote(psql)} {shlex.quote(database.app_dsn)}   # then, in one transaction:")
    click.echo("    begin;  -- the key travels as a parameter, never in the SQL text:")
    click.echo(f"    select vera.authenticate($1) \\bind {key} \\g")
    click.echo("    select rank, kind, text from vera.search('who owns ledger-db?'); commit;")
    stdio, http = agent_client_config(
        str(installed) if installed.exists() else "vera", key, database.settings.db
    )
    click.echo("\nConnect an agent (MCP; see docs/mcp.md). A local client that starts the server itself:")
    click.echo(json.dumps(stdio, indent=2, ensure_ascii=False))
    click.echo(f"Or over HTTP, after `{command} mcp serve --http`:")
    click.echo(json.dumps(http, indent=2, ensure_ascii=False))


# `vera mcp serve --http` listens here unless VERA_MCP_HOST / VERA_MCP_PORT say otherwise
MCP_HTTP_URL = "http://127.0.0.1:8765/mcp"


def agent_client_config(
    command: str, key: str, db: DbSettings
) -> tuple[dict[str, object], dict[str, object]]:
    """The `mcpServers` entries (Claude Desktop/Code style) that connect an agent to this memory:
    stdio (the client starts `vera mcp serve --stdio` with the key, and the database's location
    when it is not the default one) and streamable HTTP with the key as a Bearer token."""
    env = {"VERA_API_KEY": key}
    defaults = DbSettings()
    if db.embedded:
        located: list[tuple[str, object, object]] = [
            ("DATA_DIR", db.data_dir, defaults.data_dir),
            ("PORT", db.port, defaults.port),
            ("DATABASE", db.database, defaults.database),
        ]
        for name, value, default in located:
            if value != default:
                env[f"VERA_DB__{name}"] = str(value)
    stdio: dict[str, object] = {
        "mcpServers": {"vera": {"command": command, "args": ["mcp", "serve", "--stdio"], "env": env}}
    }
    bearer = {"Authorization": f"Bearer {key}"}
    http: dict[str, object] = {
        "mcpServers": {"vera": {"type": "http", "url": MCP_HTTP_URL, "headers": bearer}}
    }
    return stdio, http
