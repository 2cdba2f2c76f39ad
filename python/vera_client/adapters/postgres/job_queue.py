"""Procrastinate's schema, installed into its own PostgreSQL schema.

The outbox functions in SQL defer jobs through Procrastinate's own functions,
so its schema must exist in the database. It is taken from the installed
procrastinate package (never copied into this repository) and recorded in
vera_meta.components with its version and checksum. A schema of another
version is refused before anything changes (sql/meta/check.sql): upgrading
the queue is applying Procrastinate's own migrations.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

import psycopg

from vera_client.adapters.postgres import bundle
from vera_client.adapters.postgres.queries import migration_query
from vera_client.distribution import install_hint
from vera_client.domain.errors import MigrationError

COMPONENT = "procrastinate"
SCHEMA = "procrastinate"


@dataclass(frozen=True, kw_only=True, slots=True)
class QueueSchema:
    """Procrastinate's schema.sql as the installed package ships it, with VERA's wrapping."""

    version: str
    sql: bytes
    sha256: str
    # sql/meta: its own schema owned by vera_owner before; the worker's grants after
    before: bytes
    after: bytes


def procrastinate_schema_sql() -> tuple[str, str]:
    """Version of the installed procrastinate package and its schema.sql."""
    try:
        version = metadata.version("procrastinate")
        sql = resources.files("procrastinate.sql").joinpath("schema.sql").read_text(encoding="utf-8")
    except (metadata.PackageNotFoundError, ModuleNotFoundError, FileNotFoundError) as exc:
        raise MigrationError(
            f"the job queue's schema comes with procrastinate, not installed here: {install_hint('worker')}"
        ) from exc
    return version, sql


def queue_schema(root: Path | None = None) -> QueueSchema:
    version, sql = procrastinate_schema_sql()
    return QueueSchema(
        version=version,
        sql=sql.encode(),
        sha256=hashlib.sha256(sql.encode()).hexdigest(),
        before=bundle.meta_file("procrastinate_before.sql", root).read_bytes(),
        after=bundle.meta_file("procrastinate_after.sql", root).read_bytes(),
    )


def install_if_missing(conn: psycopg.Connection, queue: QueueSchema) -> bool:
    """Install and record the schema unless recorded; True when it was recorded now.

    Runs inside the caller's transaction (the migrate's), after the check
    that refuses another version. Tables installed by hand are only recorded.
    """
    missing = conn.execute(migration_query("component_missing"), {"name": COMPONENT}).fetchone()
    if not (missing and missing[0]):
        return False
    absent = conn.execute(migration_query("procrastinate_absent")).fetchone()
    if absent and absent[0]:
        conn.execute(queue.before)
        conn.execute(queue.sql)
        conn.execute(queue.after)
    conn.execute(
        migration_query("record_component"),
        {"name": COMPONENT, "version": queue.version, "sha256": queue.sha256},
    )
    return True


def installed_version(conn: psycopg.Connection) -> str | None:
    """The Procrastinate version whose schema the database holds, or None."""
    exists = conn.execute(migration_query("migration_table_exists")).fetchone()
    if not (exists and exists[0]):
        return None
    row = conn.execute(migration_query("installed_component"), {"name": COMPONENT}).fetchone()
    return str(row[0]) if row else None
