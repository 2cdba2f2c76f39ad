"""The typed Python client: one method per operation of the SQL API, frozen
dataclasses back, VeraErrors (chosen by SQLSTATE, in one place) on failure.

    with VeraClient.from_settings(api_key) as vera:
        for hit in vera.search("Which cluster does billing-api run on?"):
            print(hit.rank, hit.score, hit.text, hit.citation["source"])

Each call is one transaction on a pooled connection, authenticated as the
client's caller (authentication is per transaction in VERA). A server that
serves many callers holds one client and takes a cheap view per request:

    vera = VeraClient(dsn, providers=providers)          # no caller of its own
    vera.as_caller(Principal(principal_id)).search(...)   # the gateway vouches for it

Views share the pool, the providers and the caches. The operations are
written once (core.py); VeraClient drives them with blocking I/O and
AsyncVeraClient with asyncio, so both faces have the same methods.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from vera_client.adapters.postgres.calls import Call
from vera_client.adapters.postgres.executor import AsyncExecutor, Executor, SqlObserver
from vera_client.adapters.providers.metering import MeterKey, Totals
from vera_client.bootstrap import Providers, build_database, build_providers
from vera_client.config import PoolSettings, VeraSettings
from vera_client.core import Operations, Plan, Shared, Work
from vera_client.domain.callers import ApiKey, Caller
from vera_client.domain.errors import ConfigurationError

T = TypeVar("T")
P = ParamSpec("P")


def as_caller(caller: Caller | str | None) -> Caller | None:
    """A caller from what a user passes: an API key string is an ApiKey."""
    return ApiKey(caller) if isinstance(caller, str) else caller


def _caller_or_configured(caller: Caller | str | None, settings: VeraSettings) -> Caller | str | None:
    """The caller passed, else the API key the settings carry (VERA_API_KEY), else none."""
    if caller is None and settings.api_key is not None and settings.api_key.get_secret_value():
        return settings.api_key.get_secret_value()
    return caller


def _operations(shared: Shared, caller: Caller | None) -> Operations:
    if caller is None:
        raise ConfigurationError(
            "this client has no caller: pass an API key, set VERA_API_KEY (from_settings reads it), "
            "or use as_caller(...)"
        )
    return Operations(shared, caller)


def _blocking(
    plan: Callable[Concatenate[Operations, P], Plan[T]],
) -> Callable[Concatenate[VeraClient, P], T]:
    """An operation as a method of VeraClient."""

    @functools.wraps(plan)
    def method(self: VeraClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._drive(plan(_operations(self._shared, self.caller), *args, **kwargs))

    return method


def _coroutine(
    plan: Callable[Concatenate[Operations, P], Plan[T]],
) -> Callable[Concatenate[AsyncVeraClient, P], Coroutine[Any, Any, T]]:
    """An operation as a coroutine method of AsyncVeraClient."""

    @functools.wraps(plan)
    async def method(self: AsyncVeraClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._drive(plan(_operations(self._shared, self.caller), *args, **kwargs))

    return method


class VeraClient:
    """Synchronous client over a psycopg connection pool. Thread-safe; close it (or use `with`)."""

    def __init__(
        self,
        dsn: str,
        caller: Caller | str | None = None,
        *,
        providers: Providers | None = None,
        pool: PoolSettings | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        self.caller = as_caller(caller)
        self._executor = Executor.connect(dsn, pool=pool, connect_timeout=connect_timeout)
        self._shared = Shared(providers)
        self._owns_pool = True

    @classmethod
    def from_settings(
        cls, caller: Caller | str | None = None, settings: VeraSettings | None = None
    ) -> VeraClient:
        """A client as the environment (and a .env file) configures it: VERA_DB__*, VERA_EMBEDDER__*,
        VERA_RERANKER__*, ...; without a caller, the key in VERA_API_KEY (if set)."""
        settings = settings or VeraSettings()
        return cls(
            build_database(settings).app_dsn,
            _caller_or_configured(caller, settings),
            providers=build_providers(settings),
            pool=settings.pool,
            connect_timeout=settings.db.connect_timeout,
        )

    def as_caller(self, caller: Caller | str) -> VeraClient:
        """A view acting as caller, sharing this client's pool, providers and caches."""
        view = object.__new__(VeraClient)
        view.caller = as_caller(caller)
        view._executor, view._shared, view._owns_pool = self._executor, self._shared, False
        return view

    @property
    def executor(self) -> Executor:
        """The executor under this client (its pool and login), for adapters that run calls of
        their own through the same pool."""
        return self._executor

    def close(self) -> None:
        """Close the pool (a view leaves its client's pool open)."""
        if self._owns_pool:
            self._executor.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _drive(self, plan: Plan[T]) -> T:
        assert self.caller is not None  # _operations checked it
        try:
            step = next(plan)
            while True:
                value = self._executor.run(self.caller, step) if isinstance(step, Call) else step.run()
                step = plan.send(value)
        except StopIteration as finished:
            return finished.value  # type: ignore[no-any-return]

    def usage(self) -> dict[MeterKey, Totals]:
        """What calls to hosted providers used and cost (estimated) since the client started."""
        return self._shared.usage()

    whoami = _blocking(Operations.whoami)
    create_group = _blocking(Operations.create_group)
    create_principal = _blocking(Operations.create_principal)
    set_member_role = _blocking(Operations.set_member_role)
    remove_member = _blocking(Operations.remove_member)
    create_api_key = _blocking(Operations.create_api_key)
    revoke_api_key = _blocking(Operations.revoke_api_key)
    list_api_keys = _blocking(Operations.list_api_keys)
    setting = _blocking(Operations.setting)
    set_setting = _blocking(Operations.set_setting)
    administered_organisations = _blocking(Operations.administered_organisations)
    default_group = _blocking(Operations.default_group)
    register_source = _blocking(Operations.register_source)
    register_folder = _blocking(Operations.register_folder)
    list_sources = _blocking(Operations.list_sources)
    find_source = _blocking(Operations.find_source)
    source_for_path = _blocking(Operations.source_for_path)
    request_ingest = _blocking(Operations.request_ingest)
    request_extraction = _blocking(Operations.request_extraction)
    read_time_scopes = _blocking(Operations.read_time_scopes)
    record_episode = _blocking(Operations.record_episode)
    store_chunks = _blocking(Operations.store_chunks)
    publish = _blocking(Operations.publish)
    declare_predicate = _blocking(Operations.declare_predicate)
    pending_reviews = _blocking(Operations.pending_reviews)
    review = _blocking(Operations.review)
    pending_passages = _blocking(Operations.pending_passages)
    review_passage = _blocking(Operations.review_passage)
    retract_episode = _blocking(Operations.retract_episode)
    erase_episode = _blocking(Operations.erase_episode)
    retract_source = _blocking(Operations.retract_source)
    erase_source = _blocking(Operations.erase_source)
    complete_cleanup = _blocking(Operations.complete_cleanup)
    search = _blocking(Operations.search)
    feedback = _blocking(Operations.feedback)
    search_version = _blocking(Operations.search_version)
    calibrate = _blocking(Operations.calibrate)
    active_weights = _blocking(Operations.active_weights)
    reset_weights = _blocking(Operations.reset_weights)
    create_snapshot = _blocking(Operations.create_snapshot)
    list_snapshots = _blocking(Operations.list_snapshots)
    drop_snapshot = _blocking(Operations.drop_snapshot)
    search_snapshot = _blocking(Operations.search_snapshot)
    get_fact = _blocking(Operations.get_fact)
    get_evidence = _blocking(Operations.get_evidence)
    explain_fact = _blocking(Operations.explain_fact)
    get_entity = _blocking(Operations.get_entity)
    get_source = _blocking(Operations.get_source)
    explore = _blocking(Operations.explore)
    explore_graph = _blocking(Operations.explore_graph)
    changes = _blocking(Operations.changes)
    conflicts = _blocking(Operations.conflicts)
    propose = _blocking(Operations.propose)
    retract_proposal = _blocking(Operations.retract_proposal)
    list_proposals = _blocking(Operations.list_proposals)
    get_context = _blocking(Operations.get_context)
    get_context_pack = _blocking(Operations.get_context_pack)
    pack_feedback = _blocking(Operations.pack_feedback)
    remember = _blocking(Operations.remember)


class AsyncVeraClient:
    """The same client for asyncio: `async with await AsyncVeraClient.connect(...) as vera`."""

    def __init__(
        self, executor: AsyncExecutor, caller: Caller | str | None, providers: Providers | None
    ) -> None:
        self.caller = as_caller(caller)
        self._executor = executor
        self._shared = Shared(providers)
        self._owns_pool = True

    @classmethod
    async def connect(
        cls,
        dsn: str,
        caller: Caller | str | None = None,
        *,
        providers: Providers | None = None,
        pool: PoolSettings | None = None,
        connect_timeout: float = 10.0,
        observe: SqlObserver | None = None,
    ) -> AsyncVeraClient:
        """A client on a new pool; `observe` wraps each SQL call (the MCP server's tracing)."""
        executor = await AsyncExecutor.connect(
            dsn, pool=pool, connect_timeout=connect_timeout, observe=observe
        )
        return cls(executor, caller, providers)

    @classmethod
    async def from_settings(
        cls, caller: Caller | str | None = None, settings: VeraSettings | None = None
    ) -> AsyncVeraClient:
        """A client as the environment (and a .env file) configures it, as VeraClient.from_settings."""
        settings = settings or VeraSettings()
        return await cls.connect(
            build_database(settings).app_dsn,
            _caller_or_configured(caller, settings),
            providers=build_providers(settings),
            pool=settings.pool,
            connect_timeout=settings.db.connect_timeout,
        )

    def as_caller(self, caller: Caller | str) -> AsyncVeraClient:
        """A view acting as caller, sharing this client's pool, providers and caches."""
        view = object.__new__(AsyncVeraClient)
        view.caller = as_caller(caller)
        view._executor, view._shared, view._owns_pool = self._executor, self._shared, False
        return view

    @property
    def executor(self) -> AsyncExecutor:
        """The executor under this client (its pool and login): for adapters that run calls of
        their own through the same pool, such as the MCP server's OIDC identity directory."""
        return self._executor

    async def close(self) -> None:
        """Close the pool (a view leaves its client's pool open)."""
        if self._owns_pool:
            await self._executor.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _drive(self, plan: Plan[T]) -> T:
        assert self.caller is not None
        try:
            step = next(plan)
            while True:
                if isinstance(step, Call):
                    value = await self._executor.run(self.caller, step)
                else:
                    assert isinstance(step, Work)
                    value = await asyncio.to_thread(step.run)
                step = plan.send(value)
        except StopIteration as finished:
            return finished.value  # type: ignore[no-any-return]

    async def usage(self) -> dict[MeterKey, Totals]:
        """What calls to hosted providers used and cost (estimated) since the client started (a
        coroutine like every other method of this face, though it only reads counters)."""
        return self._shared.usage()

    whoami = _coroutine(Operations.whoami)
    create_group = _coroutine(Operations.create_group)
    create_principal = _coroutine(Operations.create_principal)
    set_member_role = _coroutine(Operations.set_member_role)
    remove_member = _coroutine(Operations.remove_member)
    create_api_key = _coroutine(Operations.create_api_key)
    revoke_api_key = _coroutine(Operations.revoke_api_key)
    list_api_keys = _coroutine(Operations.list_api_keys)
    setting = _coroutine(Operations.setting)
    set_setting = _coroutine(Operations.set_setting)
    administered_organisations = _coroutine(Operations.administered_organisations)
    default_group = _coroutine(Operations.default_group)
    register_source = _coroutine(Operations.register_source)
    register_folder = _coroutine(Operations.register_folder)
    list_sources = _coroutine(Operations.list_sources)
    find_source = _coroutine(Operations.find_source)
    source_for_path = _coroutine(Operations.source_for_path)
    request_ingest = _coroutine(Operations.request_ingest)
    request_extraction = _coroutine(Operations.request_extraction)
    read_time_scopes = _coroutine(Operations.read_time_scopes)
    record_episode = _coroutine(Operations.record_episode)
    store_chunks = _coroutine(Operations.store_chunks)
    publish = _coroutine(Operations.publish)
    declare_predicate = _coroutine(Operations.declare_predicate)
    pending_reviews = _coroutine(Operations.pending_reviews)
    review = _coroutine(Operations.review)
    pending_passages = _coroutine(Operations.pending_passages)
    review_passage = _coroutine(Operations.review_passage)
    retract_episode = _coroutine(Operations.retract_episode)
    erase_episode = _coroutine(Operations.erase_episode)
    retract_source = _coroutine(Operations.retract_source)
    erase_source = _coroutine(Operations.erase_source)
    complete_cleanup = _coroutine(Operations.complete_cleanup)
    search = _coroutine(Operations.search)
    feedback = _coroutine(Operations.feedback)
    search_version = _coroutine(Operations.search_version)
    calibrate = _coroutine(Operations.calibrate)
    active_weights = _coroutine(Operations.active_weights)
    reset_weights = _coroutine(Operations.reset_weights)
    create_snapshot = _coroutine(Operations.create_snapshot)
    list_snapshots = _coroutine(Operations.list_snapshots)
    drop_snapshot = _coroutine(Operations.drop_snapshot)
    search_snapshot = _coroutine(Operations.search_snapshot)
    get_fact = _coroutine(Operations.get_fact)
    get_evidence = _coroutine(Operations.get_evidence)
    explain_fact = _coroutine(Operations.explain_fact)
    get_entity = _coroutine(Operations.get_entity)
    get_source = _coroutine(Operations.get_source)
    explore = _coroutine(Operations.explore)
    explore_graph = _coroutine(Operations.explore_graph)
    changes = _coroutine(Operations.changes)
    conflicts = _coroutine(Operations.conflicts)
    propose = _coroutine(Operations.propose)
    retract_proposal = _coroutine(Operations.retract_proposal)
    list_proposals = _coroutine(Operations.list_proposals)
    get_context = _coroutine(Operations.get_context)
    get_context_pack = _coroutine(Operations.get_context_pack)
    pack_feedback = _coroutine(Operations.pack_feedback)
    remember = _coroutine(Operations.remember)
