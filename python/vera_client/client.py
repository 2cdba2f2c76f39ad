"""The typed Python client: one method per function of the SQL API, frozen
dataclasses back, VeraErrors (chosen by SQLSTATE, in one place) on failure.

    with VeraClient.from_settings(api_key) as vera:
        for hit in vera.search("Which cluster does billing-api run on?"):
            print(hit.rank, hit.score, hit.text, hit.citation["source"])

Each call is one transaction on a pooled connection, authenticated with the
client's API key (authentication is per transaction in VERA). Search embeds
the query with the model its groups pinned (through the embedding cache), and
with a reranker configured re-scores the best hits (stage 3). AsyncVeraClient
has the same methods as coroutines.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar
from uuid import UUID

import psycopg_pool

from vera_client.adapters.embedders import model_languages
from vera_client.adapters.postgres import calls
from vera_client.adapters.postgres.calls import Call
from vera_client.adapters.postgres.errors import redact, translated_errors
from vera_client.adapters.postgres.queries import query
from vera_client.adapters.providers.metering import MeterKey, Totals
from vera_client.bootstrap import Providers, build_database, build_providers
from vera_client.config import PoolSettings, VeraSettings
from vera_client.domain.errors import ConfigurationError, DatabaseUnavailableError, InvalidArgumentError
from vera_client.domain.languages import model_reads
from vera_client.domain.models import (
    ApiKeyInfo,
    Calibration,
    EpisodeVersion,
    Hit,
    Membership,
    NewApiKey,
    PendingReview,
    PublishedClaim,
    ReviewOutcome,
    SnapshotInfo,
    SnapshotTaken,
    Source,
    StoredChunk,
    Vote,
)
from vera_client.domain.ports import Embedder
from vera_client.domain.reranking import rerank_hits

T = TypeVar("T")
ItemKind = str  # "fact" or "passage"
WITHDRAWALS = ("retract_episode", "erase_episode", "retract_source", "erase_source")


class _Planner:
    """What both clients decide the same way: which embedder serves a search,
    how many hits to fetch for the reranker, how to apply its scores."""

    # a group pins its model with its first vector and keeps it: remembering the pins
    # for a while saves every search a round trip (a group pinned meanwhile is searched
    # by words alone until then)
    PINS_TTL_SECONDS = 30.0

    def __init__(self, providers: Providers | None) -> None:
        self.providers = providers
        self._pins: dict[tuple[str, ...] | None, tuple[float, list[tuple[str, int]]]] = {}
        settings = providers.settings.reranker if providers is not None else None
        self.rerank_weight = settings.weight if settings is not None else 0.0
        self.rerank_top_n = settings.top_n if settings is not None else 0

    def known_pins(self, groups: Sequence[str] | None) -> list[tuple[str, int]] | None:
        """The pins of these groups if read lately, else None (read them and remember_pins)."""
        entry = self._pins.get(self._pins_key(groups))
        return entry[1] if entry is not None and entry[0] > time.monotonic() else None

    def remember_pins(self, groups: Sequence[str] | None, pins: list[tuple[str, int]]) -> None:
        if pins:  # a group without a pin yet may get one with its next write
            self._pins[self._pins_key(groups)] = (time.monotonic() + self.PINS_TTL_SECONDS, pins)

    @staticmethod
    def _pins_key(groups: Sequence[str] | None) -> tuple[str, ...] | None:
        return tuple(sorted(groups)) if groups is not None else None

    def embedder_for(self, pins: Sequence[tuple[str, int]], text: str) -> tuple[Embedder, str] | None:
        """The embedder of the first pinned model that runs here and reads the query's language;
        None means the search goes by words alone (a wrong vector would only drag it down)."""
        if self.providers is None:
            return None
        for model, dim in pins:
            if not model_reads(model_languages(model), text):
                continue
            embedder = self.providers.embedder_for_model(model)
            if embedder is not None and embedder.dim == dim:
                return embedder, model
        return None

    def reranking(self, rerank: bool) -> bool:
        return rerank and self.providers is not None and self.providers.reranker is not None

    def fetch(self, k: int, rerank: bool) -> int:
        return max(k, self.rerank_top_n) if self.reranking(rerank) else k

    def rerank(self, text: str, hits: list[Hit]) -> list[Hit]:
        assert self.providers is not None and self.providers.reranker is not None
        head = hits[: self.rerank_top_n]
        scores = self.providers.reranker.rerank(text, [hit.text for hit in head]) if head else []
        return rerank_hits(hits, scores, weight=self.rerank_weight)

    def usage(self) -> dict[MeterKey, Totals]:
        return self.providers.meter.totals() if self.providers is not None else {}


def _check_k(k: int) -> None:
    if not 1 <= k <= 1000:
        raise InvalidArgumentError(f"k must be between 1 and 1000, not {k}")


def _key_from(api_key: str | None) -> str:
    if not api_key:
        raise ConfigurationError("an API key is needed: pass api_key or set VERA_API_KEY")
    return api_key


class VeraClient:
    """Synchronous client over a psycopg connection pool. Thread-safe; close it (or use `with`)."""

    def __init__(
        self,
        dsn: str,
        api_key: str,
        *,
        providers: Providers | None = None,
        pool: PoolSettings | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        pool = pool or PoolSettings()
        self._api_key = _key_from(api_key)
        self._plan = _Planner(providers)
        self._pool = psycopg_pool.ConnectionPool(
            dsn,
            min_size=pool.min_size,
            max_size=pool.max_size,
            timeout=pool.timeout_seconds,
            kwargs={"connect_timeout": max(1, int(connect_timeout))},
            open=True,
        )
        try:
            self._pool.wait(timeout=connect_timeout)
        except psycopg_pool.PoolTimeout as exc:
            self._pool.close()
            raise DatabaseUnavailableError(
                f"cannot connect to {redact(dsn)} within {connect_timeout:g}s"
            ) from exc

    @classmethod
    def from_settings(cls, api_key: str | None = None, settings: VeraSettings | None = None) -> VeraClient:
        """A client as the environment configures it (VERA_DB__*, VERA_EMBEDDER__*, VERA_RERANKER__*, ...)."""
        settings = settings or VeraSettings()
        database = build_database(settings)
        return cls(
            database.app_dsn,
            _key_from(api_key),
            providers=build_providers(settings),
            pool=settings.pool,
            connect_timeout=settings.db.connect_timeout,
        )

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _run(self, call: Call[T]) -> T:
        with translated_errors(), self._pool.connection() as conn:
            if call.isolation is not None:
                conn.isolation_level = call.isolation
            try:
                with conn.transaction():
                    conn.execute(query("authenticate"), {"key": self._api_key})
                    cursor = conn.execute(query(call.query), call.params)
                    columns = [column.name for column in cursor.description or []]
                    rows = cursor.fetchall()
            finally:
                if call.isolation is not None:
                    conn.isolation_level = None
        return call.read(columns, rows)

    # --- who, groups, keys, settings

    def whoami(self) -> list[Membership]:
        return self._run(calls.whoami())

    def create_group(self, parent: str, kind: str, name: str) -> str:
        return self._run(calls.create_group(parent, kind, name))

    def create_principal(
        self, group: str, kind: str, name: str, role: str = "member", email: str | None = None
    ) -> UUID:
        return self._run(calls.create_principal(group, kind, name, role, email))

    def set_member_role(self, group: str, principal: UUID, role: str) -> None:
        self._run(calls.set_member_role(group, principal, role))

    def remove_member(self, group: str, principal: UUID) -> bool:
        return self._run(calls.remove_member(group, principal))

    def create_api_key(
        self, name: str, expires_at: datetime | None = None, principal: UUID | None = None
    ) -> NewApiKey:
        return self._run(calls.create_api_key(name, expires_at, principal))

    def revoke_api_key(self, key: str) -> bool:
        return self._run(calls.revoke_api_key(key))

    def list_api_keys(self) -> list[ApiKeyInfo]:
        return self._run(calls.list_api_keys())

    def setting(self, group: str, name: str) -> Any:
        return self._run(calls.setting(group, name))

    def set_setting(self, group: str, name: str, value: Any) -> Any:
        return self._run(calls.set_setting(group, name, value))

    # --- sources and the write path

    def register_source(
        self,
        group: str,
        kind: str,
        name: str,
        tier: int,
        *,
        token_env: str | None = None,
        config: Mapping[str, Any] | None = None,
        uri: str | None = None,
    ) -> UUID:
        return self._run(
            calls.register_source(group, kind, name, tier, token_env=token_env, config=config or {}, uri=uri)
        )

    def list_sources(self, group: str | None = None) -> list[Source]:
        return self._run(calls.list_sources(group))

    def request_ingest(self, group: str, source: UUID, path: str | None = None) -> int:
        return self._run(calls.request_ingest(group, source, path))

    def record_episode(
        self,
        group: str,
        source: UUID,
        external_id: str,
        sha256: bytes,
        *,
        object_key: str | None = None,
        mime: str | None = None,
        observed_at: datetime | None = None,
        title: str | None = None,
        uri: str | None = None,
    ) -> EpisodeVersion:
        return self._run(
            calls.record_episode(
                group,
                source,
                external_id,
                sha256,
                object_key=object_key,
                mime=mime,
                observed_at=observed_at,
                title=title,
                uri=uri,
            )
        )

    def store_chunks(
        self,
        group: str,
        episode: UUID,
        chunks: Sequence[Mapping[str, Any]],
        embedding_model: str | None = None,
    ) -> list[StoredChunk]:
        return self._run(calls.store_chunks(group, episode, chunks, embedding_model))

    def publish(
        self,
        group: str,
        episode: UUID | None,
        claims: Sequence[Mapping[str, Any]],
        embedding_model: str | None = None,
    ) -> list[PublishedClaim]:
        """publish_claims: one batch, all or nothing."""
        return self._run(calls.publish_claims(group, episode, claims, embedding_model))

    def declare_predicate(
        self, group: str, name: str, cardinality: str = "multi", description: str | None = None
    ) -> str:
        return self._run(calls.declare_predicate(group, name, cardinality, description))

    def pending_reviews(self, group: str) -> list[PendingReview]:
        return self._run(calls.pending_reviews(group))

    def review(self, group: str, fact: UUID, decision: str, note: str | None = None) -> ReviewOutcome:
        """review_claim: 'approve' or 'reject'."""
        return self._run(calls.review_claim(group, fact, decision, note))

    def retract_episode(self, group: str, episode: UUID, reason: str | None = None) -> int:
        return self._run(calls.withdraw("retract_episode", group, episode, reason))

    def erase_episode(self, group: str, episode: UUID, reason: str | None = None) -> int:
        return self._run(calls.withdraw("erase_episode", group, episode, reason))

    def retract_source(self, group: str, source: UUID, reason: str | None = None) -> int:
        return self._run(calls.withdraw("retract_source", group, source, reason))

    def erase_source(self, group: str, source: UUID, reason: str | None = None) -> int:
        return self._run(calls.withdraw("erase_source", group, source, reason))

    def complete_cleanup(self, job: int) -> bool:
        return self._run(calls.complete_cleanup(job))

    # --- the read path

    def _query_vector(
        self, text: str | None, groups: Sequence[str] | None
    ) -> tuple[list[float] | None, str | None]:
        if not text or not text.strip():
            return None, None
        if self._plan.providers is None:
            return None, None
        pins = self._plan.known_pins(groups)
        if pins is None:
            pins = self._run(calls.pinned_models(groups))
            self._plan.remember_pins(groups, pins)
        chosen = self._plan.embedder_for(pins, text)
        if chosen is None:
            return None, None
        embedder, model = chosen
        return embedder.embed([text])[0], model

    def search(
        self,
        text: str,
        *,
        k: int = 10,
        as_of: datetime | None = None,
        groups: Sequence[str] | None = None,
        weights: Mapping[str, Any] | None = None,
        lexical_weight: float = 1.0,
        vector_weight: float = 1.0,
        rerank: bool = True,
    ) -> list[Hit]:
        """Ranked, cited hits: hybrid when a searched group's model runs here and reads the query's
        language (else by words alone), reranked when configured."""
        _check_k(k)
        vector, model = self._query_vector(text, groups)
        found = self._run(
            calls.search(
                text,
                embedding=vector,
                embedding_model=model,
                k=self._plan.fetch(k, rerank),
                as_of=as_of,
                groups=groups,
                weights=weights,
                lexical_weight=lexical_weight,
                vector_weight=vector_weight,
            )
        )
        if self._plan.reranking(rerank) and found:
            found = self._plan.rerank(text, found)
        return found[:k]

    def feedback(
        self,
        kind: ItemKind,
        item: UUID,
        text: str,
        vote: str,
        *,
        as_of: datetime | None = None,
        groups: Sequence[str] | None = None,
    ) -> Vote:
        """record_feedback: 'up' or 'down' on a hit of a query (embedded as search embeds it)."""
        vector, model = self._query_vector(text, groups)
        return self._run(
            calls.record_feedback(
                kind, item, text, vote, embedding=vector, embedding_model=model, as_of=as_of, groups=groups
            )
        )

    def calibrate(self, group: str, min_samples: int | None = None) -> Calibration:
        """calibrate_weights from the group's votes."""
        return self._run(calls.calibrate_weights(group, min_samples))

    def active_weights(self, group: str) -> dict[str, Any]:
        return self._run(calls.active_weights(group))

    def reset_weights(self, group: str) -> None:
        self._run(calls.reset_weights(group))

    def create_snapshot(self, group: str, name: str) -> SnapshotTaken:
        return self._run(calls.create_snapshot(group, name))

    def list_snapshots(self, group: str) -> list[SnapshotInfo]:
        return self._run(calls.list_snapshots(group))

    def drop_snapshot(self, group: str, name: str) -> None:
        self._run(calls.drop_snapshot(group, name))

    def search_snapshot(self, group: str, name: str, text: str, *, k: int = 10) -> list[Hit]:
        """The snapshot's answer, as search gave it when it was taken."""
        _check_k(k)
        pins = self._run(calls.snapshot_pin(group, name))
        vector, model = None, None
        chosen = self._plan.embedder_for(pins, text) if text.strip() else None
        if chosen is not None:
            vector, model = chosen[0].embed([text])[0], chosen[1]
        return self._run(
            calls.search_snapshot(group, name, text, embedding=vector, embedding_model=model, k=k)
        )

    def usage(self) -> dict[MeterKey, Totals]:
        """What calls to hosted providers used and cost (estimated) since the client started."""
        return self._plan.usage()


class AsyncVeraClient:
    """The same client for asyncio: `async with await AsyncVeraClient.connect(...) as vera`."""

    def __init__(
        self, pool: psycopg_pool.AsyncConnectionPool, api_key: str, providers: Providers | None
    ) -> None:
        self._pool = pool
        self._api_key = _key_from(api_key)
        self._plan = _Planner(providers)

    @classmethod
    async def connect(
        cls,
        dsn: str,
        api_key: str,
        *,
        providers: Providers | None = None,
        pool: PoolSettings | None = None,
        connect_timeout: float = 10.0,
    ) -> AsyncVeraClient:
        pool = pool or PoolSettings()
        connections = psycopg_pool.AsyncConnectionPool(
            dsn,
            min_size=pool.min_size,
            max_size=pool.max_size,
            timeout=pool.timeout_seconds,
            kwargs={"connect_timeout": max(1, int(connect_timeout))},
            open=False,
        )
        try:
            await connections.open(wait=True, timeout=connect_timeout)
        except psycopg_pool.PoolTimeout as exc:
            await connections.close()
            raise DatabaseUnavailableError(
                f"cannot connect to {redact(dsn)} within {connect_timeout:g}s"
            ) from exc
        return cls(connections, api_key, providers)

    @classmethod
    async def from_settings(
        cls, api_key: str | None = None, settings: VeraSettings | None = None
    ) -> AsyncVeraClient:
        settings = settings or VeraSettings()
        database = build_database(settings)
        return await cls.connect(
            database.app_dsn,
            _key_from(api_key),
            providers=build_providers(settings),
            pool=settings.pool,
            connect_timeout=settings.db.connect_timeout,
        )

    async def close(self) -> None:
        await self._pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _run(self, call: Call[T]) -> T:
        with translated_errors():
            async with self._pool.connection() as conn:
                if call.isolation is not None:
                    await conn.set_isolation_level(call.isolation)
                try:
                    async with conn.transaction():
                        await conn.execute(query("authenticate"), {"key": self._api_key})
                        cursor = await conn.execute(query(call.query), call.params)
                        columns = [column.name for column in cursor.description or []]
                        rows = await cursor.fetchall()
                finally:
                    if call.isolation is not None:
                        await conn.set_isolation_level(None)
        return call.read(columns, rows)

    async def whoami(self) -> list[Membership]:
        return await self._run(calls.whoami())

    async def create_group(self, parent: str, kind: str, name: str) -> str:
        return await self._run(calls.create_group(parent, kind, name))

    async def create_principal(
        self, group: str, kind: str, name: str, role: str = "member", email: str | None = None
    ) -> UUID:
        return await self._run(calls.create_principal(group, kind, name, role, email))

    async def set_member_role(self, group: str, principal: UUID, role: str) -> None:
        await self._run(calls.set_member_role(group, principal, role))

    async def remove_member(self, group: str, principal: UUID) -> bool:
        return await self._run(calls.remove_member(group, principal))

    async def create_api_key(
        self, name: str, expires_at: datetime | None = None, principal: UUID | None = None
    ) -> NewApiKey:
        return await self._run(calls.create_api_key(name, expires_at, principal))

    async def revoke_api_key(self, key: str) -> bool:
        return await self._run(calls.revoke_api_key(key))

    async def list_api_keys(self) -> list[ApiKeyInfo]:
        return await self._run(calls.list_api_keys())

    async def setting(self, group: str, name: str) -> Any:
        return await self._run(calls.setting(group, name))

    async def set_setting(self, group: str, name: str, value: Any) -> Any:
        return await self._run(calls.set_setting(group, name, value))

    async def register_source(
        self,
        group: str,
        kind: str,
        name: str,
        tier: int,
        *,
        token_env: str | None = None,
        config: Mapping[str, Any] | None = None,
        uri: str | None = None,
    ) -> UUID:
        return await self._run(
            calls.register_source(group, kind, name, tier, token_env=token_env, config=config or {}, uri=uri)
        )

    async def list_sources(self, group: str | None = None) -> list[Source]:
        return await self._run(calls.list_sources(group))

    async def request_ingest(self, group: str, source: UUID, path: str | None = None) -> int:
        return await self._run(calls.request_ingest(group, source, path))

    async def record_episode(
        self,
        group: str,
        source: UUID,
        external_id: str,
        sha256: bytes,
        *,
        object_key: str | None = None,
        mime: str | None = None,
        observed_at: datetime | None = None,
        title: str | None = None,
        uri: str | None = None,
    ) -> EpisodeVersion:
        return await self._run(
            calls.record_episode(
                group,
                source,
                external_id,
                sha256,
                object_key=object_key,
                mime=mime,
                observed_at=observed_at,
                title=title,
                uri=uri,
            )
        )

    async def store_chunks(
        self,
        group: str,
        episode: UUID,
        chunks: Sequence[Mapping[str, Any]],
        embedding_model: str | None = None,
    ) -> list[StoredChunk]:
        return await self._run(calls.store_chunks(group, episode, chunks, embedding_model))

    async def publish(
        self,
        group: str,
        episode: UUID | None,
        claims: Sequence[Mapping[str, Any]],
        embedding_model: str | None = None,
    ) -> list[PublishedClaim]:
        return await self._run(calls.publish_claims(group, episode, claims, embedding_model))

    async def declare_predicate(
        self, group: str, name: str, cardinality: str = "multi", description: str | None = None
    ) -> str:
        return await self._run(calls.declare_predicate(group, name, cardinality, description))

    async def pending_reviews(self, group: str) -> list[PendingReview]:
        return await self._run(calls.pending_reviews(group))

    async def review(self, group: str, fact: UUID, decision: str, note: str | None = None) -> ReviewOutcome:
        return await self._run(calls.review_claim(group, fact, decision, note))

    async def retract_episode(self, group: str, episode: UUID, reason: str | None = None) -> int:
        return await self._run(calls.withdraw("retract_episode", group, episode, reason))

    async def erase_episode(self, group: str, episode: UUID, reason: str | None = None) -> int:
        return await self._run(calls.withdraw("erase_episode", group, episode, reason))

    async def retract_source(self, group: str, source: UUID, reason: str | None = None) -> int:
        return await self._run(calls.withdraw("retract_source", group, source, reason))

    async def erase_source(self, group: str, source: UUID, reason: str | None = None) -> int:
        return await self._run(calls.withdraw("erase_source", group, source, reason))

    async def complete_cleanup(self, job: int) -> bool:
        return await self._run(calls.complete_cleanup(job))

    async def _query_vector(
        self, text: str | None, groups: Sequence[str] | None
    ) -> tuple[list[float] | None, str | None]:
        if not text or not text.strip():
            return None, None
        if self._plan.providers is None:
            return None, None
        pins = self._plan.known_pins(groups)
        if pins is None:
            pins = await self._run(calls.pinned_models(groups))
            self._plan.remember_pins(groups, pins)
        chosen = self._plan.embedder_for(pins, text)
        if chosen is None:
            return None, None
        embedder, model = chosen
        # models run on CPU or over HTTP: off the event loop
        return (await asyncio.to_thread(embedder.embed, [text]))[0], model

    async def search(
        self,
        text: str,
        *,
        k: int = 10,
        as_of: datetime | None = None,
        groups: Sequence[str] | None = None,
        weights: Mapping[str, Any] | None = None,
        lexical_weight: float = 1.0,
        vector_weight: float = 1.0,
        rerank: bool = True,
    ) -> list[Hit]:
        _check_k(k)
        vector, model = await self._query_vector(text, groups)
        found = await self._run(
            calls.search(
                text,
                embedding=vector,
                embedding_model=model,
                k=self._plan.fetch(k, rerank),
                as_of=as_of,
                groups=groups,
                weights=weights,
                lexical_weight=lexical_weight,
                vector_weight=vector_weight,
            )
        )
        if self._plan.reranking(rerank) and found:
            found = await asyncio.to_thread(self._plan.rerank, text, found)
        return found[:k]

    async def feedback(
        self,
        kind: ItemKind,
        item: UUID,
        text: str,
        vote: str,
        *,
        as_of: datetime | None = None,
        groups: Sequence[str] | None = None,
    ) -> Vote:
        vector, model = await self._query_vector(text, groups)
        return await self._run(
            calls.record_feedback(
                kind, item, text, vote, embedding=vector, embedding_model=model, as_of=as_of, groups=groups
            )
        )

    async def calibrate(self, group: str, min_samples: int | None = None) -> Calibration:
        return await self._run(calls.calibrate_weights(group, min_samples))

    async def active_weights(self, group: str) -> dict[str, Any]:
        return await self._run(calls.active_weights(group))

    async def reset_weights(self, group: str) -> None:
        await self._run(calls.reset_weights(group))

    async def create_snapshot(self, group: str, name: str) -> SnapshotTaken:
        return await self._run(calls.create_snapshot(group, name))

    async def list_snapshots(self, group: str) -> list[SnapshotInfo]:
        return await self._run(calls.list_snapshots(group))

    async def drop_snapshot(self, group: str, name: str) -> None:
        await self._run(calls.drop_snapshot(group, name))

    async def search_snapshot(self, group: str, name: str, text: str, *, k: int = 10) -> list[Hit]:
        _check_k(k)
        pins = await self._run(calls.snapshot_pin(group, name))
        vector, model = None, None
        chosen = self._plan.embedder_for(pins, text) if text.strip() else None
        if chosen is not None:
            vector, model = (await asyncio.to_thread(chosen[0].embed, [text]))[0], chosen[1]
        return await self._run(
            calls.search_snapshot(group, name, text, embedding=vector, embedding_model=model, k=k)
        )

    def usage(self) -> dict[MeterKey, Totals]:
        return self._plan.usage()
