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
written once, by area (vera_client/api/), and both faces inherit them
(core.Operations); VeraClient drives them with blocking I/O and
AsyncVeraClient with asyncio, so both have the same methods.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self, TypeVar

from vera_client.adapters.postgres.executor import AsyncExecutor, Executor, SqlObserver
from vera_client.adapters.providers.metering import MeterKey, Totals
from vera_client.api.operation import Asynchronous, Blocking, Session
from vera_client.bootstrap import Providers, build_database, build_providers
from vera_client.config import PoolSettings, VeraSettings, read_settings
from vera_client.core import Operations, Shared
from vera_client.domain.callers import ApiKey, Caller
from vera_client.domain.errors import ConfigurationError

T = TypeVar("T")


def as_caller(caller: Caller | str | None) -> Caller | None:
    """A caller from what a user passes: an API key string is an ApiKey."""
    return ApiKey(caller) if isinstance(caller, str) else caller


def _caller_or_configured(caller: Caller | str | None, settings: VeraSettings) -> Caller | str | None:
    """The caller passed, else the API key the settings carry (VERA_API_KEY), else none."""
    if caller is None and settings.api_key is not None and settings.api_key.get_secret_value():
        return settings.api_key.get_secret_value()
    return caller


def _session(shared: Shared, caller: Caller | None) -> Session:
    if caller is None:
        raise ConfigurationError(
            "this client has no caller: pass an API key, set VERA_API_KEY (from_settings reads it), "
            "or use as_caller(...)"
        )
    return Session(shared, caller)


class VeraClient(Operations, Blocking):
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
        settings = settings or read_settings()
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

    def _start(self) -> tuple[Session, Executor]:
        return _session(self._shared, self.caller), self._executor

    def usage(self) -> dict[MeterKey, Totals]:
        """What calls to hosted providers used and cost (estimated) since the client started."""
        return self._shared.usage()


class AsyncVeraClient(Operations, Asynchronous):
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
        settings = settings or read_settings()
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

    def _start(self) -> tuple[Session, AsyncExecutor]:
        return _session(self._shared, self.caller), self._executor

    async def usage(self) -> dict[MeterKey, Totals]:
        """What calls to hosted providers used and cost (estimated) since the client started (a
        coroutine like every other method of this face, though it only reads counters)."""
        return self._shared.usage()
