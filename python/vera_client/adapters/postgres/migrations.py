"""Applies the numbered migrations of the SQL bundle and records them.

Each pending migration runs in its own transaction together with the row
that records it (version, name, SHA-256 of the file). Nothing pending means
nothing is done. An applied migration whose file has changed since stops the
run before anything is applied, naming the file: released migrations are
frozen; a change is a new migration.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from vera_client.adapters.postgres import bundle, job_queue
from vera_client.adapters.postgres.errors import connect, first_line, translated_errors
from vera_client.adapters.postgres.queries import migration_query
from vera_client.domain.errors import (
    EditedMigrationError,
    MigrationError,
    MissingExtensionError,
    UnknownMigrationError,
    UnsupportedServerError,
)
from vera_client.domain.models import Migration, MigrationState

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
    """Brings one database up to the bundle's latest migration."""

    def __init__(
        self,
        admin_dsn: str,
        *,
        migrations_dir: Path | None = None,
        connect_timeout: int = 10,
        required_extensions: Sequence[RequiredExtension] = REQUIRED_EXTENSIONS,
    ) -> None:
        self.admin_dsn = admin_dsn
        self.migrations_dir = migrations_dir
        self.connect_timeout = connect_timeout
        self.required_extensions = tuple(required_extensions)

    def _connect(self) -> psycopg.Connection:
        return connect(self.admin_dsn, connect_timeout=self.connect_timeout)

    def states(self) -> list[MigrationState]:
        """Every migration of the bundle, applied or pending, with recorded checksums."""
        available = bundle.migrations(self.migrations_dir)
        with self._connect() as conn, translated_errors():
            applied = self._applied(conn)
            conn.rollback()
        self._check_unknown(available, applied)
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
        """Apply every pending migration in order; return those applied."""
        available = bundle.migrations(self.migrations_dir)
        applied_now: list[Migration] = []
        with self._connect() as conn:
            with translated_errors():
                self._preflight(conn)
                with conn.transaction():
                    conn.execute(migration_query("lock_migrations"))
                    conn.execute(bundle.bookkeeping_sql())
                    applied = self._applied(conn)
            self._check_unknown(available, applied)
            self._check_edited(available, applied)
            for migration in available:
                if migration.version in applied:
                    continue
                self._apply(conn, migration)
                applied_now.append(migration)
                if on_apply is not None:
                    on_apply(migration)
            with translated_errors():
                job_queue.ensure_installed(conn)
        return applied_now

    def _apply(self, conn: psycopg.Connection, migration: Migration) -> None:
        sql = migration.path.read_text(encoding="utf-8")
        try:
            with conn.transaction():
                conn.execute(migration_query("lock_migrations"))
                # re-check under the lock: a concurrent run may have applied it meanwhile
                if migration.version in self._applied(conn):
                    return
                conn.execute(sql.encode())  # the file's statements, as psql -f would send them
                conn.execute(
                    migration_query("record_migration"),
                    {
                        "version": migration.version,
                        "name": migration.name,
                        "sha256": migration.sha256,
                    },
                )
        except psycopg.Error as exc:
            raise MigrationError(f"{migration.name} failed and was rolled back: {first_line(exc)}") from exc

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

    @staticmethod
    def _check_unknown(available: list[Migration], applied: dict[int, tuple[str, str]]) -> None:
        known = {m.version for m in available}
        unknown = sorted(v for v in applied if v not in known)
        if unknown:
            names = ", ".join(applied[v][0] for v in unknown)
            raise UnknownMigrationError(
                f"the database has migrations this code does not know ({names}): upgrade VERA first"
            )

    @staticmethod
    def _check_edited(available: list[Migration], applied: dict[int, tuple[str, str]]) -> None:
        for migration in available:
            recorded = applied.get(migration.version)
            if recorded is not None and recorded[1] != migration.sha256:
                raise EditedMigrationError(
                    f"{migration.name} was edited after it was applied "
                    f"(recorded sha256 {recorded[1][:12]}, file {migration.sha256[:12]}): "
                    "restore it and put the change in a new migration"
                )
