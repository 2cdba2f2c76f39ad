"""What the migration tests compare between two databases: the vera catalog
(catalog_snapshot.sql), the bookkeeping rows and the job queue's objects, and
how they apply files: with the embedded server's own psql, as a DBA would."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from vera_client.adapters.postgres import bundle, deployment

if TYPE_CHECKING:
    from pg_tests.support.databases import Database

SNAPSHOT_SQL = (Path(__file__).with_name("catalog_snapshot.sql")).read_text()

Rows = list[tuple[object, ...]]
PRE_BASELINE = ("0001_initial.sql", "0002_write_path.sql", "0003_read_path.sql", "0004_ingestion.sql")


def psql(
    database: Database, path: Path, *, one_transaction: bool = False
) -> subprocess.CompletedProcess[str]:
    """psql -X -q -v ON_ERROR_STOP=1 [-1] -f PATH, with the server's own psql binary."""
    command = [str(database.server.bin_dir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1"]
    command += ["-1"] if one_transaction else []
    command += ["-d", database.admin_dsn, "-f", str(path)]
    return subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603


def psql_ok(database: Database, path: Path, *, one_transaction: bool = False) -> str:
    result = psql(database, path, one_transaction=one_transaction)
    assert result.returncode == 0, f"{path.name}: {result.stderr}"
    return result.stdout


def write_script(folder: Path, root: Path | None = None) -> Path:
    """The script of `vera db sql`, as a file."""
    path = folder / "vera.sql"
    path.write_text(deployment.psql_script(root), encoding="utf-8")
    return path


def snapshot(database: Database) -> Rows:
    with psycopg.connect(database.admin_dsn) as conn:
        return [tuple(row) for row in conn.execute(SNAPSHOT_SQL)]


def bookkeeping(database: Database) -> tuple[Rows, Rows]:
    """vera_meta's rows without their timestamps: (migrations, components)."""
    with psycopg.connect(database.admin_dsn) as conn:
        migrations = conn.execute("select version, name, sha256 from vera_meta.migrations order by 1")
        components = conn.execute("select name, version, sha256 from vera_meta.components order by 1")
        return [tuple(r) for r in migrations], [tuple(r) for r in components]


def everything(database: Database) -> Rows:
    """Every schema, relation and function outside the system catalogs, and vera_meta's rows:
    what "nothing was changed" is checked against."""
    with psycopg.connect(database.admin_dsn) as conn:
        objects = conn.execute(
            """select 'schema', nspname, '' from pg_namespace
                where nspname !~ '^pg_' and nspname <> 'information_schema'
               union all
               select 'relation', c.oid::regclass::text, c.relkind::text from pg_class c
                where c.relnamespace::regnamespace::text !~ '^(pg_|information_schema)'
               union all
               select 'function', p.oid::regprocedure::text, '' from pg_proc p
                where p.pronamespace::regnamespace::text !~ '^(pg_|information_schema)'
               order by 1, 2"""
        ).fetchall()
        rows: Rows = [tuple(r) for r in objects]
        if conn.execute("select to_regclass('vera_meta.migrations') is not null").fetchone() == (True,):
            rows += [tuple(r) for r in conn.execute("select * from vera_meta.migrations order by version")]
        return rows


def queue_objects(database: Database) -> Rows:
    """Procrastinate's schema as installed: its relations and functions with their owners."""
    with psycopg.connect(database.admin_dsn) as conn:
        return [
            tuple(r)
            for r in conn.execute(
                """select 'relation', relname, pg_get_userbyid(relowner), relacl::text from pg_class
                    where relnamespace = 'procrastinate'::regnamespace
                   union all
                   select 'function', oid::regprocedure::text, pg_get_userbyid(proowner), proacl::text
                     from pg_proc where pronamespace = 'procrastinate'::regnamespace
                   order by 1, 2"""
            )
        ]


def assert_same(expected: Rows, actual: Rows, what: str) -> None:
    missing = sorted(set(expected) - set(actual), key=str)
    extra = sorted(set(actual) - set(expected), key=str)
    assert not missing and not extra, f"{what}:\nonly expected: {missing[:5]}\nonly actual: {extra[:5]}"


def pre_baseline(database: Database) -> None:
    """A database as 0001_initial .. 0004_ingestion left it, as far as a migrate looks."""
    with psycopg.connect(database.admin_dsn, autocommit=True) as conn:
        conn.execute(bundle.bookkeeping_sql())
        conn.execute("create schema vera; create table vera.groups (group_id text primary key)")
        for version, name in enumerate(PRE_BASELINE, start=1):
            conn.execute(
                "insert into vera_meta.migrations (version, name, sha256) values (%s, %s, repeat('a', 64))",
                (version, name),
            )
