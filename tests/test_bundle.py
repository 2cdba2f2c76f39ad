"""The SQL bundle as files: numbering, released (frozen) checksums, named queries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vera_client.adapters.postgres import bundle
from vera_client.adapters.postgres.queries import migration_query
from vera_client.api.queries import all_queries, named_queries, query
from vera_client.domain.errors import MigrationError

ROOT = Path(__file__).resolve().parents[1]


def test_bundle_is_found_in_the_checkout() -> None:
    assert bundle.sql_root() == ROOT / "sql"
    names = [path.parent.name for path in bundle.declarative_files()]
    assert names == sorted(names, key=bundle.DECLARATIVE_PARTS.index)


def test_released_migrations_are_frozen() -> None:
    """A released migration never changes: RELEASED records its checksum.

    Cutting a release lists its new migrations there; editing a listed one
    makes this test fail (put the change in a new migration instead). The
    released ones are the oldest: a release includes every earlier migration.
    """
    listed = bundle.released()
    current = {m.name: m for m in bundle.migrations()}
    assert set(listed) <= set(current), (
        f"RELEASED lists files that do not exist: {set(listed) - set(current)}"
    )
    changed = [name for name, digest in listed.items() if current[name].sha256 != digest]
    assert changed == [], f"released migrations were edited: {changed}"
    assert [m.released for m in current.values()] == sorted(
        (m.released for m in current.values()), reverse=True
    ), "released migrations are a prefix of the numbered ones"


def test_released_list_is_read_in_sha256sum_s_format(tmp_path: Path) -> None:
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "0001_baseline.sql").write_text("-- the baseline\n")
    digest = bundle.file_sha256(tmp_path / "migrations" / "0001_baseline.sql")
    (tmp_path / "migrations" / "RELEASED").write_text(f"# released\n\n{digest}  0001_baseline.sql\n")
    assert bundle.released(tmp_path) == {"0001_baseline.sql": digest}
    assert [m.released for m in bundle.migrations(tmp_path)] == [True]
    (tmp_path / "migrations" / "RELEASED").write_text("0001_baseline.sql\n")
    with pytest.raises(MigrationError, match="RELEASED line 1: expected '<sha256>  <file>'"):
        bundle.released(tmp_path)


def test_a_migration_creates_a_function_only_to_replace_a_signature_it_drops() -> None:
    """Function bodies live in sql/functions, re-applied on every migrate; a
    migration drops a function whose signature changes and nothing else, with
    `if exists`: on a new database no function exists while migrations run."""
    create = re.compile(r"create\s+(?:or\s+replace\s+)?function\s+([\w.]+)", re.IGNORECASE)
    drop = re.compile(r"drop\s+function\s+(if\s+exists\s+)?([\w.]+)", re.IGNORECASE)
    for migration in bundle.migrations():
        text = re.sub(r"--.*", "", migration.path.read_text())  # what it says, not what it runs
        drops = drop.findall(text)
        assert all(if_exists for if_exists, _ in drops), f"{migration.name}: drop function if exists"
        assert set(create.findall(text)) <= {name for _, name in drops}, migration.name


def test_every_named_query_loads() -> None:
    queries = all_queries()
    runner_queries = named_queries(Path(bundle.__file__).with_name("migration_queries.sql"))
    assert "create_tenant" in queries and {"applied_migrations", "record_migration"} <= set(runner_queries)
    assert all(body.strip() for body in [*queries.values(), *runner_queries.values()])
    assert "select current_setting" in migration_query("server_version")
    assert "vera.create_tenant" in query("create_tenant")


def test_the_runner_s_queries_live_apart_from_the_client_s() -> None:
    """api/*.sql are the client's; the migration runner's are in migration_queries.sql."""
    queries = all_queries()
    runner_queries = named_queries(Path(bundle.__file__).with_name("migration_queries.sql"))
    assert set(queries) & set(runner_queries) == set()
    assert not any("vera_meta." in body for body in queries.values())


def test_every_sql_file_starts_with_a_comment_saying_what_it_is() -> None:
    for path in (ROOT / "sql").rglob("*.sql"):
        assert path.read_text().startswith("--"), path
