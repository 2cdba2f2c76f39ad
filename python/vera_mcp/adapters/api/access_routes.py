"""The HTTP API's access routes: whoami and usage for everyone, self-service keys (create,
rotate, revoke), and principals and members for admins of a scope. Roles in SQL decide
what each caller may do; the admin token scope only narrows what a token may attempt."""

from __future__ import annotations

from vera_client.domain.errors import NotFoundError
from vera_mcp.adapters.api.endpoint import ApiCall, Endpoint
from vera_mcp.domain.access import Scope, ToolClass
from vera_mcp.domain.api_requests import KeyBody, KeyPath, MemberBody, MemberPath, PrincipalBody
from vera_mcp.domain.api_shapes import (
    KeyList,
    KeyOut,
    KeyRevoked,
    MemberOut,
    NewKeyOut,
    PrincipalCreated,
    RouteClassUsage,
    Usage,
)
from vera_mcp.domain.limits import LIMITS
from vera_mcp.domain.quotas import QuotaLimits
from vera_mcp.domain.shapes import WhoAmI, scope_infos


def access_endpoints(server_version: str, limits: QuotaLimits | None) -> list[Endpoint]:
    """The access routes; usage reports `limits` (None: no quotas are enforced)."""

    async def whoami(a: ApiCall) -> WhoAmI:
        memberships = await a.call.memberships()
        if not memberships:
            raise NotFoundError("your principal reaches no scope")
        first = memberships[0]
        return WhoAmI(
            principal_id=first.principal_id,
            display_name=first.display_name,
            principal_kind=first.kind,
            via=a.call.verified.via,
            token_scopes=sorted(s.value for s in a.call.verified.scopes),
            scopes=scope_infos(memberships),
            server_version=server_version,
            search_version=await a.call.vera.search_version(),
            limits=LIMITS.as_dict(),
        )

    async def usage(a: ApiCall) -> Usage:
        shown = limits or QuotaLimits()
        classes = [
            RouteClassUsage(
                route_class=c.value,
                limit=str(shown.rate(c)),
                organisation_limit=str(shown.organisation_rate(c)),
            )
            for c in ToolClass
        ]
        principal = a.call.verified.principal_id
        return Usage(principal_id=principal, quotas_enforced=limits is not None, classes=classes)

    return [
        Endpoint(
            "GET",
            "/v1/whoami",
            "whoami",
            "Who you are, the scopes you reach and the bounds of arguments",
            "access",
            Scope.READ,
            ToolClass.READ,
            whoami,
            WhoAmI,
            etag=True,
        ),
        Endpoint(
            "GET",
            "/v1/usage",
            "usage",
            "Your quotas per route class",
            "access",
            Scope.READ,
            ToolClass.READ,
            usage,
            Usage,
            etag=True,
        ),
        *KEY_ENDPOINTS,
    ]


async def list_keys(a: ApiCall) -> KeyList:
    return KeyList(keys=[KeyOut.of(k) for k in await a.call.vera.list_api_keys()])


async def create_key(a: ApiCall) -> NewKeyOut:
    b = a.body_as(KeyBody)
    return NewKeyOut.of(await a.call.vera.create_api_key(b.name, b.expires_at))


async def rotate_key(a: ApiCall) -> NewKeyOut:
    """A new key with the old one's name and expiry, then the old one revoked (in that order: a
    failure between them leaves the caller two working keys, never none)."""
    prefix = a.path_as(KeyPath).prefix
    old = next(
        (k for k in await a.call.vera.list_api_keys() if k.prefix == prefix and k.revoked_at is None), None
    )
    if old is None:
        raise NotFoundError(f"no live key with prefix {prefix[:100]!r}")
    new = await a.call.vera.create_api_key(old.name, old.expires_at)
    await a.call.vera.revoke_api_key(prefix)
    return NewKeyOut.of(new)


async def revoke_key(a: ApiCall) -> KeyRevoked:
    prefix = a.path_as(KeyPath).prefix
    return KeyRevoked(prefix=prefix, revoked=await a.call.vera.revoke_api_key(prefix))


async def create_principal(a: ApiCall) -> PrincipalCreated:
    b = a.body_as(PrincipalBody)
    group = await a.call.scope(b.scope)
    principal = await a.call.vera.create_principal(group, b.kind, b.name, b.role, b.email)
    return PrincipalCreated(principal_id=principal, group_id=group)


async def set_member_role(a: ApiCall) -> MemberOut:
    p = a.path_as(MemberPath)
    group = await a.call.scope(p.scope)
    role = a.body_as(MemberBody).role
    await a.call.vera.set_member_role(group, p.principal_id, role)
    return MemberOut(group_id=group, principal_id=p.principal_id, role=role)


async def remove_member(a: ApiCall) -> MemberOut:
    p = a.path_as(MemberPath)
    group = await a.call.scope(p.scope)
    if not await a.call.vera.remove_member(group, p.principal_id):
        raise NotFoundError(f"no member {p.principal_id} in {group}")
    return MemberOut(group_id=group, principal_id=p.principal_id, role=None)


async def member_keys(a: ApiCall) -> KeyList:
    p = a.path_as(MemberPath)
    group = await a.call.scope(p.scope)
    return KeyList(keys=[KeyOut.of(k) for k in await a.call.vera.list_member_keys(group, p.principal_id)])


ADMIN, A = Scope.ADMIN, ToolClass.ADMIN

KEY_ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/keys",
        "list_keys",
        "Your API keys, without secrets",
        "keys",
        ADMIN,
        A,
        list_keys,
        KeyList,
        etag=True,
    ),
    Endpoint(
        "POST",
        "/v1/keys",
        "create_key",
        "A new API key for you; its secret is shown once",
        "keys",
        ADMIN,
        A,
        create_key,
        NewKeyOut,
        body_model=KeyBody,
        status=201,
    ),
    Endpoint(
        "POST",
        "/v1/keys/{prefix}/rotation",
        "rotate_key",
        "A new key in place of one of yours (same name and expiry); the old one is revoked",
        "keys",
        ADMIN,
        A,
        rotate_key,
        NewKeyOut,
        path_model=KeyPath,
        status=201,
    ),
    Endpoint(
        "DELETE",
        "/v1/keys/{prefix}",
        "revoke_key",
        "Revoke one of your keys",
        "keys",
        ADMIN,
        A,
        revoke_key,
        KeyRevoked,
        path_model=KeyPath,
    ),
    Endpoint(
        "POST",
        "/v1/principals",
        "create_principal",
        "A person or service in a scope (admins)",
        "members",
        ADMIN,
        A,
        create_principal,
        PrincipalCreated,
        body_model=PrincipalBody,
        status=201,
    ),
    Endpoint(
        "PUT",
        "/v1/scopes/{scope}/members/{principal_id}",
        "set_member_role",
        "Set a member's role in a scope (admins)",
        "members",
        ADMIN,
        A,
        set_member_role,
        MemberOut,
        path_model=MemberPath,
        body_model=MemberBody,
    ),
    Endpoint(
        "DELETE",
        "/v1/scopes/{scope}/members/{principal_id}",
        "remove_member",
        "Remove a member from a scope (admins)",
        "members",
        ADMIN,
        A,
        remove_member,
        MemberOut,
        path_model=MemberPath,
    ),
    Endpoint(
        "GET",
        "/v1/scopes/{scope}/members/{principal_id}/keys",
        "member_keys",
        "A member's keys, without secrets (admins)",
        "members",
        ADMIN,
        A,
        member_keys,
        KeyList,
        path_model=MemberPath,
    ),
]
