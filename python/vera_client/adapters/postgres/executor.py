"""The one path from Python to the SQL API.

Every caller of a SQL function (the client, the worker, the CLI, the test
helpers) runs a `Call` (vera_client/api/: which named query, which parameters,
which typed result) through a `Transaction`: one database transaction that first
authenticates its caller (an API key, a principal a trusted role vouches for,
or nobody on an operator connection), so row-level security and roles decide
what it may read and write. Vectors travel in pgvector's binary format.

`Executor` takes connections from a pool and opens such transactions (a
client's pool, or a worker process's one pool shared by its jobs); `begin` opens
one on a connection an operator path holds itself (migrations, provisioning,
logins). `AsyncExecutor` is the same for asyncio. Both are thin: what a call
means lives in its area's module of vera_client/api/, what SQL it runs in the
.sql file beside it, what an error means in errors.py. The executor adapts the
parameters the calls mark (Json, Embedding, Period) to psycopg's and
pgvector's types.

An optional observer (`observe`) wraps every call: given the call's query
name, it returns a context manager entered around the SQL (the MCP server's
tracing opens a span in it). The client library stays free of any tracing
library; with no observer nothing extra runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager, nullcontext
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from pgvector import Vector
from pgvector.psycopg import register_vector, register_vector_async
from psycopg import IsolationLevel
from psycopg.types.json import Jsonb
from psycopg.types.range import Range

from vera_client.adapters.postgres.ancient_times import register_ancient_times
from vera_client.adapters.postgres.errors import connect, redact, translated_errors
from vera_client.api.call import Call, Embedding, Json, Period
from vera_client.api.queries import query
from vera_client.config import PoolSettings
from vera_client.domain.callers import ApiKey, Caller, Operator, Principal
from vera_client.domain.errors import DatabaseUnavailableError

T = TypeVar("T")

# Given a call's query name (never its parameters), a context manager entered around its SQL.
SqlObserver = Callable[[str], AbstractContextManager[object]]


def _observed(observe: SqlObserver | None, call: Call[Any]) -> AbstractContextManager[object]:
    return observe(call.query) if observe is not None else nullcontext()


def _authentication(caller: Caller) -> tuple[str, dict[str, Any]] | None:
    """The statement that makes the current transaction act as caller (None: operator, nothing to do)."""
    if isinstance(caller, ApiKey):
        return query("authenticate"), {"key": caller.key}
    if isinstance(caller, Principal):
        return query("authenticate_principal"), {"principal": caller.principal_id}
    assert isinstance(caller, Operator)
    return None


def _adapted(value: Any) -> Any:
    """A parameter as psycopg sends it: the markers of api/call.py become their types."""
    if isinstance(value, Json):
        return Jsonb(value.value)
    if isinstance(value, Embedding):
        return Vector(list(value.values))
    if isinstance(value, Period):
        return Range(value.start, value.end, "[)")
    if isinstance(value, list) and value and isinstance(value[0], Embedding):
        return [_adapted(item) for item in value]
    return value


def parameters(call: Call[Any]) -> dict[str, Any]:
    """The call's parameters, adapted."""
    return {name: _adapted(value) for name, value in call.params.items()}


def isolation(call: Call[Any]) -> IsolationLevel | None:
    return IsolationLevel.REPEATABLE_READ if call.repeatable_read else None


def _read(call: Call[T], cursor: psycopg.Cursor[Any], rows: list[tuple[Any, ...]]) -> T:
    return call.read([column.name for column in cursor.description or []], rows)


class Transaction:
    """One open, authenticated transaction: run calls in it; they commit together."""

    def __init__(self, conn: psycopg.Connection, observe: SqlObserver | None = None) -> None:
        self.conn = conn
        self.observe = observe

    def run(self, call: Call[T]) -> T:
        with _observed(self.observe, call), translated_errors():
            cursor = self.conn.execute(query(call.query), parameters(call))
            rows = cursor.fetchall() if cursor.description is not None else []
        return _read(call, cursor, rows)


class AsyncTransaction:
    """Transaction for asyncio."""

    def __init__(self, conn: psycopg.AsyncConnection, observe: SqlObserver | None = None) -> None:
        self.conn = conn
        self.observe = observe

    async def run(self, call: Call[T]) -> T:
        with _observed(self.observe, call), translated_errors():
            cursor = await self.conn.execute(query(call.query), parameters(call))
            rows = await cursor.fetchall() if cursor.description is not None else []
        return call.read([column.name for column in cursor.description or []], rows)


@contextmanager
def begin(
    conn: psycopg.Connection,
    caller: Caller,
    isolation: IsolationLevel | None = None,
    observe: SqlObserver | None = None,
    *,
    flushed: bool = True,
) -> Iterator[Transaction]:
    """A transaction on conn acting as caller; committed when the block ends, rolled back on error.

    flushed=False: the commit returns before its WAL reaches the disk (synchronous_commit off for
    this transaction). A crash can then lose it, but only together with everything committed
    after it (the WAL is flushed in order): for writes that a later step confirms and a re-run
    repeats (a connector's records before the page's cursor), never for an answer to a client."""
    with translated_errors():
        if isolation is not None:
            conn.isolation_level = isolation
        try:
            with conn.transaction():
                if not flushed:
                    conn.execute("set local synchronous_commit = off")
                auth = _authentication(caller)
                if auth is not None:
                    conn.execute(*auth)
                yield Transaction(conn, observe)
        finally:
            if isolation is not None and not conn.closed:
                conn.isolation_level = None


@asynccontextmanager
async def begin_async(
    conn: psycopg.AsyncConnection,
    caller: Caller,
    isolation: IsolationLevel | None = None,
    observe: SqlObserver | None = None,
) -> AsyncIterator[AsyncTransaction]:
    with translated_errors():
        if isolation is not None:
            await conn.set_isolation_level(isolation)
        try:
            async with conn.transaction():
                auth = _authentication(caller)
                if auth is not None:
                    await conn.execute(*auth)
                yield AsyncTransaction(conn, observe)
        finally:
            if isolation is not None and not conn.closed:
                await conn.set_isolation_level(None)


def _unavailable(dsn: str, timeout: float) -> DatabaseUnavailableError:
    return DatabaseUnavailableError(f"cannot connect to {redact(dsn)} within {timeout:g}s")


class Executor:
    """Runs calls as a caller, each in a transaction of its own, on pooled connections. Thread-safe."""

    def __init__(self, pool: psycopg_pool.ConnectionPool, *, observe: SqlObserver | None = None) -> None:
        self.pool = pool
        self.observe = observe

    @classmethod
    def connect(
        cls,
        dsn: str,
        *,
        pool: PoolSettings | None = None,
        connect_timeout: float = 10.0,
        observe: SqlObserver | None = None,
        check: bool = False,
    ) -> Executor:
        """A pool on dsn, opened and waited for (DatabaseUnavailableError within connect_timeout).

        check: test each connection as it leaves the pool (an empty query), so that one the
        server ended while it sat idle (a restart) is replaced instead of failing a call: for a
        long-lived process whose connections wait between jobs (the worker)."""
        pool = pool or PoolSettings()
        connections = psycopg_pool.ConnectionPool(
            dsn,
            min_size=pool.min_size,
            max_size=pool.max_size,
            timeout=pool.timeout_seconds,
            kwargs={"connect_timeout": max(1, int(connect_timeout))},
            configure=_configure,
            check=psycopg_pool.ConnectionPool.check_connection if check else None,
            open=True,
        )
        try:
            connections.wait(timeout=connect_timeout)
        except psycopg_pool.PoolTimeout as exc:
            connections.close()
            raise _unavailable(dsn, connect_timeout) from exc
        return cls(connections, observe=observe)

    @contextmanager
    def transaction(
        self, caller: Caller, isolation: IsolationLevel | None = None, *, flushed: bool = True
    ) -> Iterator[Transaction]:
        """Several calls in one transaction as caller (they commit or roll back together);
        flushed=False: see begin."""
        with (
            translated_errors(),
            self.pool.connection() as conn,
            begin(conn, caller, isolation, self.observe, flushed=flushed) as tx,
        ):
            yield tx

    def run(self, caller: Caller, call: Call[T]) -> T:
        with self.transaction(caller, isolation(call)) as tx:
            return tx.run(call)

    def close(self) -> None:
        self.pool.close()


class AsyncExecutor:
    """Executor for asyncio."""

    def __init__(self, pool: psycopg_pool.AsyncConnectionPool, *, observe: SqlObserver | None = None) -> None:
        self.pool = pool
        self.observe = observe

    @classmethod
    async def connect(
        cls,
        dsn: str,
        *,
        pool: PoolSettings | None = None,
        connect_timeout: float = 10.0,
        observe: SqlObserver | None = None,
    ) -> AsyncExecutor:
        pool = pool or PoolSettings()
        connections = psycopg_pool.AsyncConnectionPool(
            dsn,
            min_size=pool.min_size,
            max_size=pool.max_size,
            timeout=pool.timeout_seconds,
            kwargs={"connect_timeout": max(1, int(connect_timeout))},
            configure=_configure_async,
            open=False,
        )
        try:
            await connections.open(wait=True, timeout=connect_timeout)
        except psycopg_pool.PoolTimeout as exc:
            await connections.close()
            raise _unavailable(dsn, connect_timeout) from exc
        return cls(connections, observe=observe)

    @asynccontextmanager
    async def transaction(
        self, caller: Caller, isolation: IsolationLevel | None = None
    ) -> AsyncIterator[AsyncTransaction]:
        with translated_errors():
            async with (
                self.pool.connection() as conn,
                begin_async(conn, caller, isolation, self.observe) as tx,
            ):
                yield tx

    async def run(self, caller: Caller, call: Call[T]) -> T:
        async with self.transaction(caller, isolation(call)) as tx:
            return await tx.run(call)

    async def close(self) -> None:
        await self.pool.close()


def check_reachable(dsn: str, *, connect_timeout: int = 10) -> None:
    """DatabaseUnavailableError, in one line naming the cause, unless one plain connection to dsn
    opens: asked before a pool is built on dsn, which would retry and log each failed attempt
    until its timeout and then say only that it timed out."""
    connect(dsn, connect_timeout=connect_timeout).close()


def _configure(conn: psycopg.Connection) -> None:
    """Each new connection: vectors in binary, BC times readable (ancient_times.py)."""
    register_vector(conn)
    register_ancient_times(conn)


async def _configure_async(conn: psycopg.AsyncConnection) -> None:
    await register_vector_async(conn)
    register_ancient_times(conn)


def prepare(conn: psycopg.Connection) -> psycopg.Connection:
    """Make a connection opened outside a pool ready for calls (vectors in binary, BC times)."""
    with translated_errors():
        _configure(conn)
    return conn
