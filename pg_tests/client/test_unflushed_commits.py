"""Transactions whose commit does not wait for the WAL flush (Executor.transaction(flushed=False),
what a connector run writes its records with): the setting holds for that transaction alone, on
the real PostgreSQL, and a pooled connection's next transaction flushes again."""

from __future__ import annotations

from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World
from vera_client.adapters.postgres.executor import Executor
from vera_client.config import PoolSettings
from vera_client.domain.callers import ApiKey


def _synchronous_commit(tx: object) -> str:
    row = tx.conn.execute("show synchronous_commit").fetchone()  # type: ignore[attr-defined]
    assert row is not None
    return str(row[0])


def test_an_unflushed_transaction_is_the_only_one_that_does_not_wait_for_the_flush(world: World) -> None:
    executor = Executor.connect(world.db.dsn(APP_LOGIN), pool=PoolSettings(min_size=1, max_size=1))
    try:
        with executor.pool.connection() as conn:  # the one pooled connection: flushing, as in production
            conn.execute("set synchronous_commit = on")  # (the test server's default is off)
            conn.commit()
        caller = ApiKey(world.a.owner_key)
        with executor.transaction(caller) as tx:
            assert _synchronous_commit(tx) == "on"
        with executor.transaction(caller, flushed=False) as tx:
            assert _synchronous_commit(tx) == "off"
            connection = tx.conn
        with executor.transaction(caller) as tx:
            assert tx.conn is connection  # the same pooled connection, flushing again
            assert _synchronous_commit(tx) == "on"
    finally:
        executor.close()
