"""`vera member disable|enable|keys|revoke-key`: offboarding a person, for admins, over the SQL
API's functions (vera.disable_principal, enable_principal, list_member_keys, revoke_member_key;
sql/functions/065_offboarding.sql). Disabling stops every key and OIDC login of the principal
from the next transaction on; an admin lists and revokes a member's keys, never issues one."""

from __future__ import annotations

from uuid import UUID

import click

from vera_cli.output import echo_json_lines
from vera_cli.plumbing import api_key_option, client_from_env, friendly_errors


@click.group()
def member() -> None:
    """Offboarding: disable or enable a member, list and revoke a member's keys (admins)."""


@member.command("disable")
@click.argument("principal", type=click.UUID)
@click.option("--reason", help="Why; kept in the audit log.")
@api_key_option("Key of an admin of every group of the member.")
@friendly_errors
def member_disable(principal: UUID, reason: str | None, api_key: str) -> None:
    """Disable PRINCIPAL: none of its API keys and none of its OIDC logins works any more."""
    with client_from_env(api_key) as vera:
        changed = vera.disable_principal(principal, reason)
    click.echo(f"principal {principal} {'disabled' if changed else 'was already disabled'}")


@member.command("enable")
@click.argument("principal", type=click.UUID)
@click.option("--reason", help="Why; kept in the audit log.")
@api_key_option("Key of an admin of every group of the member.")
@friendly_errors
def member_enable(principal: UUID, reason: str | None, api_key: str) -> None:
    """Enable PRINCIPAL again (its keys that were not revoked work again)."""
    with client_from_env(api_key) as vera:
        changed = vera.enable_principal(principal, reason)
    click.echo(f"principal {principal} {'enabled' if changed else 'was not disabled'}")


@member.command("keys")
@click.argument("group")
@click.argument("principal", type=click.UUID)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per key.")
@api_key_option("Key of an admin of GROUP.")
@friendly_errors
def member_keys(group: str, principal: UUID, as_json: bool, api_key: str) -> None:
    """The API keys of PRINCIPAL, a member of GROUP: id, prefix, name, dates (never a secret)."""
    with client_from_env(api_key) as vera:
        keys = vera.list_member_keys(group, principal)
    if as_json:
        echo_json_lines(keys)
        return
    if not keys:
        click.echo("no keys")
    for item in keys:
        state = "revoked" if item.revoked_at else "live"
        used = f"{item.last_used_at:%Y-%m-%d %H:%M}" if item.last_used_at else "never"
        click.echo(f"{item.prefix}  {item.name!r:<32} {state:<8} last used {used}")


@member.command("revoke-key")
@click.argument("group")
@click.argument("key_ref", metavar="KEY")
@api_key_option("Key of an admin of GROUP.")
@friendly_errors
def member_revoke_key(group: str, key_ref: str, api_key: str) -> None:
    """Revoke KEY (id or prefix) of a member of GROUP, at once and for good."""
    with client_from_env(api_key) as vera:
        changed = vera.revoke_member_key(group, key_ref)
    click.echo(f"key {key_ref} {'revoked' if changed else 'was already revoked'}")
