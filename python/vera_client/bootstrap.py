"""Composition root: builds the adapters that the settings ask for."""

from __future__ import annotations

from dataclasses import dataclass

from vera_client.adapters.postgres.embedded import EmbeddedPostgres
from vera_client.adapters.postgres.migrations import MigrationRunner
from vera_client.config import VeraSettings
from vera_client.domain.errors import ConfigurationError


@dataclass(frozen=True, kw_only=True, slots=True)
class Database:
    """How to reach the database, and the embedded server when VERA runs one."""

    settings: VeraSettings
    server: EmbeddedPostgres | None

    @property
    def admin_dsn(self) -> str:
        db = self.settings.db
        if self.server is not None:
            return self.server.admin_url()
        dsn = db.admin_dsn or db.dsn
        if dsn is None:  # pragma: no cover - DbSettings.embedded rules this out
            raise ConfigurationError("VERA_DB__DSN is not set")
        return dsn

    @property
    def app_dsn(self) -> str:
        db = self.settings.db
        if self.server is not None:
            return self.server.app_url()
        dsn = db.dsn or db.admin_dsn
        if dsn is None:  # pragma: no cover
            raise ConfigurationError("VERA_DB__DSN is not set")
        return dsn

    def migration_runner(self) -> MigrationRunner:
        return MigrationRunner(self.admin_dsn, connect_timeout=self.settings.db.connect_timeout)


def build_database(settings: VeraSettings) -> Database:
    db = settings.db
    server = (
        EmbeddedPostgres(data_dir=db.data_dir, port=db.port, database=db.database, tcp=db.tcp)
        if db.embedded
        else None
    )
    return Database(settings=settings, server=server)
