"""The client's part of the `vera` command line (database, search, feedback,
evaluation, tenants; sources and keys have modules of their own) and the
helpers every part shares. User
mistakes end in one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar
from uuid import UUID

import click
import pydantic

from vera_client.adapters.postgres import deployment, embedded, provisioning
from vera_client.adapters.postgres.errors import redact
from vera_client.adapters.postgres.executor import check_reachable as reachable
from vera_client.api.search import Hit
from vera_client.bootstrap import Database, build_database
from vera_client.client import VeraClient
from vera_client.config import VeraSettings
from vera_client.domain.deployment import LoginLimits, ServerStatus
from vera_client.domain.errors import (
    ConfigurationError,
    InvalidArgumentError,
    VeraError,
)
from vera_client.domain.golden import evaluate, load_golden_set, score_query
from vera_client.domain.time_scopes import TimeRange, as_period, query_time

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str) -> NoReturn:
    click.echo(f"vera: error: {message}", err=True)
    sys.exit(1)


def friendly_errors(command: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except VeraError as exc:
            fail(str(exc))
        except pydantic.ValidationError as exc:
            problem = exc.errors()[0]
            where = "__".join(str(part) for part in problem["loc"]).upper()
            fail(f"invalid setting VERA_{where}: {problem['msg']}")
        raise AssertionError("unreachable")  # pragma: no cover

    return wrapper


MISSING_KEY = "set VERA_API_KEY or pass --api-key"


def _require_api_key(_context: click.Context, _param: click.Parameter, value: str | None) -> str:
    if not value:
        fail(MISSING_KEY)
    return value


def api_key_option(purpose: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """--api-key (or VERA_API_KEY) of a command that acts as a caller; missing, one line says so."""
    return click.option("--api-key", envvar="VERA_API_KEY", callback=_require_api_key, help=purpose)


class IsoInstant(click.ParamType):  # type: ignore[type-arg]
    """An instant in ISO 8601: a date (midnight UTC), or a date and time with or without an offset
    (2026-06-01T12:00:00+07:00, ...Z; UTC when none), as `--json` prints them."""

    name = "instant"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            instant = value
        else:
            try:
                instant = datetime.fromisoformat(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not an ISO 8601 date or date and time", param, ctx)
        return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)


ISO_INSTANT = IsoInstant()


class AskedPeriod(click.ParamType):  # type: ignore[type-arg]
    """The period a search asks about: START..END as ISO dates, end exclusive, either side empty
    for open (2020-03-01..2020-04-01, 2019-01-01..), or words the query reader understands
    ("1811-1827", "March 2020", "since 2019"; docs/time.md)."""

    name = "period"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> TimeRange:
        if isinstance(value, TimeRange):
            return value
        text = str(value).strip()
        if ".." in text:
            start, _, end = text.partition("..")
            try:
                days = tuple(date.fromisoformat(d.strip()) if d.strip() else None for d in (start, end))
            except ValueError:
                self.fail(
                    f"{text!r}: START..END takes ISO dates (YYYY-MM-DD), either may be empty", param, ctx
                )
            try:
                return as_period((days[0], days[1]))
            except InvalidArgumentError as error:
                self.fail(str(error), param, ctx)
        period = query_time(text)
        if period is None:
            self.fail(
                f"no period in {text!r}: give START..END (ISO dates) or a year, month or range", param, ctx
            )
        return period


ASKED_PERIOD = AskedPeriod()


def echo_json(data: object) -> None:
    """One JSON document on stdout (dates and ids as strings, text as written)."""
    click.echo(json.dumps(data, default=str, ensure_ascii=False))


def echo_json_lines(items: Sequence[object]) -> None:
    """One JSON object per line for each item (a dataclass): what a list command's --json prints."""
    for item in items:
        echo_json(dataclasses.asdict(item))  # type: ignore[call-overload]


def database_from_env(tcp: bool | None = None) -> Database:
    settings = VeraSettings()
    if tcp is not None and tcp != settings.db.tcp:
        settings = settings.model_copy(update={"db": settings.db.model_copy(update={"tcp": tcp})})
    return build_database(settings)


def _embedded(database: Database) -> None:
    if database.server is None:
        raise ConfigurationError(
            "VERA_DB__DSN points at an external PostgreSQL; the embedded server is not used"
        )


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
def commands() -> None:
    """The client's commands; `vera` (vera_cli) adds them beside the worker's and the MCP server's."""


@commands.group()
def db() -> None:
    """The database: embedded server lifecycle and migrations."""


@db.command()
@click.option("--tcp/--no-tcp", default=None, help="Also listen on 127.0.0.1 (password auth).")
@friendly_errors
def start(tcp: bool | None) -> None:
    """Start the embedded PostgreSQL (initialising it on first use)."""
    database = database_from_env(tcp)
    _embedded(database)
    assert database.server is not None
    _print_status(database.server.start())


@db.command()
@friendly_errors
def stop() -> None:
    """Stop the embedded PostgreSQL."""
    database = database_from_env()
    _embedded(database)
    assert database.server is not None
    _print_status(database.server.stop())


@db.command()
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object: server, migrations, job queue, indexes."
)
@friendly_errors
def status(as_json: bool) -> None:
    """Show the server (when embedded) and which migrations are applied."""
    database = database_from_env()
    report: dict[str, object] = {}
    if database.server is not None:
        server_status = database.server.status()
        report["server"] = dataclasses.asdict(server_status) | {"embedded": True}
        if not as_json:
            _print_status(server_status)
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
    click.echo(deployment.psql_script(), nl=False)


@db.command()
@click.option("--min-rows", default=5000, show_default=True, type=click.IntRange(min=1),
              help="Vectors a group needs in a table before it gets an HNSW index of its own.")  # fmt: skip
@friendly_errors
def maintain(min_rows: int) -> None:
    """Build the per-group HNSW indexes that search needs (concurrently)."""
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


def _citation_line(hit: Hit) -> str:
    citation = hit.citation
    source = citation.get("source") or {}
    episode = citation.get("episode") or {}
    assert isinstance(source, dict) and isinstance(episode, dict)
    valid = str(citation.get("valid_from") or "")[:10]
    until = str(citation.get("valid_to") or "")[:10]
    lifecycle = citation.get("lifecycle")
    parts = [f"{source.get('name', '?')} (tier {citation.get('tier')})", str(episode.get("external_id", ""))]
    parts.append(f"valid {valid}..{until}" if until else f"valid from {valid}")
    if lifecycle and lifecycle != "published":
        parts.append(str(lifecycle))
    return " · ".join(part for part in parts if part)


def print_hits(hits: list[Hit], *, explain: bool) -> None:
    during = getattr(hits, "during", None)
    if during is not None:
        shown = f"{during.start or '...'} .. {during.end or '...'}"
        read = f" (from {during.text!r})" if during.text != shown else ""
        click.echo(f"  asked about {shown}{read}")
    if not hits:
        click.echo("  (no hits)")
    for hit in hits:
        click.echo(f"  {hit.rank:>2}. {hit.score:.3f}  {hit.text}")
        click.echo(f"      {_citation_line(hit)}")
        if explain:
            click.echo("      " + _signals_line(dataclasses.asdict(hit.signals)))


def _signals_line(signals: dict[str, float | None]) -> str:
    """The signals as "name value" pairs (period only when the search asked about a period)."""
    return "  ".join(f"{name} {value:.2f}" for name, value in signals.items() if value is not None)


@commands.command("search")
@click.argument("query")
@api_key_option("Key of the principal to search as.")
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 1000), help="Hits to return.")
@click.option(
    "--as-of",
    type=ISO_INSTANT,
    help="Instant to answer for: ISO 8601 date, or date and time (UTC unless an offset).",
)
@click.option("--group", "groups", multiple=True, help="Search only this group (repeatable).")
# the stage-1 knobs of vera.search, its defaults; vera.search checks them (one line on a bad value)
@click.option(
    "--k-rrf", type=int, default=1, show_default=True, help="RRF constant: weight / (k_rrf + rank)."
)
@click.option(
    "--candidates",
    type=int,
    default=None,
    help="Candidates each half retrieves.  [default: 4 x k, at least 40; 4 x the reranker's top_n if larger]",
)
@click.option(
    "--ef-search",
    type=int,
    default=None,
    help="HNSW search breadth of the vector half.  [default: max(100, candidates), at most 1000]",
)
@click.option(
    "--during",
    type=ASKED_PERIOD,
    help="The period the query asks about (START..END ISO dates, end exclusive, or words such as"
    " 1811-1827); wins over the one its words state.",
)
@click.option(
    "--no-time-detection",
    "detect_time",
    flag_value=False,
    default=True,
    help="Do not read the period the query asks about from its words (docs/time.md).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per hit.")
@click.option("--explain", is_flag=True, help="Show the signals of each hit.")
@friendly_errors
def search_command(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    query: str,
    api_key: str,
    k: int,
    as_of: datetime | None,
    groups: tuple[str, ...],
    k_rrf: int,
    candidates: int | None,
    ef_search: int | None,
    during: TimeRange | None,
    detect_time: bool,
    as_json: bool,
    explain: bool,
) -> None:
    """Ranked, cited hits for QUERY (hybrid when the groups' pinned embedder runs here); a period
    its words state ("from 1811 to 1827") is asked about, and said."""
    with client_from_env(api_key) as vera:
        hits = vera.search(
            query,
            k=k,
            as_of=as_of,
            groups=groups or None,
            k_rrf=k_rrf,
            candidates=candidates,
            ef_search=ef_search,
            during=during,
            detect_time=detect_time,
        )
    if as_json:
        echo_json_lines(hits)
    else:
        print_hits(hits, explain=explain)


@commands.command("feedback")
@click.argument("kind", type=click.Choice(["fact", "passage"]))
@click.argument("item_id", type=click.UUID)
@click.argument("vote", type=click.Choice(["up", "down"]))
@click.option("--query", "text", required=True, help="The query the hit answered.")
@click.option("--json", "as_json", is_flag=True, help="The recorded vote as one JSON object.")
@api_key_option("Key of the principal who votes.")
@friendly_errors
def feedback_command(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    kind: str, item_id: UUID, vote: str, text: str, as_json: bool, api_key: str
) -> None:
    """Vote on a hit (KIND ITEM_ID from `vera search --json`) of a query."""
    with client_from_env(api_key) as vera:
        recorded = vera.feedback(kind, item_id, text, vote)
    if as_json:
        echo_json(dataclasses.asdict(recorded))
        return
    verb = "recorded" if recorded.created else "replaced the earlier vote with"
    click.echo(f"{verb} {vote} on {kind} {item_id} in {recorded.group_id}")
    click.echo("  signals: " + _signals_line(recorded.signals))


@commands.command("calibrate")
@click.argument("group")
@click.option("--min-samples", type=click.IntRange(min=1), help="Votes needed to keep the weights.")
@click.option("--json", "as_json", is_flag=True, help="The calibration as one JSON object.")
@api_key_option("Key of an admin of GROUP.")
@friendly_errors
def calibrate_command(group: str, min_samples: int | None, as_json: bool, api_key: str) -> None:
    """Derive GROUP's blend weights from its votes (the mean-difference rule)."""
    with client_from_env(api_key) as vera:
        result = vera.calibrate(group, min_samples)
    if as_json:
        echo_json(dataclasses.asdict(result))
        return
    click.echo(f"votes: {result.sample_count} ({result.helpful} up, {result.unhelpful} down)")
    if result.separation:
        # a signal no vote tells about (period, without votes on searches that asked a period) is "-"
        gaps = (f"{n} {v:+.3f}" if v is not None else f"{n} -" for n, v in result.separation.items())
        click.echo("separation: " + "  ".join(gaps))
    if result.weights:
        shown = {n: v for n, v in result.weights.items() if n != "half_life"}
        click.echo("weights:    " + "  ".join(f"{n} {float(v):.3f}" for n, v in shown.items()))
    if result.persisted:
        click.echo(f"kept as the active weight set {result.weight_set_id}: search uses it from now on")
    else:
        click.echo("not kept: it needs both kinds of vote, a separating signal and enough votes")


@commands.command("eval")
@click.argument("golden_file", type=click.Path(path_type=Path))
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object: each query's verdict and the figures."
)
@api_key_option("Key of the principal to search as.")
@friendly_errors
def eval_command(golden_file: Path, as_json: bool, api_key: str) -> None:
    """Score a golden set with the real vera.search: hit@k, MRR, nDCG@10.

    Exits 1 when a figure is below the file's thresholds.
    """
    golden = load_golden_set(golden_file)
    with client_from_env(api_key) as vera:
        scores = []
        for item in golden.queries:
            hits = vera.search(item.text, k=max(golden.k, 10), as_of=item.as_of, groups=item.groups)
            scores.append(score_query(item, hits, golden.k))
    result = evaluate(golden, scores)
    if as_json:
        echo_json({
            "queries": [
                {"query": score.query.text, "as_of": score.query.as_of, "hit": score.hit,
                 "first_right": score.first_right, "rejected_first": score.rejected_first}
                for score in result.scores
            ],
            "k": golden.k,
            "figures": result.figures,
            "passed": result.passed,
            "failures": list(result.failures),
        })  # fmt: skip
        if not result.passed:
            sys.exit(1)
        return
    click.echo(f"{'':>3} {'right':>5} {'rank':>4}  query")
    for position, score in enumerate(result.scores, start=1):
        verdict = "yes" if score.hit else ("WRONG" if score.rejected_first else "no")
        rank = str(score.first_right) if score.first_right else "-"
        as_of = f"  (as of {score.query.as_of:%Y-%m-%d})" if score.query.as_of else ""
        click.echo(f"{position:>3} {verdict:>5} {rank:>4}  {score.query.text}{as_of}")
    figures = result.figures
    click.echo(
        f"hit@{golden.k} {figures['hit_at_k']:.3f}   MRR {figures['mrr']:.3f}   "
        f"nDCG@10 {figures['ndcg_at_10']:.3f}   ({len(result.scores)} queries)"
    )
    if not result.passed:
        fail("below threshold: " + ", ".join(result.failures))


@commands.group()
def tenant() -> None:
    """Tenants (organisations), for operators."""


@tenant.command("create")
@click.argument("organisation")
@click.option("--owner", required=True, help="Display name of the organisation's first owner.")
@click.option("--email", default=None, help="Owner's e-mail.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: organisation, owner, API key.")
@friendly_errors
def tenant_create(organisation: str, owner: str, email: str | None, as_json: bool) -> None:
    """Create an organisation and print its owner's first API key (shown once)."""
    database = database_from_env()
    created = provisioning.create_tenant(database.admin_dsn, organisation, owner, email)
    if as_json:
        echo_json(dataclasses.asdict(created))
        return
    click.echo(f"organisation: {created.group_id}")
    click.echo(f"owner:        {created.owner_principal_id}")
    click.echo(f"api key:      {created.api_key}   (shown once; store it now)")


@tenant.group("login")
def tenant_login() -> None:
    """Login roles of SQL applications: one per application, a member of vera_app, with limits."""


@tenant_login.command("create")
@click.argument("name")
@click.option("--connection-limit", default=LoginLimits().connection_limit, show_default=True,
              type=int, help="Sessions the application may hold at once.")  # fmt: skip
@click.option("--statement-timeout", default=LoginLimits().statement_timeout, show_default=True,
              help="Longest statement (500ms, 30s, 2min, ...; 0 = none).")  # fmt: skip
@click.option("--idle-timeout", default=LoginLimits().idle_in_transaction_timeout, show_default=True,
              help="Longest idle time inside a transaction before its session ends (0 = none).")  # fmt: skip
@click.option("--password/--no-password", default=True, show_default=True,
              help="Generate a password (--no-password: for trust, peer or certificate auth).")  # fmt: skip
@friendly_errors
def tenant_login_create(
    name: str, connection_limit: int, statement_timeout: str, idle_timeout: str, password: bool
) -> None:
    """Create the login role vera_app_NAME of one SQL application and print its DSN.

    An existing login of that name is refused (drop it first): a new password
    is never handed out silently.
    """
    database = database_from_env()
    start_if_embedded(database)
    limits = LoginLimits(
        connection_limit=connection_limit,
        statement_timeout=statement_timeout,
        idle_in_transaction_timeout=idle_timeout,
    )
    secret = provisioning.generate_password() if password else None
    role = provisioning.create_app_login(database.admin_dsn, name, limits, password=secret)
    click.echo(f"login:    {role} (member of {provisioning.APP_GROUP})")
    click.echo(
        f"limits:   {limits.connection_limit} connections, statement_timeout {limits.statement_timeout}, "
        f"idle_in_transaction_session_timeout {limits.idle_in_transaction_timeout}"
    )
    if database.server is not None:
        click.echo(f"dsn:      {database.server.url(role)}")
        click.echo("          (embedded server: its Unix socket trusts the OS user, no password is asked)")
        if secret is not None:
            click.echo(f"password: {secret}   (shown once; needed over TCP, vera db start --tcp)")
        return
    base = database.settings.db.dsn or database.admin_dsn
    click.echo(f"dsn:      {provisioning.login_dsn(base, role, secret)}")
    if secret is not None:
        click.echo("          (password shown once: store it now; the server keeps only its SCRAM verifier)")
    else:
        click.echo("          (no password: the server must authenticate this role another way, e.g. cert)")


@tenant_login.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per login.")
@friendly_errors
def tenant_login_list(as_json: bool) -> None:
    """The application logins, their limits and sessions now."""
    database = database_from_env()
    start_if_embedded(database)
    logins = provisioning.list_app_logins(database.admin_dsn)
    if as_json:
        echo_json_lines(logins)
        return
    if not logins:
        click.echo("no application logins: create one with vera tenant login create NAME")
    for login in logins:
        limits = login.limits
        state = "" if login.can_login else "  (cannot log in)"
        click.echo(
            f"{login.role:<32} {limits.connection_limit:>5} connections  "
            f"statement {limits.statement_timeout:<6} idle {limits.idle_in_transaction_timeout:<6} "
            f"{login.sessions:>3} sessions now{state}"
        )


@tenant_login.command("drop")
@click.argument("name")
@friendly_errors
def tenant_login_drop(name: str) -> None:
    """Drop application login NAME, ending its sessions first."""
    database = database_from_env()
    start_if_embedded(database)
    ended = provisioning.drop_app_login(database.admin_dsn, name)
    click.echo(f"dropped {provisioning.app_login_role(name)} ({ended} sessions ended)")


def ensure_local_app_login(database: Database) -> None:
    """The embedded server's application login, created (or given its limits) after a migrate."""
    if database.server is not None:
        provisioning.create_app_login(
            database.admin_dsn, embedded.APP_ROLE, embedded.APP_LIMITS, exists_ok=True
        )


def client_from_env(api_key: str, database: Database | None = None) -> VeraClient:
    """The typed client as the environment configures it (the embedded server started if it is used).

    One plain connection first: a wrong or unreachable DSN is one line at once, rather than a
    connection pool retrying (and logging each attempt) until its timeout."""
    if database is None:
        database = build_database(VeraSettings())
        start_if_embedded(database)
    check_reachable(database, database.app_dsn)
    return VeraClient.from_settings(api_key, database.settings)


def check_reachable(database: Database, dsn: str) -> None:
    """DatabaseUnavailableError, in one line, unless one plain connection to dsn opens (before a
    pool is built on it: a pool retries and logs each failed attempt until its timeout)."""
    reachable(dsn, connect_timeout=database.settings.db.connect_timeout)


def start_if_embedded(database: Database) -> None:
    if database.server is not None:
        database.server.start()
