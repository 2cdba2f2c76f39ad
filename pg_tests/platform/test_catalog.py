"""The gate that lets a DBA trust the migrations: a database built from
sql/{schema,functions,rls}, one brought up to date by the runner (vera db
migrate) from sql/migrations, and one built by the script of vera db sql
with psql alone all have the same catalog."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pg_tests.support.catalogs import Rows, assert_same, psql_ok, snapshot, write_script
from pg_tests.support.databases import ROOT, Clones, Database
from vera_client.adapters.postgres import bundle
from vera_client.adapters.postgres.migrations import MigrationRunner


@pytest.fixture(scope="module")
def declarative(clones: Clones) -> Iterator[Rows]:
    """The catalog of sql/schema + sql/functions + sql/rls, applied file by file with psql."""
    database = clones.make("template0")
    for path in bundle.declarative_files(ROOT / "sql"):
        psql_ok(database, path)
    yield snapshot(database)
    clones.drop(database)


def test_runner_script_and_declarative_bundle_build_the_same_catalog(
    declarative: Rows, make_database, tmp_path: Path
) -> None:
    kinds = {kind for kind, _, _ in declarative}  # type: ignore[misc]
    assert {"relation", "column", "index", "constraint", "function", "policy", "type"} <= kinds

    migrated: Database = make_database(template="template0")
    MigrationRunner(migrated.admin_dsn).migrate()
    assert_same(declarative, snapshot(migrated), "vera db migrate vs sql/{schema,functions,rls}")

    scripted: Database = make_database(template="template0")
    psql_ok(scripted, write_script(tmp_path), one_transaction=True)
    assert_same(declarative, snapshot(scripted), "vera db sql | psql -1 vs sql/{schema,functions,rls}")


def test_the_gate_fails_when_a_migration_and_the_schema_disagree(
    declarative: Rows, make_database, tmp_path: Path
) -> None:
    """A migration that drifts from sql/schema (here: an index the schema keeps is dropped) shows."""
    root = tmp_path / "sql"
    shutil.copytree(ROOT / "sql", root)
    following = len(bundle.migrations(root)) + 1
    (root / "migrations" / f"{following:04d}_drift.sql").write_text(
        "-- drifts\ndrop index vera.audit_log_at_idx;\n"
    )
    drifted: Database = make_database(template="template0")
    MigrationRunner(drifted.admin_dsn, sql_root=root).migrate()
    with pytest.raises(AssertionError, match="audit_log_at_idx"):
        assert_same(declarative, snapshot(drifted), "drifted")


def test_declarative_bundle_reapplies_cleanly(make_database) -> None:
    """functions and rls are re-applied on every migrate: they must be idempotent."""
    database: Database = make_database(template="template0")
    for path in bundle.declarative_files(ROOT / "sql"):
        psql_ok(database, path)
    before = snapshot(database)
    for path in bundle.idempotent_files(ROOT / "sql"):
        psql_ok(database, path)
    assert snapshot(database) == before


def test_no_table_definition_needs_a_function(db: Database) -> None:
    """Tables come from migrations, functions after them (re-applied on every
    migrate): so no default, check, generated column, index expression or
    type may call a vera function. Only policies (sql/rls) and triggers (in
    the function files, each after the function it runs) depend on them."""
    with db.admin() as conn:
        dependents = conn.execute(
            """select d.classid::regclass::text, pg_describe_object(d.classid, d.objid, d.objsubid),
                      p.oid::regprocedure::text
               from pg_depend d
               join pg_proc p on d.refclassid = 'pg_proc'::regclass and d.refobjid = p.oid
               where p.pronamespace = 'vera'::regnamespace and d.deptype = 'n'"""
        ).fetchall()
    assert {kind for kind, _, _ in dependents} == {"pg_policy", "pg_trigger"}
    assert [row for row in dependents if row[0] not in {"pg_policy", "pg_trigger"}] == []


def test_every_table_has_forced_row_level_security(db: Database) -> None:
    with db.admin() as conn:
        rows = conn.execute(
            """select relname, relrowsecurity, relforcerowsecurity from pg_class
               where relnamespace = 'vera'::regnamespace and relkind = 'r'"""
        ).fetchall()
    assert rows
    assert [name for name, enabled, forced in rows if not (enabled and forced)] == []
