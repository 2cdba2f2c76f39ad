"""Fixtures of the pg_tests (every folder's): the checkout's test server
(pg_tests/support/databases.py), started once per session; the schema built once
into a template database through the migration runner; a clone of it for each
test module, which the tests that only read or roll back share, and
`make_database` for a test that needs databases of its own. Each is dropped as
soon as its module or test is done. On the module's database: `world` (two
seeded tenants), `owner_a` and `owner_b` (clients as their owners) and
`worker_sql` (the worker's pool)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from tests.standins import standin, standin_server  # noqa: F401 - the stand-in server's fixtures

from pg_tests.support.clients import client_for
from pg_tests.support.databases import (
    Clones,
    Database,
    build_template,
    checkout_server,
    drop_databases,
    leftover_clones,
    run_without_durability,
)
from pg_tests.support.graph_servers import *  # noqa: F403 - the graph servers' fixtures and hooks
from pg_tests.support.ingesting import worker_executor
from pg_tests.support.seed import World, seed_world
from vera_client.adapters.postgres.embedded import EmbeddedPostgres
from vera_client.adapters.postgres.executor import Executor
from vera_client.client import VeraClient
from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "pg_tests" in item.path.parts:
            item.add_marker(pytest.mark.pg)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    """The test server; stopped at the end only if this session started it."""
    server = checkout_server()
    was_running = server.status().running
    server.start()
    run_without_durability(server)
    if not was_running:
        # No other session uses a server we start: drop what a killed one left behind.
        drop_databases(server, leftover_clones(server))
    yield server
    if not was_running:
        # every `vera demo` of the session starts its FalkorDB beside the server's data (and leaves
        # it running, as it leaves PostgreSQL): it goes with the server
        EmbeddedFalkorDB(server.data_dir.parent / "falkordb").stop()
        server.stop()


@pytest.fixture(scope="session")
def template_db(pg_server: EmbeddedPostgres) -> str:
    return build_template(pg_server)


@pytest.fixture(scope="session")
def clones(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Clones]:
    registry = Clones(pg_server, template_db)
    yield registry
    registry.drop_all()


@pytest.fixture
def make_database(clones: Clones) -> Iterator[Callable[..., Database]]:
    """Makes databases for one test, from `template` (the migrated one unless told); dropped after it."""
    made: list[Database] = []

    def make(template: str | None = None) -> Database:
        made.append(clones.make(template))
        return made[-1]

    yield make
    for database in made:
        clones.drop(database)


@pytest.fixture(scope="module")
def db(clones: Clones) -> Iterator[Database]:
    """A clone of the migrated template, shared by the tests of one module."""
    database = clones.make()
    yield database
    clones.drop(database)


@pytest.fixture(scope="module")
def world(db: Database) -> World:
    """Two seeded tenants in this module's database, committed."""
    return seed_world(db)


@pytest.fixture(scope="module")
def owner_a(world: World) -> Iterator[VeraClient]:
    """A client as tenant A's owner (no providers: searches by words alone), shared by the module."""
    with client_for(world, world.a.owner_key) as client:
        yield client


@pytest.fixture(scope="module")
def owner_b(world: World) -> Iterator[VeraClient]:
    """A client as tenant B's owner (no providers), shared by the module."""
    with client_for(world, world.b.owner_key) as client:
        yield client


@pytest.fixture(scope="module")
def worker_sql(db: Database) -> Iterator[Executor]:
    """The worker's pool on this module's database (role vera_worker), which the jobs a test
    builds share, as a `vera worker` process's jobs share one."""
    executor = worker_executor(db)
    yield executor
    executor.close()
