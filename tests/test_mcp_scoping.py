"""Naming scopes: a group id the caller reaches, or a name that is unambiguous among them."""

from __future__ import annotations

from uuid import uuid4

import pytest

from vera_client.api.access import Membership
from vera_mcp.domain.scoping import AmbiguousScopeError, UnknownScopeError, resolve_scope, resolve_scopes

ME = uuid4()


def member(group_id: str, name: str, kind: str = "workspace") -> Membership:
    return Membership(principal_id=ME, display_name="Ada", kind="user", group_id=group_id, group_kind=kind,
                      group_name=name, parent_group_id=None, role="member")  # fmt: skip


MINE = [member("o:1", "Acme", "organisation"), member("w:2", "Engineering"), member("w:3", "Ops"),
        member("p:4", "ops")]  # fmt: skip


@pytest.mark.parametrize(("name", "group"), [("o:1", "o:1"), ("Acme", "o:1"), ("engineering", "w:2"),
                                             (" w:3 ", "w:3"), ("p:4", "p:4")])  # fmt: skip
def test_a_scope_is_a_group_id_or_an_unambiguous_name(name: str, group: str) -> None:
    assert resolve_scope(name, MINE) == group


@pytest.mark.parametrize("name", ["o:9", "Bravo", "", "w:2x", "%"])
def test_anything_else_is_refused_before_sql(name: str) -> None:
    with pytest.raises(UnknownScopeError, match="no scope"):
        resolve_scope(name, MINE)


def test_an_ambiguous_name_lists_the_group_ids() -> None:
    with pytest.raises(AmbiguousScopeError, match=r"w:3, p:4|p:4, w:3"):
        resolve_scope("OPS", MINE)


def test_several_scopes_keep_order_without_duplicates() -> None:
    assert resolve_scopes(["Engineering", "o:1", "w:2"], MINE) == ["w:2", "o:1"]
    with pytest.raises(UnknownScopeError):
        resolve_scopes(["o:1", "o:other-tenant"], MINE)
