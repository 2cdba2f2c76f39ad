"""Composition root: builds the adapters that the settings ask for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vera_client.adapters.embedders import local_embedder_for
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.embedders.local_minilm import MODEL as MINILM_MODEL
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.embedded import EmbeddedPostgres
from vera_client.adapters.postgres.migrations import MigrationRunner
from vera_client.config import VeraSettings
from vera_client.domain.errors import ConfigurationError
from vera_client.domain.ports import Embedder, ObjectStore


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

    @property
    def worker_dsn(self) -> str:
        db = self.settings.db
        if self.server is not None:
            return self.server.worker_url()
        dsn = db.worker_dsn or db.dsn or db.admin_dsn
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


def build_object_store(settings: VeraSettings) -> ObjectStore:
    """Where raw source bytes go (VERA_OBJECTS__BACKEND)."""
    objects = settings.objects
    if objects.backend == "local":
        return LocalObjectStore(objects.root or settings.db.data_dir.parent / "objects")
    raise ConfigurationError(f"object store backend {objects.backend!r} is not available")


def build_embedder(settings: VeraSettings) -> Embedder:
    """The configured embedder (VERA_EMBEDDER__PROVIDER)."""
    embedder = settings.embedder
    if embedder.provider == "local":
        if embedder.model not in (None, MINILM_MODEL):
            raise ConfigurationError(f"the local embedder runs {MINILM_MODEL} only, not {embedder.model!r}")
        local = local_embedder_for(MINILM_MODEL)  # one loaded model per process
        assert local is not None
        return local
    if embedder.provider == "deterministic":
        return DeterministicEmbedder(embedder.dim or 384)
    raise ConfigurationError(f"embedder provider {embedder.provider!r} is not available")


def embedder_for_model(settings: VeraSettings) -> Callable[[str | None], Embedder | None]:
    """Which embedder writes a group's vectors: the configured one for a group
    without a pin or pinned to its model; for a group pinned to another model,
    that model when it runs here; otherwise none (the group's new text is then
    found by words only, and the worker says so)."""
    configured: Embedder | None = None

    def choose(pinned: str | None) -> Embedder | None:
        nonlocal configured
        if configured is None:
            configured = build_embedder(settings)
        if pinned is None or pinned == configured.model:
            return configured
        return local_embedder_for(pinned)

    return choose
