"""`vera key create|list|revoke|rotate`: the caller's API keys, over the SQL
API's key functions (vera.create_api_key, list_api_keys, revoke_api_key). A
new secret is printed once; the database keeps only its hash."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import click

from vera_cli.options import ISO_INSTANT
from vera_cli.output import echo_json, echo_json_lines
from vera_cli.plumbing import api_key_option, client_from_env, friendly_errors
from vera_client.domain.errors import NotFoundError

if TYPE_CHECKING:
    from vera_client.api.access import ApiKeyInfo, NewApiKey


@click.group()
def key() -> None:
    """Your API keys: create, list, revoke, rotate."""


def _shown_once(created: NewApiKey, as_json: bool) -> None:
    if as_json:
        echo_json({"key_id": created.key_id, "prefix": created.prefix, "api_key": created.api_key})
        return
    click.echo(f"key id:  {created.key_id}  (prefix {created.prefix})")
    click.echo(f"api key: {created.api_key}   (shown once; store it now)")


@key.command("create")
@click.argument("name")
@click.option("--expires", type=ISO_INSTANT, help="When it stops working (ISO 8601); default: never.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with the new key.")
@api_key_option("Key of the principal the new key is for.")
@friendly_errors
def key_create(name: str, expires: datetime | None, as_json: bool, api_key: str) -> None:
    """A new key NAME for the principal of --api-key, printed once."""
    with client_from_env(api_key) as vera:
        created = vera.create_api_key(name, expires)
    _shown_once(created, as_json)


@key.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per key.")
@api_key_option("Key of the principal whose keys to list.")
@friendly_errors
def key_list(as_json: bool, api_key: str) -> None:
    """Your keys: id, prefix, name, dates (never a secret)."""
    with client_from_env(api_key) as vera:
        keys = vera.list_api_keys()
    if as_json:
        echo_json_lines(keys)
        return
    for item in keys:
        state = (
            "revoked"
            if item.revoked_at
            else ("expires " + f"{item.expires_at:%Y-%m-%d %H:%M}" if item.expires_at else "live")
        )
        used = f"{item.last_used_at:%Y-%m-%d %H:%M}" if item.last_used_at else "never"
        this = "  (this key)" if api_key.startswith(f"vera_{item.prefix}_") else ""
        click.echo(f"{item.prefix}  {item.name!r:<32} {state:<24} last used {used}{this}")


def _find(keys: list[ApiKeyInfo], wanted: str) -> ApiKeyInfo:
    found = next((k for k in keys if wanted in {k.prefix, str(k.key_id)}), None)
    if found is None:
        raise NotFoundError(f"you have no API key {wanted!r} (see vera key list)")
    return found


@key.command("revoke")
@click.argument("key_ref", metavar="KEY")
@api_key_option("Key of the principal whose key to revoke.")
@friendly_errors
def key_revoke(key_ref: str, api_key: str) -> None:
    """Revoke KEY (its prefix or id) at once and for good."""
    with client_from_env(api_key) as vera:
        revoked = vera.revoke_api_key(key_ref)
    click.echo(f"key {key_ref} revoked" if revoked else f"key {key_ref} was already revoked")


@key.command("rotate")
@click.argument("key_ref", metavar="KEY")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with the new key.")
@api_key_option("Key of the principal whose key to rotate.")
@friendly_errors
def key_rotate(key_ref: str, as_json: bool, api_key: str) -> None:
    """Replace KEY (prefix or id) by a new key of the same principal, name and expiry.

    The new key is created and the old one revoked in one transaction: both
    happen or neither does. Rotating the key you pass as --api-key is allowed;
    from then on only the new one works.
    """
    from vera_client.api import access as access_api

    with client_from_env(api_key) as vera:
        assert vera.caller is not None
        with vera.executor.transaction(vera.caller) as tx:
            old = _find(tx.run(access_api.list_api_keys()), key_ref)
            if old.revoked_at is not None:
                raise NotFoundError(f"key {key_ref} is revoked: create a new one with vera key create")
            created = tx.run(access_api.create_api_key(old.name, old.expires_at, None))
            tx.run(access_api.revoke_api_key(str(old.key_id)))
    if not as_json:
        click.echo(f"key {old.prefix} ({old.name!r}) revoked; its replacement:")
    _shown_once(created, as_json)
