"""Procrastinate's schema, installed into its own PostgreSQL schema.

The outbox functions in SQL defer jobs through Procrastinate's own functions,
so its schema must exist in the database. It is taken from the installed
procrastinate package (never copied into this repository) and recorded in
vera_meta.components with its version and checksum.
"""

from __future__ import annotations

import hashlib
from importlib import metadata, resources

import psycopg

from vera_client.adapters.postgres import bundle
from vera_client.adapters.postgres.queries import migration_query
from vera_client.domain.errors import MigrationError

COMPONENT = "procrastinate"
SCHEMA = "procrastinate"


def procrastinate_schema_sql() -> tuple[str, str]:
    """Version of the installed procrastinate package and its schema.sql."""
    try:
        version = metadata.version("procrastinate")
        sql = resources.files("procrastinate.sql").joinpath("schema.sql").read_text(encoding="utf-8")
    except (metadata.PackageNotFoundError, ModuleNotFoundError, FileNotFoundError) as exc:
        raise MigrationError("the procrastinate package is not installed: pip install procrastinate") from exc
    return version, sql


def ensure_installed(conn: psycopg.Connection) -> bool:
    """Install Procrastinate's schema if absent; True when it was installed now.

    Refuses a schema of another Procrastinate version than the package's:
    upgrading the queue is applying Procrastinate's own migrations.
    """
    version, sql = procrastinate_schema_sql()
    digest = hashlib.sha256(sql.encode()).hexdigest()
    with conn.transaction():
        conn.execute(migration_query("lock_migrations"))
        row = conn.execute(migration_query("installed_component"), {"name": COMPONENT}).fetchone()
        if row is not None:
            if row[0] != version:
                raise MigrationError(
                    f"the job queue schema is Procrastinate {row[0]} but the package is {version}: "
                    "apply Procrastinate's migrations between them (procrastinate schema --migrations-path)"
                )
            return False
        present = conn.execute(migration_query("procrastinate_present")).fetchone()
        if not (present and present[0]):
            root = bundle.sql_root() / "meta"
            conn.execute((root / "procrastinate_before.sql").read_bytes())
            conn.execute(sql.encode())
            conn.execute((root / "procrastinate_after.sql").read_bytes())
        conn.execute(
            migration_query("record_component"), {"name": COMPONENT, "version": version, "sha256": digest}
        )
    return True


def installed_version(conn: psycopg.Connection) -> str | None:
    """The Procrastinate version whose schema the database holds, or None."""
    exists = conn.execute(migration_query("migration_table_exists")).fetchone()
    if not (exists and exists[0]):
        return None
    row = conn.execute(migration_query("installed_component"), {"name": COMPONENT}).fetchone()
    return str(row[0]) if row else None
