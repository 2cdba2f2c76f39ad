"""The script of `vera db sql`, applied with the server's own psql as a DBA
would (psql -v ON_ERROR_STOP=1 -1 -f), gives the database `vera db migrate`
gives, and running either after the other changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pg_tests.support.catalogs import (
    assert_same,
    bookkeeping,
    everything,
    pre_baseline,
    psql,
    psql_ok,
    queue_objects,
    snapshot,
    write_script,
)
from pg_tests.support.databases import ROOT, Database
from vera_client.adapters.postgres import bundle
from vera_client.adapters.postgres.migrations import MigrationRunner

CURRENT = bundle.migrations(ROOT / "sql")
NEXT = len(CURRENT) + 1


@pytest.fixture
def fresh(make_database) -> Database:
    database: Database = make_database(template="template0")
    return database


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_script(tmp_path_factory.mktemp("script"))


def _state(database: Database) -> tuple[object, ...]:
    return snapshot(database), bookkeeping(database), queue_objects(database)


def test_the_script_gives_what_the_runner_gives_and_twice_changes_nothing(
    make_database, script: Path
) -> None:
    by_runner: Database = make_database(template="template0")
    MigrationRunner(by_runner.admin_dsn).migrate()
    by_script: Database = make_database(template="template0")
    output = psql_ok(by_script, script, one_transaction=True)
    assert "vera: applying 0001_baseline.sql" in output and "installing the job queue" in output

    expected_catalog, expected_rows, expected_queue = _state(by_runner)
    catalog, rows, queue = _state(by_script)
    assert_same(expected_catalog, catalog, "script vs runner")
    assert rows == expected_rows and rows[0] == [(m.version, m.name, m.sha256) for m in CURRENT]
    assert queue == expected_queue and queue

    before = everything(by_script)
    again = psql_ok(by_script, script, one_transaction=True)
    assert "applying" not in again and "installing" not in again
    assert _state(by_script) == (catalog, rows, queue) and everything(by_script) == before


def test_the_script_on_a_database_the_runner_migrated_changes_nothing(fresh: Database, script: Path) -> None:
    MigrationRunner(fresh.admin_dsn).migrate()
    before, objects = _state(fresh), everything(fresh)
    assert "applying" not in psql_ok(fresh, script, one_transaction=True)
    assert _state(fresh) == before and everything(fresh) == objects


def test_the_runner_on_a_database_the_script_built_changes_nothing(fresh: Database, script: Path) -> None:
    psql_ok(fresh, script, one_transaction=True)
    before, objects = _state(fresh), everything(fresh)
    assert MigrationRunner(fresh.admin_dsn).migrate() == []
    assert _state(fresh) == before and everything(fresh) == objects


def test_the_script_applies_only_the_pending_migrations(fresh: Database, tmp_path: Path) -> None:
    MigrationRunner(fresh.admin_dsn).migrate()
    root = tmp_path / "sql"
    shutil.copytree(ROOT / "sql", root)
    (root / "migrations" / f"{NEXT:04d}_notes.sql").write_text(
        "-- a later migration\nset role vera_owner;\ncreate table vera.notes (id int);\nreset role;\n"
    )
    output = psql_ok(fresh, write_script(tmp_path, root), one_transaction=True)
    assert output.splitlines() == [f"vera: applying {NEXT:04d}_notes.sql"]
    assert [row[0] for row in bookkeeping(fresh)[0]] == list(range(1, NEXT + 1))
    assert MigrationRunner(fresh.admin_dsn, sql_root=root).migrate() == []


def test_the_script_outside_one_transaction_is_refused_before_anything(fresh: Database, script: Path) -> None:
    before = everything(fresh)
    result = psql(fresh, script)  # no -1
    assert result.returncode == 3
    assert result.stderr.strip().endswith(
        "ERROR:  run this script in one transaction: psql -v ON_ERROR_STOP=1 -1 -f FILE"
    )
    assert len(result.stderr.strip().splitlines()) == 1
    assert everything(fresh) == before


def test_the_script_refuses_a_pre_baseline_database_in_one_line(fresh: Database, script: Path) -> None:
    pre_baseline(fresh)
    before = everything(fresh)
    result = psql(fresh, script, one_transaction=True)
    assert result.returncode == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "ERROR:  this database was built by VERA's pre-baseline migrations" in lines[0]
    assert "(drop the database and create it empty), then run vera db migrate" in lines[0]
    assert everything(fresh) == before
