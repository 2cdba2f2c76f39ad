"""Operator tasks on the admin connection: tenants and their first keys,
the login roles of SQL applications (logins.py: one per application, a
member of vera_app), the per-group vector indexes search relies on, and the
graph projection's state for `vera db status`. The tenant tasks run their
calls through the executor as the operator (no caller: row-level security
does not bind the admin connection)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from vera_client.adapters.postgres.errors import connect, translated_errors
from vera_client.adapters.postgres.executor import begin
from vera_client.adapters.postgres.logins import (
    APP_GROUP,
    APP_LOGIN_PREFIX,
    app_login_role,
    app_login_script,
    create_app_login,
    drop_app_login,
    generate_password,
    list_app_logins,
    login_dsn,
)
from vera_client.api import jobs as jobs_api
from vera_client.api import operator as operator_api
from vera_client.api.jobs import GraphCheckResult, QueueLag
from vera_client.api.operator import SourceRoot, Tenant, VectorIndexBuild
from vera_client.domain.callers import Operator

# The application logins are made here too (logins.py imports psycopg alone,
# so that the container image's build stage can render app_login_script).
__all__ = [
    "APP_GROUP",
    "APP_LOGIN_PREFIX",
    "add_source_roots",
    "app_login_role",
    "app_login_script",
    "build_missing_vector_indexes",
    "create_app_login",
    "create_tenant",
    "drop_app_login",
    "ensure_tenant",
    "generate_password",
    "list_app_logins",
    "list_source_roots",
    "login_dsn",
    "missing_vector_indexes",
    "projection_state",
    "remove_source_root",
]


def create_tenant(admin_dsn: str, organisation: str, owner: str, owner_email: str | None = None) -> Tenant:
    """Create an organisation with its owner; the owner's first key is returned once."""
    with connect(admin_dsn) as conn, begin(conn, Operator()) as tx:
        return tx.run(operator_api.create_tenant(organisation, owner, owner_email))


def ensure_tenant(
    admin_dsn: str, organisation: str, owner: str, key_name: str, *, revoke_earlier: bool = True
) -> Tenant:
    """The organisation of that name with a fresh key for its first owner, created if missing.

    For demos: keys are shown once, so re-running hands out a new key (named
    key_name); with revoke_earlier every earlier key of that owner is revoked
    (`vera demo` passes False and revokes only its own, by name).
    """
    with connect(admin_dsn) as conn, begin(conn, Operator()) as tx:
        found = tx.run(operator_api.find_tenant_owner(organisation))
        if found is None:
            return tx.run(operator_api.create_tenant(organisation, owner, None))
        group_id, principal_id = found
        if revoke_earlier:
            tx.run(operator_api.revoke_all_keys(principal_id))
        key = tx.run(operator_api.issue_api_key(principal_id, key_name))
    return Tenant(group_id=group_id, owner_principal_id=principal_id, api_key=key)


def add_source_roots(admin_dsn: str, organisation: str, roots: Sequence[Path]) -> str:
    """Let an organisation's (id or unique name) folder sources lie at or below each root, given
    as its real path (links resolved here: the worker compares real paths); the organisation's id."""
    with connect(admin_dsn) as conn, begin(conn, Operator()) as tx:
        group_id = ""
        for root in roots:
            group_id = tx.run(operator_api.add_source_root(organisation, str(root.expanduser().resolve())))
        return group_id


def remove_source_root(admin_dsn: str, organisation: str, root: Path) -> bool:
    """Withdraw a folder (as given, and as its real path) from an organisation's source roots."""
    with connect(admin_dsn) as conn, begin(conn, Operator()) as tx:
        given = os.path.normpath(root.expanduser().absolute())
        real = str(root.expanduser().resolve())
        removed = tx.run(operator_api.remove_source_root(organisation, real))
        if given != real:
            removed = tx.run(operator_api.remove_source_root(organisation, given)) or removed
        return removed


def list_source_roots(admin_dsn: str, organisation: str | None = None) -> list[SourceRoot]:
    """The source roots of one organisation (id or unique name), or of every one."""
    with connect(admin_dsn) as conn, begin(conn, Operator()) as tx:
        return tx.run(operator_api.list_source_roots(organisation))


def missing_vector_indexes(admin_dsn: str, min_rows: int = 5000) -> list[VectorIndexBuild]:
    """The per-group HNSW indexes that are due (none before the first migrate)."""
    with connect(admin_dsn) as conn, begin(conn, Operator()) as tx:
        if not tx.run(operator_api.read_path_installed()):
            return []
        return tx.run(operator_api.missing_vector_indexes(min_rows))


def projection_state(admin_dsn: str) -> tuple[list[QueueLag], list[GraphCheckResult]]:
    """How far each job queue lags (the graph projection's among them) and each group's last graph check."""
    with connect(admin_dsn) as conn, begin(conn, Operator()) as tx:
        return tx.run(jobs_api.queue_lag()), tx.run(jobs_api.graph_check_results())


def build_missing_vector_indexes(
    admin_dsn: str, min_rows: int = 5000, on_build: Callable[[VectorIndexBuild], None] | None = None
) -> list[VectorIndexBuild]:
    """Give every group with at least min_rows vectors in facts or chunks an
    HNSW index of its own, built CONCURRENTLY (writers are not blocked), one at
    a time. Search reads large groups through these indexes; until one exists
    a group is searched exactly, which is correct but slower."""
    built = []
    with connect(admin_dsn) as conn, translated_errors():
        with begin(conn, Operator()) as tx:
            due = tx.run(operator_api.missing_vector_indexes(min_rows))
        conn.autocommit = True  # CREATE INDEX CONCURRENTLY refuses to run inside a transaction
        for build in due:
            if on_build is not None:
                on_build(build)
            for statement in build.statements:
                conn.execute(statement)  # composed by vera.missing_vector_indexes with format('%I')
            built.append(build)
    return built
