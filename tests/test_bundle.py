"""The SQL bundle as files: numbering, frozen checksums, named queries."""

from __future__ import annotations

from pathlib import Path

from vera_client.adapters.postgres import bundle
from vera_client.adapters.postgres.queries import _load, migration_query, query

ROOT = Path(__file__).resolve().parents[1]


def test_bundle_is_found_in_the_checkout() -> None:
    assert bundle.sql_root() == ROOT / "sql"
    names = [path.parent.name for path in bundle.declarative_files()]
    assert names == sorted(names, key=bundle.DECLARATIVE_PARTS.index)


def test_released_migrations_are_frozen() -> None:
    """A released migration never changes: its checksum is recorded in SHA256SUMS.

    Adding a migration means adding its line; editing a released one means
    this test fails (put the change in a new migration instead).
    """
    recorded = {}
    for line in (ROOT / "sql" / "migrations" / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        recorded[name] = digest
    assert {m.name: m.sha256 for m in bundle.migrations()} == recorded


def test_every_named_query_loads() -> None:
    queries = _load(Path(bundle.__file__).with_name("queries.sql"))
    runner_queries = _load(Path(bundle.__file__).with_name("migration_queries.sql"))
    assert "create_tenant" in queries and {"applied_migrations", "record_migration"} <= set(runner_queries)
    assert all(body.strip() for body in [*queries.values(), *runner_queries.values()])
    assert "select current_setting" in migration_query("server_version")
    assert "vera.create_tenant" in query("create_tenant")


def test_the_runner_s_queries_live_apart_from_the_client_s() -> None:
    """queries.sql is the client's; the migration runner's are in migration_queries.sql."""
    queries = _load(Path(bundle.__file__).with_name("queries.sql"))
    runner_queries = _load(Path(bundle.__file__).with_name("migration_queries.sql"))
    assert set(queries) & set(runner_queries) == set()
    assert not any("vera_meta." in body for body in queries.values())


def test_every_sql_file_starts_with_a_comment_saying_what_it_is() -> None:
    for path in (ROOT / "sql").rglob("*.sql"):
        assert path.read_text().startswith("--"), path
