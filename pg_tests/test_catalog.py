"""The gate that lets a DBA trust the migrations: a database built from
sql/{schema,functions,rls} and one built from sql/migrations with psql alone
have the same catalog."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg

from pg_tests.conftest import ROOT, Database
from vera_client.adapters.postgres import bundle

SNAPSHOT_SQL = (Path(__file__).with_name("catalog_snapshot.sql")).read_text()


def _psql_file(database: Database, path: Path) -> None:
    """Apply one file exactly as a DBA would: psql -f, stop on the first error."""
    psql = database.server.bin_dir / "psql"
    result = subprocess.run(  # noqa: S603
        [str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", database.admin_dsn, "-f", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"{path.name}: {result.stderr}"


def _snapshot(database: Database) -> list[tuple[str, str, str]]:
    with psycopg.connect(database.admin_dsn) as conn:
        return [tuple(row) for row in conn.execute(SNAPSHOT_SQL)]  # type: ignore[misc]


def test_migrations_build_the_same_catalog_as_the_declarative_bundle(make_database) -> None:
    declarative = make_database(template="template0")
    for path in bundle.declarative_files(ROOT / "sql"):
        _psql_file(declarative, path)

    migrated = make_database(template="template0")
    for migration in bundle.migrations(ROOT / "sql" / "migrations"):
        _psql_file(migrated, migration.path)

    expected, actual = _snapshot(declarative), _snapshot(migrated)
    kinds = {kind for kind, _, _ in expected}
    assert {"relation", "column", "index", "constraint", "function", "policy", "type"} <= kinds
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    assert not missing and not extra, (
        f"only in the declarative build: {missing[:5]}\nonly in the migrated build: {extra[:5]}"
    )


def test_declarative_bundle_reapplies_cleanly(make_database) -> None:
    """functions and rls are re-applied on every deploy: they must be idempotent."""
    database = make_database(template="template0")
    for path in bundle.declarative_files(ROOT / "sql"):
        _psql_file(database, path)
    before = _snapshot(database)
    for path in bundle.declarative_files(ROOT / "sql"):
        if path.parent.name in {"functions", "rls"}:
            _psql_file(database, path)
    assert _snapshot(database) == before


def test_every_table_has_forced_row_level_security(db: Database) -> None:
    with db.admin() as conn:
        rows = conn.execute(
            """select relname, relrowsecurity, relforcerowsecurity from pg_class
               where relnamespace = 'vera'::regnamespace and relkind = 'r'"""
        ).fetchall()
    assert rows
    assert [name for name, enabled, forced in rows if not (enabled and forced)] == []


def test_group_id_leads_every_tenant_key(db: Database) -> None:
    """Primary and foreign keys of tenant tables start with group_id (Citus-ready).

    The exceptions are references to vera.principals and vera.groups (a
    proposal names the scope it is meant for): identity and the registry of
    scopes span tenants, and would be reference tables on Citus.
    """
    with db.admin() as conn:
        rows = conn.execute(
            """select c.relname, k.conname,
                      (select attname from pg_attribute
                        where attrelid = k.conrelid and attnum = k.conkey[1]) as first_column,
                      k.confrelid::regclass::text as referenced
               from pg_constraint k join pg_class c on c.oid = k.conrelid
               where c.relnamespace = 'vera'::regnamespace and k.contype in ('p', 'f')
                 and c.relname not in ('groups', 'principals', 'api_keys', 'auth_context')"""
        ).fetchall()
    assert len(rows) > 20
    offenders = [
        (table, name)
        for table, name, first, referenced in rows
        if first != "group_id" and referenced not in {"vera.principals", "vera.groups"}
    ]
    assert offenders == []
