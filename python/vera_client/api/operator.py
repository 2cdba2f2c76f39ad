"""Operator work, on an operator connection (no caller: row-level security does not
apply): tenants, their owners' keys, the folders each organisation's sources may lie in,
and the per-group vector indexes that are due (sql/functions/050_tenants.sql,
108_source_roots.sql, 175_vector_indexes.sql; queries in operator.sql; the
login roles of SQL applications are adapters/postgres/logins.py's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from vera_client.api.call import Call, Columns, Rows, expects, nothing, records, scalar


@dataclass(frozen=True, kw_only=True, slots=True)
class Tenant:
    """An organisation as created by an operator, with its owner's first API key."""

    group_id: str
    owner_principal_id: UUID
    api_key: str = field(repr=False)  # a secret: never in a log line or a traceback


@dataclass(frozen=True, kw_only=True, slots=True)
class VectorIndexBuild:
    """A per-group HNSW index that is due, and the statements that build it."""

    group_id: str
    table_name: str
    dim: int
    vector_rows: int
    index_name: str
    statements: list[str]


def create_tenant(organisation: str, owner: str, email: str | None) -> Call[Tenant]:
    """A new organisation, its owner and the owner's first API key (shown once)."""

    def read(columns: Sequence[str], rows: Rows) -> Tenant:
        values = dict(zip(columns, rows[0], strict=True))
        return Tenant(group_id=values["group_id"], owner_principal_id=values["principal_id"],
                      api_key=values["api_key"])  # fmt: skip

    columns = frozenset({"group_id", "principal_id", "api_key"})
    params = {"organisation": organisation, "owner": owner, "email": email}
    return Call("create_tenant", params, expects(read, Columns(columns, columns)))


def find_tenant_owner(organisation: str) -> Call[tuple[str, UUID] | None]:
    """The oldest organisation of that name and its first owner, if any."""

    def read(columns: Sequence[str], rows: Rows) -> tuple[str, UUID] | None:
        if not rows:
            return None
        values = dict(zip(columns, rows[0], strict=True))
        return str(values["group_id"]), values["principal_id"]

    columns = frozenset({"group_id", "principal_id"})
    return Call("find_tenant_owner", {"organisation": organisation}, expects(read, Columns(columns, columns)))


def revoke_all_keys(principal: UUID) -> Call[None]:
    """Revokes every live key of a principal."""
    return Call("revoke_all_keys", {"principal": principal}, nothing)


def issue_api_key(principal: UUID, name: str) -> Call[str]:
    """A new key for a principal, returned once."""
    return Call("issue_key", {"principal": principal, "name": name}, scalar)


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceRoot:
    """A folder an organisation's folder sources may lie in (at or below it), set by an operator."""

    group_id: str
    organisation_name: str
    root: str
    added_at: datetime
    added_by: str


def add_source_root(organisation: str, root: str) -> Call[str]:
    """Let an organisation's (id or unique name) folder sources lie at or below root; its id."""
    return Call("add_source_root", {"organisation": organisation, "root": root}, scalar)


def remove_source_root(organisation: str, root: str) -> Call[bool]:
    """Withdraw a folder from an organisation's source roots; whether it was there."""
    return Call("remove_source_root", {"organisation": organisation, "root": root}, scalar)


def list_source_roots(organisation: str | None = None) -> Call[list[SourceRoot]]:
    """The source roots of one organisation (id or unique name), or of all."""
    return Call("list_source_roots", {"organisation": organisation}, records(SourceRoot))


def read_path_installed() -> Call[bool]:
    """Whether the database has the read path's functions yet (a fresh one may not)."""
    return Call("read_path_installed", {}, scalar)


def missing_vector_indexes(min_rows: int) -> Call[list[VectorIndexBuild]]:
    """The per-group HNSW indexes that are due, with the statements that build them."""
    return Call("missing_vector_indexes", {"min_rows": min_rows}, records(VectorIndexBuild))
