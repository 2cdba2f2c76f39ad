"""The test server and its databases: what conftest.py's fixtures, seed.py and
the test modules share.

One embedded PostgreSQL 18 per checkout, with its data outside the checkout.
Tests get clones of a migrated template. The server is disposable, and what
keeps its clones cheap was measured on a 2-core machine shared with other
test runs (figures per clone, quiet / busy machine):

- Its data lives in memory (/dev/shm) when there is room. On the disk, a
  clone's ~440 files cost 0.5-1 s each to delete once the kernel had
  written them back (about 30 s after they were written) and the disk was
  busy, and a clone made just after another was dropped took 100-300 ms
  instead of 35; in memory a clone takes about 15 ms and a drop 10.
- It runs without durability (fsync, full_page_writes and synchronous_commit
  off: PostgreSQL's "non-durable settings" for throwaway clusters). DROP
  DATABASE forces a checkpoint; with fsync on, the first one after the tests
  flushed every file the session had written, 1.7 s on a quiet machine and
  15 s on a busy one.
- A clone is dropped as soon as its module (or test) is done, so that only a
  few exist at a time, and it is made with STRATEGY file_copy, which copies
  the template's files instead of writing all of it to the WAL.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from vera_client.adapters.postgres import provisioning
from vera_client.adapters.postgres.embedded import EmbeddedPostgres
from vera_client.adapters.postgres.migrations import MigrationRunner
from vera_client.domain.deployment import LoginLimits

ROOT = Path(__file__).resolve().parents[2]  # the checkout: pg_tests/support/databases.py
TEMPLATE = "vera_template"
# Per-module clones are named CLONE_PREFIX + 12 hex digits.
CLONE_PREFIX = "t_"
NON_DURABLE = {"fsync": "off", "full_page_writes": "off", "synchronous_commit": "off"}
# Where the test server's data goes: memory when this much is free there, else the disk.
MEMORY = Path("/dev/shm")  # noqa: S108
DISK = Path("/tmp")  # noqa: S108
SCRATCH_MIN_FREE = 1 << 30
# The tests' SQL application: a login of its own (vera_app cannot log in), made
# by the provisioning function like any application's, with roomy limits.
APP_LOGIN = "vera_app_test"
APP_LOGIN_LIMITS = LoginLimits(
    connection_limit=50, statement_timeout="2min", idle_in_transaction_timeout="10min"
)


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

    def connect(self, role: str = APP_LOGIN, *, autocommit: bool = False) -> psycopg.Connection:
        return psycopg.connect(self.dsn(role), autocommit=autocommit)


def _scratch_root() -> Path:
    """Memory (the /dev/shm tmpfs) when it has room for the test server, else /tmp.

    The server's OS user can traverse both when we run as root. A container's
    /dev/shm is often 64 MB, hence the check.
    """
    try:
        shm = os.statvfs(MEMORY)
    except OSError:
        return DISK
    if shm.f_bavail * shm.f_frsize >= SCRATCH_MIN_FREE and os.access(MEMORY, os.W_OK | os.X_OK):
        return MEMORY
    return DISK


def checkout_server() -> EmbeddedPostgres:
    """This checkout's test server (not started); VERA_TEST_DATA_DIR moves its data."""
    tag = hashlib.sha256(str(ROOT).encode()).hexdigest()
    # outside the checkout, so that a fresh clone of the repository gets its own
    default = _scratch_root() / f"vera-pg-tests-{os.getuid()}-{tag[:10]}" / "postgres"
    data_dir = Path(os.environ.get("VERA_TEST_DATA_DIR", default))
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    data_dir.parent.chmod(0o755)
    port = 54400 + int(tag[:4], 16) % 500
    return EmbeddedPostgres(data_dir=data_dir, port=port, database="postgres")


def _admin(server: EmbeddedPostgres) -> psycopg.Connection:
    return psycopg.connect(server.admin_url("postgres"), autocommit=True)


def _settings(server: EmbeddedPostgres) -> dict[str, str]:
    with _admin(server) as conn:
        rows = conn.execute(
            "select name, setting from pg_settings where name = any(%s)", (list(NON_DURABLE),)
        ).fetchall()
    return dict(rows)


def run_without_durability(server: EmbeddedPostgres, *, timeout: float = 10) -> None:
    """Persist the non-durable settings in the test cluster and reload it.

    All three take effect on reload; a new backend sees them once the
    postmaster has re-read the configuration, which is what we wait for.
    """
    if _settings(server) == NON_DURABLE:
        return
    with _admin(server) as conn:
        for name, value in NON_DURABLE.items():
            conn.execute(sql.SQL("alter system set {} = {}").format(sql.Identifier(name), sql.Literal(value)))
        conn.execute("select pg_reload_conf()")
    deadline = time.monotonic() + timeout
    while (current := _settings(server)) != NON_DURABLE:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the test server did not take {NON_DURABLE} (has {current})")
        time.sleep(0.05)


def create_database(server: EmbeddedPostgres, template: str, name: str | None = None) -> Database:
    """A new database copied from `template` (replacing one of the same name)."""
    name = name or f"{CLONE_PREFIX}{uuid.uuid4().hex[:12]}"
    with _admin(server) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("create database {} template {} strategy file_copy").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    return Database(server=server, name=name)


def drop_databases(server: EmbeddedPostgres, names: list[str]) -> None:
    with _admin(server) as conn:
        for name in names:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def leftover_clones(server: EmbeddedPostgres) -> list[str]:
    """Clones that an earlier session did not drop (it was killed, say)."""
    with _admin(server) as conn:
        rows = conn.execute(
            "select datname from pg_database where datname ~ %s order by datname",
            (f"^{CLONE_PREFIX}[0-9a-f]{{12}}$",),
        ).fetchall()
    return [row[0] for row in rows]


# A test-only login: the application role's privileges (it calls the SQL API
# exactly as an application does) plus SELECT on the tables, which
# applications do not have, so that a test can look at the rows its calls
# wrote in its own open transaction. Row-level security still binds it.
INSPECTOR = "vera_test_inspector"


def _add_inspector(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        exists = conn.execute("select from pg_roles where rolname = %s", (INSPECTOR,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("create role {} login").format(sql.Identifier(INSPECTOR)))
        conn.execute(sql.SQL("grant vera_app to {}").format(sql.Identifier(INSPECTOR)))
        conn.execute(
            sql.SQL("grant select on all tables in schema vera to {}").format(sql.Identifier(INSPECTOR))
        )


def build_template(server: EmbeddedPostgres) -> str:
    """The schema built once through the migration runner, as TEMPLATE, the
    tests' application login and the inspector (roles belong to the cluster:
    every clone has them)."""
    create_database(server, "template1", TEMPLATE)
    MigrationRunner(server.admin_url(TEMPLATE)).migrate()
    provisioning.create_app_login(server.admin_url(TEMPLATE), APP_LOGIN, APP_LOGIN_LIMITS, exists_ok=True)
    _add_inspector(server.admin_url(TEMPLATE))
    return TEMPLATE


def grant_database(database: Database) -> None:
    """What a migrate and the logins' creation grant on a database, for a copy of the template
    (privileges on the database and its settings belong to the database, not to what it is
    copied from): CONNECT for the worker, the gateway, the tests' login and the inspector alone,
    no TEMPORARY, and the tests' login's limits."""
    with database.admin() as conn:
        conn.execute((ROOT / "sql" / "rls" / "030_database.sql").read_text())  # type: ignore[call-overload]
        conn.execute(
            sql.SQL("grant connect on database {} to {}").format(
                sql.Identifier(database.name), sql.Identifier(INSPECTOR)
            )
        )
    provisioning.create_app_login(database.admin_dsn, APP_LOGIN, APP_LOGIN_LIMITS, exists_ok=True)


class Clones:
    """The databases this session made, each dropped when its user is done."""

    def __init__(self, server: EmbeddedPostgres, template: str) -> None:
        self.server = server
        self.template = template
        self._live: list[str] = []

    def make(self, template: str | None = None) -> Database:
        """A new database copied from `template`, the migrated one by default."""
        database = create_database(self.server, template or self.template)
        self._live.append(database.name)
        if template in (None, self.template):
            grant_database(database)
        return database

    def drop(self, database: Database) -> None:
        drop_databases(self.server, [database.name])
        self._live.remove(database.name)

    def drop_all(self) -> None:
        drop_databases(self.server, self._live)
        self._live.clear()
