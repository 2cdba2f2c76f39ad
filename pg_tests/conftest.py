"""pg_tests run against a real PostgreSQL 18 (+ pgvector): the embedded
server, started once per session. The schema is built once into a template
database through the migration runner; each test module gets its own clone
(`create database ... template ...`), and tests that only read or roll back
share it."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from pg_tests.seed import World, seed_world
from vera_client.adapters.postgres.embedded import EmbeddedPostgres
from vera_client.adapters.postgres.migrations import MigrationRunner

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = "vera_template"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "pg_tests" in item.path.parts:
            item.add_marker(pytest.mark.pg)


@dataclass(frozen=True)
class Database:
    """A database on the test server and how to connect to it as each role."""

    server: EmbeddedPostgres
    name: str

    @property
    def admin_dsn(self) -> str:
        return self.server.admin_url(self.name)

    def dsn(self, role: str) -> str:
        return f"postgresql://{role}@/{self.name}?host={self.server.socket_dir}&port={self.server.port}"

    def admin(self, *, autocommit: bool = True) -> psycopg.Connection:
        return psycopg.connect(self.admin_dsn, autocommit=autocommit)

    def connect(self, role: str = "vera_app", *, autocommit: bool = False) -> psycopg.Connection:
        return psycopg.connect(self.dsn(role), autocommit=autocommit)


def _data_dir() -> Path:
    # One server per checkout, outside the checkout (a fresh clone gets its own),
    # under /tmp where the server's OS user may traverse when we run as root.
    tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:10]
    return Path(
        os.environ.get("VERA_TEST_DATA_DIR", f"/tmp/vera-pg-tests-{os.getuid()}-{tag}/postgres")  # noqa: S108
    )


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    data_dir = _data_dir()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    data_dir.parent.chmod(0o755)
    port = 54400 + int(hashlib.sha256(str(ROOT).encode()).hexdigest()[:4], 16) % 500
    server = EmbeddedPostgres(data_dir=data_dir, port=port, database="postgres")
    was_running = server.status().running
    server.start()
    yield server
    if not was_running:
        server.stop()


def _recreate(server: EmbeddedPostgres, name: str, template: str | None = None) -> None:
    with psycopg.connect(server.admin_url("postgres"), autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')
        if template is None:
            conn.execute(f'create database "{name}"')
        else:
            conn.execute(f'create database "{name}" template "{template}"')


@pytest.fixture(scope="session")
def template_db(pg_server: EmbeddedPostgres) -> str:
    _recreate(pg_server, TEMPLATE)
    MigrationRunner(pg_server.admin_url(TEMPLATE)).migrate()
    return TEMPLATE


@pytest.fixture(scope="session")
def make_database(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[object]:
    created: list[str] = []

    def make(template: str | None = template_db) -> Database:
        name = f"t_{uuid.uuid4().hex[:12]}"
        _recreate(pg_server, name, template)
        created.append(name)
        return Database(server=pg_server, name=name)

    yield make
    with psycopg.connect(pg_server.admin_url("postgres"), autocommit=True) as conn:
        for name in created:
            conn.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture(scope="module")
def db(make_database: object) -> Database:
    """A clone of the migrated template, shared by the tests of one module."""
    database: Database = make_database()  # type: ignore[operator]
    return database


@pytest.fixture(scope="module")
def world(db: Database) -> World:
    """Two seeded tenants in this module's database, committed."""
    return seed_world(db)
