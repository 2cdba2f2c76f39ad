"""`vera tenant`: organisations and the login roles of SQL applications, for operators."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vera_cli.output import echo_json, echo_json_lines
from vera_cli.plumbing import database_from_env, fail, friendly_errors, start_if_embedded
from vera_client.domain.deployment import LoginLimits

if TYPE_CHECKING:
    from vera_client.bootstrap import Database


@click.group()
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
    from vera_client.adapters.postgres import provisioning

    database = database_from_env()
    created = provisioning.create_tenant(database.admin_dsn, organisation, owner, email)
    roots = local_source_roots(database, created.group_id)
    if as_json:
        echo_json({**dataclasses.asdict(created), "source_roots": roots})
        return
    click.echo(f"organisation: {created.group_id}")
    click.echo(f"owner:        {created.owner_principal_id}")
    click.echo(f"api key:      {created.api_key}   (shown once; store it now)")
    if roots:
        click.echo(f"folders:      {', '.join(roots)}   (its sources may lie below them; embedded install)")
    else:
        click.echo(f"folders:      none yet: vera tenant roots add {created.group_id} PATH")


def local_source_roots(
    database: Database, organisation: str, *extra: Path, embedded_only: bool = True
) -> list[str]:
    """On an embedded install (the user's own database), the user's own folders become the
    organisation's source roots: the worker's VERA_WORKER__SOURCE_ROOTS (default: the home
    folder) and extra; elsewhere an operator adds them (`vera tenant roots add`), unless
    embedded_only is False (`vera demo`: its own organisation, made with the admin DSN)."""
    from vera_client.adapters.postgres import provisioning

    if embedded_only and database.server is None:
        return []
    folders = [*database.settings.worker.source_roots, *extra]
    provisioning.add_source_roots(database.admin_dsn, organisation, folders)
    return [str(folder.expanduser().resolve()) for folder in folders]


@tenant.group("roots")
def tenant_roots() -> None:
    """The folders each organisation's folder sources may lie in (checked at `vera source add`
    and again by the worker, within its own VERA_WORKER__SOURCE_ROOTS)."""


@tenant_roots.command("add")
@click.argument("organisation")
@click.argument("path", type=click.Path(path_type=Path))
@friendly_errors
def tenant_roots_add(organisation: str, path: Path) -> None:
    """Let ORGANISATION's (id or name) folder sources lie at or below PATH (its real path is kept)."""
    from vera_client.adapters.postgres import provisioning

    database = database_from_env()
    start_if_embedded(database)
    group = provisioning.add_source_roots(database.admin_dsn, organisation, [path])
    click.echo(f"{group}: folder sources may lie below {path.expanduser().resolve()}")


@tenant_roots.command("remove")
@click.argument("organisation")
@click.argument("path", type=click.Path(path_type=Path))
@friendly_errors
def tenant_roots_remove(organisation: str, path: Path) -> None:
    """Withdraw PATH from ORGANISATION's folders; sources below it are refused from their next run."""
    from vera_client.adapters.postgres import provisioning

    database = database_from_env()
    start_if_embedded(database)
    if not provisioning.remove_source_root(database.admin_dsn, organisation, path):
        fail(f"{path} is not among the folders of {organisation} (see vera tenant roots list)")
    click.echo(f"{organisation}: {path} withdrawn")


@tenant_roots.command("list")
@click.argument("organisation", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per folder.")
@friendly_errors
def tenant_roots_list(organisation: str | None, as_json: bool) -> None:
    """The folders of ORGANISATION (id or name), or of every organisation."""
    from vera_client.adapters.postgres import provisioning

    database = database_from_env()
    start_if_embedded(database)
    found = provisioning.list_source_roots(database.admin_dsn, organisation)
    if as_json:
        echo_json_lines(found)
        return
    if not found:
        click.echo("no folders: an organisation without any may register no folder source "
                   "(vera tenant roots add ORGANISATION PATH)")  # fmt: skip
    for item in found:
        click.echo(f"{item.group_id}  {item.organisation_name!r:<28} {item.root}")


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
    from vera_client.adapters.postgres import provisioning

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
    from vera_client.adapters.postgres import provisioning

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
    from vera_client.adapters.postgres import provisioning

    database = database_from_env()
    start_if_embedded(database)
    ended = provisioning.drop_app_login(database.admin_dsn, name)
    click.echo(f"dropped {provisioning.app_login_role(name)} ({ended} sessions ended)")
