"""Composition root: builds the adapters that the settings ask for.

Each adapter is imported by the function that builds it: a process imports the providers its
settings choose, and `vera search` reaches the database before any provider's HTTP stack is
loaded (benchmarks/cli_startup.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import SecretStr

from vera_client.adapters.postgres.embedded import EmbeddedPostgres
from vera_client.config import VeraSettings
from vera_client.domain.errors import ConfigurationError

if TYPE_CHECKING:
    from vera_client.adapters.postgres.executor import Executor
    from vera_client.adapters.postgres.migrations import MigrationRunner
    from vera_client.adapters.providers.metering import Meter
    from vera_client.domain.ports import Embedder, ObjectStore, Reranker


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
        if db.dsn is None:  # never the administrator's DSN: row-level security would not apply
            raise ConfigurationError(
                "VERA_DB__ADMIN_DSN is set but VERA_DB__DSN is not: the application will not connect as "
                "the administrator (row-level security would not apply); "
                "set VERA_DB__DSN to this application's login (vera tenant login create NAME prints it)"
            )
        return db.dsn

    @property
    def worker_dsn(self) -> str:
        db = self.settings.db
        if self.server is not None:
            return self.server.worker_url()
        dsn = db.worker_dsn or db.dsn
        if dsn is None:  # never the administrator's DSN: row-level security would not apply
            raise ConfigurationError(
                "VERA_DB__ADMIN_DSN is set but neither VERA_DB__WORKER_DSN nor VERA_DB__DSN: "
                "the worker will not connect as the administrator (row-level security would not apply); "
                "set VERA_DB__WORKER_DSN to the vera_worker role's DSN"
            )
        return dsn

    def worker_executor(self) -> Executor:
        """The one pool of a worker process (role vera_worker), shared by its jobs: each
        transaction borrows a connection, so there is room for every job slot and the backlog
        reading; a connection is checked before it is lent, since it may wait long between jobs."""
        from vera_client.adapters.postgres.executor import Executor

        settings = self.settings
        pool = settings.pool.model_copy(
            update={"max_size": max(settings.pool.max_size, settings.worker.concurrency + 1)}
        )
        return Executor.connect(
            self.worker_dsn, pool=pool, connect_timeout=settings.db.connect_timeout, check=True
        )

    def migration_runner(self) -> MigrationRunner:
        from vera_client.adapters.postgres.migrations import MigrationRunner

        return MigrationRunner(
            self.admin_dsn,
            data_dir=self.server.data_dir if self.server is not None else None,
            connect_timeout=self.settings.db.connect_timeout,
        )


def build_database(settings: VeraSettings) -> Database:
    db = settings.db
    server = (
        EmbeddedPostgres(data_dir=db.data_dir, port=db.port, database=db.database, tcp=db.tcp)
        if db.embedded
        else None
    )
    return Database(settings=settings, server=server)


@dataclass(frozen=True, kw_only=True, slots=True)
class Providers:
    """What the settings chose beyond the database, built once per process part
    (a client, a worker) and shared by its threads. One meter sees every hosted
    call, below the embedding cache, so cache hits cost nothing."""

    settings: VeraSettings
    meter: Meter
    objects: ObjectStore
    reranker: Reranker | None
    # built on first use, by pinned model ('' = the configured one)
    _embedders: dict[str, Embedder] = field(default_factory=dict, init=False, repr=False)

    def embedder(self) -> Embedder:
        """The configured embedder (VERA_EMBEDDER__PROVIDER), cached; ConfigurationError with none."""
        return self._configured()

    @property
    def embeds(self) -> bool:
        """False with VERA_EMBEDDER__PROVIDER=none: this process computes no vector."""
        return self.settings.embedder.provider != "none"

    def embedder_for_model(self, pinned: str | None) -> Embedder | None:
        """Which embedder serves a group: the configured one for a group without a
        pin or pinned to its model; for a group pinned to another model, that model
        when it runs here; otherwise none (its new text is then found by words only).
        With VERA_EMBEDDER__PROVIDER=none, none for every group: this process searches by
        words and stores passages without vectors."""
        if not self.embeds:
            return None
        configured = self._configured()
        if pinned is None or pinned == configured.model:
            return configured
        if pinned not in self._embedders:
            from vera_client.adapters.embedders import local_embedder_for

            local = local_embedder_for(pinned)
            if local is None:
                return None
            self._embedders[pinned] = self._cached(local)
        return self._embedders[pinned]

    def _configured(self) -> Embedder:
        if "" not in self._embedders:  # built on first use: loading a model takes a while
            self._embedders[""] = self._cached(_hosted_or_local_embedder(self.settings, self.meter))
        return self._embedders[""]

    def _cached(self, embedder: Embedder) -> Embedder:
        from vera_client.adapters.embedders.cache import CachedEmbedder

        cache = self.settings.cache
        return CachedEmbedder(
            embedder, max_entries=cache.max_entries, ttl_seconds=cache.ttl_seconds, shared=cache.valkey_url
        )


def build_providers(settings: VeraSettings) -> Providers:
    from vera_client.adapters.providers.metering import Meter

    meter = Meter()
    return Providers(
        settings=settings,
        meter=meter,
        objects=build_object_store(settings),
        reranker=build_reranker(settings, meter),
    )


def _secret(value: SecretStr | None, variable: str, what: str) -> str:
    """A configured secret, else the provider's own environment variable."""
    if value is not None and value.get_secret_value():
        return value.get_secret_value()
    fallback = os.environ.get(variable, "")
    if not fallback:
        raise ConfigurationError(f"{what} needs an API key: set VERA_{what.upper()}__API_KEY or {variable}")
    return fallback


def _hosted_or_local_embedder(settings: VeraSettings, meter: Meter) -> Embedder:
    embedder = settings.embedder
    if embedder.provider == "none":
        raise ConfigurationError("no embedder is configured (VERA_EMBEDDER__PROVIDER=none)")
    if embedder.provider in ("local", "deterministic"):
        return _local_embedder(settings)
    from vera_client.adapters.embedders import openai, voyage
    from vera_client.adapters.providers.resilience import ResilienceChain

    chain = ResilienceChain(embedder.provider, embedder.resilience)
    if embedder.provider == "openai":
        return openai.OpenAIEmbedder(
            api_key=_secret(embedder.api_key, "OPENAI_API_KEY", "embedder"),
            model=embedder.model or openai.DEFAULT_MODEL,
            dim=embedder.dim,
            base_url=embedder.base_url or openai.DEFAULT_BASE_URL,
            batch_size=embedder.batch_size,
            meter=meter,
            chain=chain,
        )
    return voyage.VoyageEmbedder(
        api_key=_secret(embedder.api_key, "VOYAGE_API_KEY", "embedder"),
        model=embedder.model or voyage.DEFAULT_MODEL,
        dim=embedder.dim,
        base_url=embedder.base_url or voyage.DEFAULT_BASE_URL,
        batch_size=embedder.batch_size,
        meter=meter,
        chain=chain,
    )


def build_reranker(settings: VeraSettings, meter: Meter) -> Reranker | None:
    """The optional stage-3 reranker (VERA_RERANKER__PROVIDER)."""
    reranker = settings.reranker
    if reranker.provider == "none":
        return None
    from vera_client.adapters.embedders import openai, voyage
    from vera_client.adapters.providers.resilience import ResilienceChain
    from vera_client.adapters.rerankers import llm
    from vera_client.adapters.rerankers.voyage import DEFAULT_MODEL as VOYAGE_RERANK_MODEL
    from vera_client.adapters.rerankers.voyage import VoyageReranker

    chain = ResilienceChain(reranker.provider, reranker.resilience)
    if reranker.provider == "voyage":
        return VoyageReranker(
            api_key=_secret(reranker.api_key, "VOYAGE_API_KEY", "reranker"),
            model=reranker.model or VOYAGE_RERANK_MODEL,
            base_url=reranker.base_url or voyage.DEFAULT_BASE_URL,
            meter=meter,
            chain=chain,
        )
    # any OpenAI-compatible chat API; a local server may need no key
    key = reranker.api_key.get_secret_value() if reranker.api_key else os.environ.get("OPENAI_API_KEY")
    return llm.LlmReranker(
        api_key=key or None,
        model=reranker.model or llm.DEFAULT_MODEL,
        base_url=reranker.base_url or openai.DEFAULT_BASE_URL,
        meter=meter,
        chain=chain,
    )


def build_object_store(settings: VeraSettings) -> ObjectStore:
    """Where raw source bytes go (VERA_OBJECTS__BACKEND)."""
    objects = settings.objects
    if objects.backend == "local":
        from vera_client.adapters.objects.local import LocalObjectStore

        return LocalObjectStore(objects.root or settings.db.data_dir.parent / "objects")
    if not objects.bucket:
        raise ConfigurationError("the S3 object store needs a bucket: set VERA_OBJECTS__BUCKET")
    from vera_client.adapters.optional import require
    from vera_client.adapters.providers.resilience import ResilienceChain

    require("boto3", extra="s3", needed_for="the S3 object store")
    from vera_client.adapters.objects.s3 import S3ObjectStore  # boto3 is the [s3] extra's

    chain = ResilienceChain("s3", objects.resilience)
    return S3ObjectStore(
        objects.bucket,
        prefix=objects.prefix,
        endpoint_url=objects.endpoint_url,
        region=objects.region,
        access_key_id=objects.access_key_id.get_secret_value() if objects.access_key_id else None,
        secret_access_key=objects.secret_access_key.get_secret_value() if objects.secret_access_key else None,
        call_guard=lambda call: chain.call(lambda _timeout: call()),
        max_object_bytes=objects.max_object_bytes,
    )


def _local_embedder(settings: VeraSettings) -> Embedder:
    """The configured embedder when it runs here (local or deterministic)."""
    embedder = settings.embedder
    if embedder.provider == "local":
        from vera_client.adapters.embedders import local_embedder_for
        from vera_client.adapters.embedders.local_minilm import MODEL as MINILM_MODEL

        if embedder.model not in (None, MINILM_MODEL):
            raise ConfigurationError(f"the local embedder runs {MINILM_MODEL} only, not {embedder.model!r}")
        local = local_embedder_for(MINILM_MODEL)  # one loaded model per process
        assert local is not None
        return local
    if embedder.provider == "deterministic":
        from vera_client.adapters.embedders.deterministic import DeterministicEmbedder

        return DeterministicEmbedder(embedder.dim or 384)
    raise ConfigurationError(f"embedder provider {embedder.provider!r} does not run here")  # pragma: no cover
