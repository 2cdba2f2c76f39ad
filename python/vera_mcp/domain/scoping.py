"""Naming scopes: a tool names a scope by what `whoami` lists, a group id the
caller reaches or a group name that is unambiguous among them. Anything else is
refused here, so no call reaches SQL with a group the caller cannot read."""

from __future__ import annotations

from collections.abc import Sequence

from vera_client.api.access import Membership
from vera_client.domain.errors import InvalidArgumentError, NotFoundError


class UnknownScopeError(NotFoundError):
    """The scope is not one the caller reaches."""


class AmbiguousScopeError(InvalidArgumentError):
    """Several scopes the caller reaches have that name: name one by its group id."""


def resolve_scope(name: str, memberships: Sequence[Membership]) -> str:
    """The group id of the scope `name` (a group id, or a group name, compared
    case-insensitively) among the caller's memberships."""
    wanted = name.strip()
    for membership in memberships:
        if membership.group_id == wanted:
            return membership.group_id
    named = sorted({m.group_id for m in memberships if m.group_name.casefold() == wanted.casefold()})
    if len(named) == 1:
        return named[0]
    if named:
        raise AmbiguousScopeError(
            f"several of your scopes are named {wanted[:100]!r} ({', '.join(named)}): "
            "name one by its group id"
        )
    raise UnknownScopeError(f"no scope {wanted[:100]!r} among yours: call whoami for the scopes you can read")


def resolve_scopes(names: Sequence[str], memberships: Sequence[Membership]) -> list[str]:
    """The group ids of several scopes, each resolved as resolve_scope does, without duplicates."""
    resolved: list[str] = []
    for name in names:
        group = resolve_scope(name, memberships)
        if group not in resolved:
            resolved.append(group)
    return resolved
