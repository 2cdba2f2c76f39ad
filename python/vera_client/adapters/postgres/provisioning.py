"""Operator tasks on the admin connection: tenants and their first keys,
and the per-group vector indexes search relies on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from vera_client.adapters.postgres.errors import connect, translated_errors
from vera_client.adapters.postgres.queries import query
from vera_client.domain.models import Tenant


def create_tenant(admin_dsn: str, organisation: str, owner: str, owner_email: str | None = None) -> Tenant:
    """Create an organisation with its owner; the owner's first key is returned once."""
    with connect(admin_dsn) as conn, translated_errors():
        row = conn.execute(
            query("create_tenant"),
            {"organisation": organisation, "owner": owner, "email": owner_email},
        ).fetchone()
        assert row is not None
        conn.commit()
    return Tenant(group_id=row[0], owner_principal_id=row[1], api_key=row[2])


def ensure_tenant(admin_dsn: str, organisation: str, owner: str, key_name: str) -> Tenant:
    """The organisation of that name with a fresh key for its first owner, created if missing.

    For demos: keys are shown once, so re-running hands out a new key (named
    key_name) and revokes every earlier key of that owner; the latest works.
    """
    with connect(admin_dsn) as conn, translated_errors():
        found = conn.execute(query("find_tenant_owner"), {"organisation": organisation}).fetchone()
        if found is None:
            row = conn.execute(
                query("create_tenant"),
                {"organisation": organisation, "owner": owner, "email": None},
            ).fetchone()
            assert row is not None
            conn.commit()
            return Tenant(group_id=row[0], owner_principal_id=row[1], api_key=row[2])
        group_id, principal_id = str(found[0]), UUID(str(found[1]))
        conn.execute(query("revoke_all_keys"), {"principal": principal_id})
        issued = conn.execute(query("issue_key"), {"principal": principal_id, "name": key_name}).fetchone()
        assert issued is not None
        conn.commit()
    return Tenant(group_id=group_id, owner_principal_id=principal_id, api_key=str(issued[0]))


@dataclass(frozen=True)
class VectorIndexBuild:
    group_id: str
    table_name: str
    dim: int
    vector_rows: int
    index_name: str


def missing_vector_indexes(admin_dsn: str, min_rows: int = 5000) -> list[VectorIndexBuild]:
    """The per-group HNSW indexes that are due (none before the read-path migration)."""
    with connect(admin_dsn) as conn, translated_errors():
        if conn.execute("select to_regprocedure('vera.missing_vector_indexes(integer)')").fetchone() == (
            None,
        ):
            return []
        rows = conn.execute(query("missing_vector_indexes"), {"min_rows": min_rows}).fetchall()
    return [VectorIndexBuild(g, t, d, n, i) for g, t, d, n, i, _ in rows]


def build_missing_vector_indexes(
    admin_dsn: str, min_rows: int = 5000, on_build: Callable[[VectorIndexBuild], None] | None = None
) -> list[VectorIndexBuild]:
    """Give every group with at least min_rows vectors in facts or chunks an
    HNSW index of its own, built CONCURRENTLY (writers are not blocked), one at
    a time. Search reads large groups through these indexes; until one exists
    a group is searched exactly, which is correct but slower."""
    built = []
    with connect(admin_dsn) as conn, translated_errors():
        conn.autocommit = True  # CREATE INDEX CONCURRENTLY refuses to run inside a transaction
        due = conn.execute(query("missing_vector_indexes"), {"min_rows": min_rows}).fetchall()
        for group_id, table_name, dim, vector_rows, index_name, statements in due:
            build = VectorIndexBuild(group_id, table_name, dim, vector_rows, index_name)
            if on_build is not None:
                on_build(build)
            for statement in statements:
                conn.execute(statement)
            built.append(build)
    return built
