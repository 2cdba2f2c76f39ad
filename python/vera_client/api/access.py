"""Access: who the caller is, groups, members, API keys, settings, and the gateway's
external identities (sql/functions/050_tenants.sql, 060_api_keys.sql, 070_settings.sql,
220_identities.sql; queries in access.sql; tests in pg_tests/access/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from vera_client.api.call import Call, json_or_none, nothing, record, records, scalar
from vera_client.api.operation import Plan, Session, ask, operation, plan
from vera_client.domain.errors import InvalidArgumentError, PermissionDeniedError


@dataclass(frozen=True, kw_only=True, slots=True)
class Membership:
    """One group the caller reaches, with the role it has there (vera.whoami)."""

    principal_id: UUID
    display_name: str
    kind: str
    group_id: str
    group_kind: str
    group_name: str
    parent_group_id: str | None
    role: str


@dataclass(frozen=True, kw_only=True, slots=True)
class NewApiKey:
    """A key as created: the secret is shown this once, as `api_key`; repr and str show only
    the public prefix, so printing or logging the object never leaks it."""

    key_id: UUID
    prefix: str
    api_key: str = field(repr=False)


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiKeyInfo:
    """A key as listed: no secret material."""

    key_id: UUID
    prefix: str
    name: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


def whoami() -> Call[list[Membership]]:
    """The caller's groups and its role in each."""
    return Call("whoami", {}, records(Membership))


def create_group(parent: str, kind: str, name: str) -> Call[str]:
    """A workspace, project or personal group below parent (admins); its new group id."""
    return Call("create_group", {"parent": parent, "kind": kind, "name": name}, scalar)


def create_principal(
    group: str, kind: str, name: str, role: str = "member", email: str | None = None
) -> Call[UUID]:
    """A person, agent or service in group with role (admins)."""
    params = {"group": group, "kind": kind, "name": name, "role": role, "email": email}
    return Call("create_principal", params, scalar)


def set_member_role(group: str, principal: UUID, role: str) -> Call[None]:
    """Change a member's role in group (admins; the last owner stays)."""
    return Call("set_member_role", {"group": group, "principal": principal, "role": role}, nothing)


def remove_member(group: str, principal: UUID) -> Call[bool]:
    """Remove a member from group (admins); whether it was one."""
    return Call("remove_member", {"group": group, "principal": principal}, scalar)


def create_api_key(
    name: str, expires_at: datetime | None = None, principal: UUID | None = None
) -> Call[NewApiKey]:
    """A new key (for the caller, or for a principal it manages); the secret is shown once."""
    params = {"name": name, "expires_at": expires_at, "principal": principal}
    return Call("create_api_key", params, record(NewApiKey))


def revoke_api_key(key: str) -> Call[bool]:
    """Revoke one of the caller's keys (by its secret or prefix); whether one was live."""
    return Call("revoke_api_key", {"key": key}, scalar)


def list_api_keys() -> Call[list[ApiKeyInfo]]:
    """The caller's keys, without secrets."""
    return Call("list_api_keys", {}, records(ApiKeyInfo))


def disable_principal(principal: UUID, reason: str | None = None) -> Call[bool]:
    """Disable a person or service account (admins of every group it belongs to): none of its keys
    and none of its OIDC logins works from the next transaction on; whether it was enabled."""
    return Call("disable_principal", {"principal": principal, "reason": reason}, scalar)


def enable_principal(principal: UUID, reason: str | None = None) -> Call[bool]:
    """Enable a disabled principal again (admins of every group it belongs to); whether it was disabled."""
    return Call("enable_principal", {"principal": principal, "reason": reason}, scalar)


def list_member_keys(group: str, principal: UUID) -> Call[list[ApiKeyInfo]]:
    """A member's keys, without secrets (admins of the group)."""
    return Call("list_member_keys", {"group": group, "principal": principal}, records(ApiKeyInfo))


def revoke_member_key(group: str, key: str) -> Call[bool]:
    """Revoke a member's key by id or prefix (admins of the group); whether it was live."""
    return Call("revoke_member_key", {"group": group, "key": key}, scalar)


def setting(group: str, name: str) -> Call[Any]:
    """A group's setting (inherited from its parents when unset)."""
    return Call("setting", {"group": group, "name": name}, scalar)


def set_setting(group: str, name: str, value: Any) -> Call[Any]:
    """Set (None: unset) a group's setting (admins); the value now in force."""
    return Call("set_setting", {"group": group, "name": name, "value": json_or_none(value)}, scalar)


def administered_organisations(session: Session) -> Plan[list[str]]:
    """The organisations the caller administers."""
    memberships = yield from ask(whoami())
    return sorted(
        m.group_id for m in memberships if m.group_kind == "organisation" and m.role in {"admin", "owner"}
    )


def default_group(session: Session) -> Plan[str]:
    """The organisation the caller administers, when there is exactly one."""
    groups = yield from administered_organisations(session)
    if len(groups) == 1:
        return groups[0]
    if not groups:
        raise PermissionDeniedError("you administer no organisation: pass --group")
    raise InvalidArgumentError(f"you administer several organisations ({', '.join(groups)}): pass --group")


# --- the gateway's calls on external (OIDC) identities: only vera_gateway (and operators) may run
# them, on a connection that authenticates no caller (run them as Operator()): the gateway verified
# the token itself and vouches for what it maps to


def principal_for_identity(issuer: str, subject: str) -> Call[UUID | None]:
    """The principal of (issuer, subject), or None when never provisioned.

    PrincipalDisabledError (VA006) when that principal is disabled."""
    return Call("principal_for_identity", {"issuer": issuer, "subject": subject}, scalar)


def provision_identity(
    issuer: str, subject: str, *, display_name: str, email: str | None, group_id: str, role: str
) -> Call[UUID]:
    """Provision (issuer, subject) as a user holding `role` (viewer, member or admin) in
    `group_id`, exactly once; concurrent first calls all get the principal of the one that
    committed first."""
    params = {"issuer": issuer, "subject": subject, "display_name": display_name, "email": email,
              "group": group_id, "role": role}  # fmt: skip
    return Call("provision_identity", params, scalar)


class Access:
    """The access operations of a client face."""

    whoami = operation(whoami)
    create_group = operation(create_group)
    create_principal = operation(create_principal)
    set_member_role = operation(set_member_role)
    remove_member = operation(remove_member)
    create_api_key = operation(create_api_key)
    revoke_api_key = operation(revoke_api_key)
    list_api_keys = operation(list_api_keys)
    disable_principal = operation(disable_principal)
    enable_principal = operation(enable_principal)
    list_member_keys = operation(list_member_keys)
    revoke_member_key = operation(revoke_member_key)
    setting = operation(setting)
    set_setting = operation(set_setting)
    administered_organisations = plan(administered_organisations)
    default_group = plan(default_group)
