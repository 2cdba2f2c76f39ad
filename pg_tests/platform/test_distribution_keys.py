"""Every tenant table can be distributed by group_id (docs/scaling.md): in
each table of schema vera with a group_id column, group_id leads the primary
key, every unique constraint and unique index, and every foreign key, on both
of its sides. The keys that may break the rule are listed below, each with
its reason, so that a new one takes a deliberate edit here."""

from __future__ import annotations

from pathlib import Path

import pytest

from pg_tests.support.databases import Database

KEYS_SQL = (Path(__file__).parents[1] / "support" / "distribution_keys.sql").read_text()

# Keys of tenant tables that do not lead with group_id: (kind, table, name) -> why.
# On Citus, groups, principals and memberships are reference tables, copied to
# every node (docs/scaling.md), so a key into them needs no distribution column.
_PRINCIPAL = "references vera.principals: identity spans tenants and is a reference table"
EXCEPTIONS: dict[tuple[str, str, str], str] = {
    ("foreign key", "chunks", "chunks_reviewed_by_fkey"): _PRINCIPAL,
    ("foreign key", "facts", "facts_proposed_for_fkey"): (
        "references vera.groups, a reference table: a proposal lives in its proposer's u: scope "
        "and names the shared scope it is meant for"
    ),
    ("foreign key", "facts", "facts_reviewed_by_fkey"): _PRINCIPAL,
    ("foreign key", "feedback", "feedback_principal_id_fkey"): _PRINCIPAL,
    ("foreign key", "group_settings", "group_settings_updated_by_fkey"): _PRINCIPAL,
    ("foreign key", "groups", "groups_parent_group_id_fkey"): (
        "the hierarchy of scopes within vera.groups, a reference table"
    ),
    ("foreign key", "memberships", "memberships_granted_by_fkey"): _PRINCIPAL,
    ("foreign key", "memberships", "memberships_principal_id_fkey"): _PRINCIPAL,
    ("foreign key", "ranking_weights", "ranking_weights_created_by_fkey"): _PRINCIPAL,
    ("foreign key", "snapshots", "snapshots_created_by_fkey"): _PRINCIPAL,
    ("foreign key", "sources", "sources_created_by_fkey"): _PRINCIPAL,
}


def tenant_keys(database: Database) -> dict[tuple[str, str, str], bool]:
    """Each key of a tenant table, (kind, table, name), and whether it leads with group_id."""
    with database.admin() as conn:
        return {(kind, table, name): leads for kind, table, name, leads in conn.execute(KEYS_SQL)}


def keys_not_leading(database: Database) -> set[tuple[str, str, str]]:
    return {key for key, leads in tenant_keys(database).items() if not leads}


def test_group_id_leads_every_tenant_key_but_the_listed_exceptions(db: Database) -> None:
    keys = tenant_keys(db)
    kinds = {kind for kind, _, _ in keys}
    tables = {table for _, table, _ in keys}
    # the check reads the whole schema, not an empty corner of it
    assert {"primary key", "unique", "foreign key", "unique index"} <= kinds
    assert {"sources", "episodes", "chunks", "entities", "facts", "snapshot_items", "audit_log"} <= tables
    assert keys_not_leading(db) == set(EXCEPTIONS)
    assert all(reason.strip() for reason in EXCEPTIONS.values())


# DDL run in a scratch database, and the keys it adds that do not lead with group_id.
_BROKEN = {
    "primary key": (
        """create table vera.scratch (
               group_id text not null references vera.groups (group_id),
               scratch_id uuid not null,
               constraint scratch_pkey primary key (scratch_id))""",
        {("primary key", "scratch", "scratch_pkey")},
    ),
    "unique constraint with group_id second": (
        """create table vera.scratch (
               group_id text not null, scratch_id uuid not null, name text not null,
               constraint scratch_pkey primary key (group_id, scratch_id),
               constraint scratch_name_unique unique (name, group_id))""",
        {("unique", "scratch", "scratch_name_unique")},
    ),
    "unique index": (
        """create table vera.scratch (
               group_id text not null, scratch_id uuid not null, name text not null,
               constraint scratch_pkey primary key (group_id, scratch_id));
           create unique index scratch_name_idx on vera.scratch (name)""",
        {("unique index", "scratch", "scratch_name_idx")},
    ),
    "unique index led by an expression": (
        """create table vera.scratch (
               group_id text not null, scratch_id uuid not null, name text not null,
               constraint scratch_pkey primary key (group_id, scratch_id));
           create unique index scratch_lower_name_idx on vera.scratch (lower(name), group_id)""",
        {("unique index", "scratch", "scratch_lower_name_idx")},
    ),
    "foreign key from another column": (
        """create table vera.scratch (
               group_id text not null, scratch_id uuid not null, owner uuid not null,
               constraint scratch_pkey primary key (group_id, scratch_id),
               constraint scratch_owner_fkey foreign key (owner) references vera.principals (principal_id))""",
        {("foreign key", "scratch", "scratch_owner_fkey")},
    ),
    "foreign key to another column": (
        """create table vera.scratch_parent (
               group_id text not null, code text not null,
               constraint scratch_parent_pkey primary key (group_id, code),
               constraint scratch_parent_code_unique unique (code, group_id));
           create table vera.scratch (
               group_id text not null, code text not null,
               constraint scratch_pkey primary key (group_id, code),
               constraint scratch_parent_fkey foreign key (group_id, code)
                   references vera.scratch_parent (code, group_id))""",
        {
            ("unique", "scratch_parent", "scratch_parent_code_unique"),
            ("foreign key", "scratch", "scratch_parent_fkey"),
        },
    ),
    "a table that keeps the rule": (
        """create table vera.scratch (
               group_id text not null references vera.groups (group_id),
               scratch_id uuid not null, name text not null, entity_id uuid,
               constraint scratch_pkey primary key (group_id, scratch_id),
               constraint scratch_name_unique unique (group_id, name),
               constraint scratch_entity_fkey foreign key (group_id, entity_id)
                   references vera.entities (group_id, entity_id));
           create unique index scratch_lower_name_idx on vera.scratch (group_id, lower(name))""",
        set(),
    ),
    "a table without group_id": (
        "create table vera.scratch (code text primary key, name text unique)",
        set(),
    ),
}


@pytest.mark.parametrize("case", sorted(_BROKEN))
def test_the_check_reports_a_key_that_breaks_the_rule(make_database, case: str) -> None:
    ddl, expected = _BROKEN[case]
    scratch: Database = make_database()
    with scratch.admin() as conn:
        conn.execute(ddl)  # type: ignore[arg-type]
    assert keys_not_leading(scratch) == set(EXCEPTIONS) | expected


def test_a_missing_exception_is_reported_too(make_database) -> None:
    """Dropping an excepted key makes the list stale, which fails the main test."""
    scratch: Database = make_database()
    with scratch.admin() as conn:
        conn.execute("alter table vera.feedback drop constraint feedback_principal_id_fkey")
    assert keys_not_leading(scratch) == set(EXCEPTIONS) - {
        ("foreign key", "feedback", "feedback_principal_id_fkey")
    }
