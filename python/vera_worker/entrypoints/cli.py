"""The worker's part of the `vera` command line: `vera worker`, `vera ingest`,
`vera demo` (vera_cli assembles the whole command)."""

from __future__ import annotations

import dataclasses
import getpass
import json
import logging
import shlex
import sys
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click
import procrastinate

from vera_client.adapters.examples import example_dir
from vera_client.adapters.postgres import provisioning
from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.providers.chat import worker_models
from vera_client.bootstrap import Database, build_providers
from vera_client.client import VeraClient
from vera_client.config import DbSettings, LlmSettings
from vera_client.domain.errors import VeraError
from vera_client.domain.time_scopes import EXTRACTION_VERSION
from vera_client.entrypoints.cli import (
    api_key_option,
    check_reachable,
    client_from_env,
    database_from_env,
    ensure_local_app_login,
    fail,
    friendly_errors,
    print_hits,
    start_if_embedded,
)
from vera_client.entrypoints.sources import source_holding
from vera_worker.adapters.embedding import FactEmbedding
from vera_worker.adapters.extraction import PassageExtraction
from vera_worker.adapters.judges import Judges
from vera_worker.adapters.queue import SERVED_QUEUES, build_app, serve, served_queues
from vera_worker.adapters.queue_metrics import (
    DEFAULT_THRESHOLD,
    BacklogMonitor,
    database_graph_health,
    database_queue_depths,
)
from vera_worker.connectors.folder.events import IngestEvent, IngestReport, combined
from vera_worker.connectors.folder.manifest import register_manifest, request_all
from vera_worker.connectors.folder.run import IngestRequest, SourceIngestion
from vera_worker.entrypoints.graph_cli import graph_projection, show_demo_explore, with_demo_graph
from vera_worker.entrypoints.interrupt import EXIT_INTERRUPTED, StopRequest, drain_interruptibly
from vera_worker.entrypoints.logs import configure_worker_logging
from vera_worker.entrypoints.progress import IngestProgress, summarize

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


def _app(
    database: Database,
    sql: Executor,
    *,
    on_progress: Callable[[IngestEvent], None] | None = None,
    on_report: Callable[[IngestReport], None] | None = None,
    on_failure: Callable[[IngestRequest, VeraError], None] | None = None,
    extra_roots: Sequence[Path] = (),
    should_stop: Callable[[], bool] = lambda: False,
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
        sql,
        objects=objects,
        embedder_for_model=providers.embedder_for_model,
        on_progress=on_progress,
        on_report=reported,
        on_failure=on_failure,
        allowed_roots=(*settings.worker.source_roots, *extra_roots),
        should_stop=should_stop,
    )
    embedding = FactEmbedding(sql, embedder_for_model=providers.embedder_for_model)
    models = worker_models(settings.llm)  # None without VERA_LLM__BASE_URL: extraction and judges off
    extraction = judges = None
    if models is not None:
        extraction = PassageExtraction(
            sql,
            model=models.extraction,
            embedder_for_model=providers.embedder_for_model,
            max_claims_per_passage=settings.llm.max_claims_per_passage,
        )
        judges = Judges(sql, model=models.judge)
    return build_app(
        database.worker_dsn,
        objects=objects,
        projection=graph_projection(database, sql),
        ingestion=ingestion,
        embedding=embedding,
        extraction=extraction,
        judges=judges,
    )


@dataclass(frozen=True, slots=True)
class Drained:
    """What working the queue off here did: the runs' reports, and whether Ctrl-C cut it short."""

    reports: list[IngestReport]
    interrupted: bool


def _drain_with_progress(database: Database, extra_roots: Sequence[Path] = ()) -> Drained:
    """Work the queue off here, showing progress; a run that failed as a whole is one error line."""
    reports: list[IngestReport] = []
    failures: list[str] = []

    def failed(request: IngestRequest, error: VeraError) -> None:
        failures.append(f"ingestion of source {request.source_id} failed: {error}")

    # the failure is reported here in one line; Procrastinate would log it with a traceback
    logging.getLogger("procrastinate").setLevel(logging.CRITICAL)
    # a failed file or a warning is shown once, by the progress: not again by the log's last resort
    quiet = logging.getLogger("vera_worker")
    if not any(isinstance(handler, logging.NullHandler) for handler in quiet.handlers):
        quiet.addHandler(logging.NullHandler())
    check_reachable(database, database.worker_dsn)
    stop = StopRequest()
    with closing(database.worker_executor()) as sql, IngestProgress() as progress:
        app = _app(
            database,
            sql,
            on_progress=progress,
            on_report=reports.append,
            on_failure=failed,
            extra_roots=extra_roots,
            should_stop=stop,
        )
        interrupted = drain_interruptibly(
            app,
            stop,
            stalled_after=database.settings.worker.stalled_after,
            say=progress.say,
            before_hard_stop=progress.close,
        )
    if failures:
        for line in failures[:-1]:
            click.echo(f"vera: error: {line}", err=True)
        fail(failures[-1])
    return Drained(reports, interrupted)


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
    configure_worker_logging()
    database = database_from_env()
    start_if_embedded(database)
    check_reachable(database, database.worker_dsn)
    sql = database.worker_executor()  # the one pool of this process, shared by every job
    app = _app(database, sql)
    concurrency = database.settings.worker.concurrency
    backlog = None
    if metrics_port is not None or backlog_threshold is not None:
        read = database_queue_depths(sql)
        threshold = DEFAULT_THRESHOLD if backlog_threshold is None else backlog_threshold
        graph_health = (
            database_graph_health(sql) if database.settings.memory.graph_backend != "none" else None
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
            queues=queues or served_queues(app),
            once=once,
            concurrency=concurrency,
            stalled_after=database.settings.worker.stalled_after,
            backlog=backlog,
        )
    finally:
        if metrics_server is not None:
            metrics_server.shutdown()
        sql.close()


@commands.command("ingest")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option(
    "--source", "source_name", help="The source to read (name or id); default: the one holding PATH."
)
@click.option("--group", help="The group of the source.")
@click.option("--no-wait", is_flag=True, help="Only queue the run for a running `vera worker`.")
@click.option("--json", "as_json", is_flag=True, help="The summary as one JSON object (progress on stderr).")
@api_key_option("Key of a member of the source's group.")
@friendly_errors
def ingest_command(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    path: Path | None, source_name: str | None, group: str | None, no_wait: bool, as_json: bool, api_key: str
) -> None:
    """Read a registered source, or the part of one at PATH, incrementally.

    New and changed files are published, unchanged ones skipped, deleted ones
    retracted. Without --no-wait the queued run is worked off here, with progress;
    Ctrl-C stops it after the file in hand (exit 130), a second Ctrl-C at once.
    """
    if path is None and source_name is None:
        fail("give a PATH below a registered source's folder, or --source NAME")
    database = database_from_env()
    start_if_embedded(database)
    with client_from_env(api_key, database) as vera:
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
            source, scope = source_holding(vera, path, group)
        job = vera.request_ingest(source.group_id, source.source_id, scope)
    queued = f"queued ingestion of {source.name!r}{f' ({scope})' if scope else ''}: job {job}"
    if no_wait:
        if as_json:
            click.echo(json.dumps({"queued": job, "source": source.name, "path": scope}))
        else:
            click.echo(queued)
        return
    click.echo(queued, err=as_json)
    drained = _drain_with_progress(database)
    if as_json:
        click.echo(json.dumps(combined(drained.reports).as_json(), ensure_ascii=False))
    else:
        click.echo(summarize(drained.reports))
    if drained.interrupted:
        click.echo("vera: stopped by Ctrl-C; what was read is kept, `vera ingest` reads the rest", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if any(report.failed for report in drained.reports):
        fail("some files could not be ingested (see above); they are read again on the next run")


def _extraction_line(llm: LlmSettings) -> str:
    if not llm.enabled:
        return (
            "  free-text extraction is off (no model configured: VERA_LLM__BASE_URL, see docs/extraction.md)"
        )
    return f"  free-text extraction by {llm.extraction_model} at {llm.base_url}"


@commands.command("reprocess")
@click.option("--group", required=True, help="The group whose passages to extract again.")
@click.option(
    "--time-scopes",
    is_flag=True,
    help="Read the passages' time scopes again instead (no model; an admin of the group).",
)
@click.option("--no-wait", is_flag=True, help="Only queue the job for a running `vera worker`.")
@click.option("--api-key", envvar="VERA_API_KEY", required=True, help="Key of a member of the group.")
@friendly_errors
def reprocess_command(group: str, time_scopes: bool, no_wait: bool, api_key: str) -> None:
    """Extract the group's passages again with the configured extraction model.

    Passages the current model and prompt version have already been through are
    skipped; the others (extracted by an earlier version, or never) go to the model.
    With --time-scopes, the periods each passage states are read again by this
    version of VERA's reader, here and now (docs/time.md).
    """
    database = database_from_env()
    if time_scopes:
        if no_wait:
            fail("--time-scopes reads here and now, with no job to queue: leave out --no-wait")
        start_if_embedded(database)
        with VeraClient.from_settings(api_key, database.settings) as vera:
            read = vera.read_time_scopes(group)
        click.echo(
            f"time scopes read again: {read} passages of {group} (reader version {EXTRACTION_VERSION})"
        )
        return
    if not database.settings.llm.enabled:
        fail("no extraction model is configured: set VERA_LLM__BASE_URL (see docs/extraction.md)")
    start_if_embedded(database)
    with VeraClient.from_settings(api_key, database.settings) as vera:
        job = vera.request_extraction(group, redo=True)
    click.echo(f"queued extraction of {group}'s passages: job {job}")
    if not no_wait:
        _drain_with_progress(database)
        click.echo("extraction done (see the worker's log for counts)")


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
    key_name = demo_key_name()
    demo_tenant = provisioning.ensure_tenant(
        database.admin_dsn, DEMO_ORGANISATION, DEMO_OWNER, key_name, revoke_earlier=False
    )
    api_key, revoked = own_demo_key(database, demo_tenant.api_key, key_name)
    demo_tenant = dataclasses.replace(demo_tenant, api_key=api_key)
    click.echo(f"tenant:     {DEMO_ORGANISATION} ({demo_tenant.group_id}), owner {DEMO_OWNER}")
    click.echo(f"api key:    {demo_tenant.api_key}")
    click.echo(
        f"            (a new key each run, named {key_name!r}; {revoked} earlier ones of that name revoked)"
    )
    database = with_demo_graph(database)  # the graph projection beside the database

    example = example_dir()
    with VeraClient.from_settings(demo_tenant.api_key, database.settings) as vera:
        registered = register_manifest(vera, demo_tenant.group_id, example / "sources.toml")
        request_all(vera, registered)
    click.echo(f"\nexample corpus (Lumen Freight, fictional), {len(registered)} sources:")
    for source in registered:
        click.echo(f"  tier {source.trust_tier}  {source.name:<28} {source.config['root']}")
    click.echo("worker: reading them (embeddings by the local all-MiniLM-L6-v2) ...")
    click.echo(_extraction_line(database.settings.llm))
    drained = _drain_with_progress(database, extra_roots=(example,))  # the example corpus ships with VERA
    if drained.interrupted:
        click.echo(f"worker: stopped by Ctrl-C. {summarize(drained.reports)}")
        sys.exit(EXIT_INTERRUPTED)
    click.echo(f"worker: queue empty. {summarize(drained.reports)}")

    with VeraClient.from_settings(demo_tenant.api_key, database.settings) as vera:
        for question, as_of in DEMO_QUESTIONS:
            hits = vera.search(question, k=3, as_of=as_of)
            when = f" (as of {as_of:%Y-%m-%d})" if as_of else ""
            click.echo(f"\n? {question}{when}")
            print_hits(hits, explain=False)
    show_demo_explore(database, demo_tenant.api_key)
    _print_next_steps(database, demo_tenant.api_key, example)


def _print_next_steps(database: Database, key: str, example: Path) -> None:
    """What to try next with the demo's key: the CLI, psql, and an agent over MCP."""
    installed = Path(sys.executable).with_name("vera")
    command = shlex.quote(str(installed)) if installed.exists() else "vera"
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


def demo_key_name() -> str:
    """The demo's keys carry the OS user who ran it: a re-run revokes only its own earlier keys,
    never another user's demo key on a shared database, nor a key made with `vera key create`."""
    return f"{DEMO_KEY_NAME} ({getpass.getuser()})"


def own_demo_key(database: Database, issued: str, key_name: str) -> tuple[str, int]:
    """The key this demo run hands out, and how many earlier keys of its name it revoked.

    Through the SQL API as the demo owner: a tenant created just now came with its
    'initial key', which is swapped for one named key_name at once (so every key a demo
    hands out carries its name); then the owner's other live keys of that name are revoked."""
    with VeraClient.from_settings(issued, database.settings) as vera:
        keys = vera.list_api_keys()
        mine = next(k for k in keys if issued.startswith(f"vera_{k.prefix}_"))
        if mine.name != key_name:  # the tenant's initial key, made by this run: nothing else to revoke
            renamed = vera.create_api_key(key_name)
            vera.revoke_api_key(str(mine.key_id))
            return renamed.api_key, 0
        earlier = [k for k in keys if k.name == key_name and k.revoked_at is None and k.key_id != mine.key_id]
        return issued, sum(int(vera.revoke_api_key(str(k.key_id))) for k in earlier)


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
