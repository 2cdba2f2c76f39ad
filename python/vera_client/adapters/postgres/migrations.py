"""Brings one database up to date: the numbered migrations, then the
idempotent files, in one transaction.

Under an advisory lock, in ONE transaction: the bookkeeping tables; the
check that refuses, before anything changes, a database the bundle cannot
upgrade (built by the pre-baseline migrations, newer than the code, an
applied migration edited since, another job-queue version); each pending
migration with the row that records it (version, name, SHA-256 of the
file); every file of sql/functions and sql/rls, re-applied even when no
migration is pending; Procrastinate's schema when missing. All of it
commits, or none of it. The order is deployment.steps(), which `vera db
sql` renders for psql.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from vera_client.adapters.postgres import bundle, deployment, job_queue
from vera_client.adapters.postgres.errors import connect, first_line, translated_errors
from vera_client.adapters.postgres.queries import migration_query
from vera_client.domain.deployment import Migration, MigrationState
from vera_client.domain.errors import (
    EditedMigrationError,
    JobQueueVersionError,
    MigrationError,
    MissingExtensionError,
    UnsupportedServerError,
)

MIN_SERVER_VERSION = 160000


@dataclass(frozen=True, kw_only=True, slots=True)
class RequiredExtension:
    name: str
    min_version: tuple[int, ...]
    how_to_get: str


REQUIRED_EXTENSIONS: tuple[RequiredExtension, ...] = (
    RequiredExtension(
        name="vector",
        min_version=(0, 8),
        how_to_get="install pgvector >= 0.8 on the server (package postgresql-NN-pgvector, "
        "or build it from github.com/pgvector/pgvector), or use VERA's embedded PostgreSQL",
    ),
    RequiredExtension(
        name="pg_trgm",
        min_version=(1, 4),
        how_to_get="install the server's contrib modules (package postgresql-contrib)",
    ),
    RequiredExtension(
        name="btree_gin",
        min_version=(1, 3),
        how_to_get="install the server's contrib modules (package postgresql-contrib)",
    ),
    RequiredExtension(
        name="unaccent",
        min_version=(1, 1),
        how_to_get="install the server's contrib modules (package postgresql-contrib)",
    ),
)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


class MigrationRunner:
    """Brings one database up to the bundle's latest migration and functions."""

    def __init__(
        self,
        admin_dsn: str,
        *,
        sql_root: Path | None = None,
        data_dir: Path | None = None,
        connect_timeout: int = 10,
        required_extensions: Sequence[RequiredExtension] = REQUIRED_EXTENSIONS,
    ) -> None:
        """sql_root: another bundle than the package's; data_dir: the embedded server's, for messages."""
        self.admin_dsn = admin_dsn
        self.sql_root = sql_root
        self.data_dir = data_dir
        self.connect_timeout = connect_timeout
        self.required_extensions = tuple(required_extensions)

    def _connect(self) -> psycopg.Connection:
        return connect(self.admin_dsn, connect_timeout=self.connect_timeout)

    def states(self) -> list[MigrationState]:
        """Every migration of the bundle, applied or pending, with recorded checksums.

        Refuses what migrate would refuse, except edits and another queue
        version, which status shows instead. Creates nothing.
        """
        available = bundle.migrations(self.sql_root)
        queue = job_queue.queue_schema(self.sql_root)
        check = deployment.check_steps(available, queue.version, root=self.sql_root, data_dir=self.data_dir)
        with self._connect() as conn:
            with translated_errors():
                applied = self._applied(conn)
            try:
                for step in check:
                    self._execute(conn, step)
            except (EditedMigrationError, JobQueueVersionError):
                pass  # shown as "edited!" and by the queue's version line
            conn.rollback()
        return [
            MigrationState(
                migration=m,
                applied=m.version in applied,
                applied_sha256=applied.get(m.version, (None, None))[1],
            )
            for m in available
        ]

    def job_queue_version(self) -> str | None:
        """The version of Procrastinate whose schema is installed, or None."""
        with self._connect() as conn, translated_errors():
            version = job_queue.installed_version(conn)
            conn.rollback()
        return version

    def migrate(self, on_apply: Callable[[Migration], None] | None = None) -> list[Migration]:
        """Apply every pending migration, then the functions and rls; return the migrations applied.

        on_apply is called for each once everything has committed.
        """
        plan = deployment.steps(self.sql_root, data_dir=self.data_dir)
        applied_now: list[Migration] = []
        with self._connect() as conn:
            with translated_errors():
                self._preflight(conn)
            with conn.transaction():
                for step in plan:
                    if self._execute(conn, step) and isinstance(step, deployment.RunOnce):
                        applied_now.append(step.migration)
        if on_apply is not None:
            for migration in applied_now:
                on_apply(migration)
        return applied_now

    def _execute(self, conn: psycopg.Connection, step: deployment.Step) -> bool:
        """Execute one step; False when it had nothing to do (a recorded migration, a recorded queue)."""
        if isinstance(step, deployment.Statement):
            with translated_errors():
                conn.execute(migration_query(step.query), step.params)
            return True
        if isinstance(step, deployment.File):
            if step.refusal:
                with translated_errors():
                    conn.execute(step.sql)
            else:
                self._run_file(conn, step.label, step.sql)
            return True
        if isinstance(step, deployment.RunOnce):
            migration = step.migration
            with translated_errors():
                pending = conn.execute(migration_query("migration_pending"), {"version": migration.version})
                row = pending.fetchone()
            if not (row and row[0]):
                return False
            self._run_file(conn, migration.name, migration.path.read_bytes())
            with translated_errors():
                conn.execute(
                    migration_query("record_migration"),
                    {"version": migration.version, "name": migration.name, "sha256": migration.sha256},
                )
            return True
        with translated_errors():
            return job_queue.install_if_missing(conn, step.queue)

    @staticmethod
    def _run_file(conn: psycopg.Connection, label: str, sql: bytes) -> None:
        try:
            conn.execute(sql)  # the file's statements, as psql -f would send them
        except psycopg.Error as exc:
            raise MigrationError(f"{label} failed and was rolled back: {first_line(exc)}") from exc

    def _applied(self, conn: psycopg.Connection) -> dict[int, tuple[str, str]]:
        row = conn.execute(migration_query("migration_table_exists")).fetchone()
        if not row or not row[0]:
            return {}
        return {v: (name, sha) for v, name, sha in conn.execute(migration_query("applied_migrations"))}

    def _preflight(self, conn: psycopg.Connection) -> None:
        row = conn.execute(migration_query("server_version")).fetchone()
        version = int(row[0]) if row else 0
        if version < MIN_SERVER_VERSION:
            raise UnsupportedServerError(
                f"PostgreSQL {version // 10000} is too old: VERA needs PostgreSQL 16 or newer"
            )
        names = [extension.name for extension in self.required_extensions]
        found = {
            name: (default, installed)
            for name, default, installed in conn.execute(
                migration_query("available_extensions"), {"names": names}
            )
        }
        conn.rollback()
        for extension in self.required_extensions:
            default, installed = found.get(extension.name, (None, None))
            version_text = installed or default
            if version_text is None:
                raise MissingExtensionError(
                    f"extension '{extension.name}' is not available on this server: {extension.how_to_get}"
                )
            if _version_tuple(version_text) < extension.min_version:
                wanted = ".".join(map(str, extension.min_version))
                raise MissingExtensionError(
                    f"extension '{extension.name}' {version_text} is too old (need >= {wanted}): "
                    f"{extension.how_to_get}"
                )
