"""`vera source add` refuses what the worker would refuse at ingest, and an ingest's failure names
the source by its name (issue 29)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pg_tests.support.cli import one_line_error, run_vera, tenant_key, vera_env
from pg_tests.support.databases import Database


@pytest.fixture
def cli_db(make_database) -> Database:
    database: Database = make_database(template="template0")
    return database


def test_source_add_refuses_a_folder_the_embedded_worker_would_refuse(
    cli_db: Database, tmp_path: Path
) -> None:
    allowed, elsewhere = tmp_path / "allowed", tmp_path / "elsewhere"
    allowed.mkdir()
    elsewhere.mkdir()
    (tmp_path / "notes.md").write_text("# A file\n")
    # the organisation may read the whole temporary directory; this install's worker only `allowed`
    env = vera_env(cli_db.server, cli_db.name)
    env["VERA_API_KEY"] = tenant_key(env)
    env["VERA_WORKER__SOURCE_ROOTS"] = json.dumps([str(allowed)])
    line = one_line_error(run_vera(["source", "add", "x", str(elsewhere), "--tier", "2"], env))
    assert "outside the folders the worker may read (VERA_WORKER__SOURCE_ROOTS" in line
    line = one_line_error(run_vera(["source", "add", "x", str(tmp_path / "notes.md"), "--tier", "2"], env))
    assert "is not a folder: it is a file" in line
    line = one_line_error(run_vera(["source", "add", "x", str(tmp_path / "gone"), "--tier", "2"], env))
    assert "is not a folder: it does not exist" in line
    assert "no sources" in run_vera(["source", "list"], env).output
    added = run_vera(["source", "add", "x", str(allowed), "--tier", "2"], env)
    assert added.exit_code == 0, added.output


def test_an_ingest_failure_names_the_source_by_name(cli_db: Database, tmp_path: Path) -> None:
    folder = tmp_path / "vanishing"
    folder.mkdir()
    env = vera_env(cli_db.server, cli_db.name) | {"VERA_EMBEDDER__PROVIDER": "deterministic"}
    env["VERA_API_KEY"] = tenant_key(env)
    assert run_vera(["source", "add", "vanishing", str(folder), "--tier", "2"], env).exit_code == 0
    folder.rmdir()
    line = one_line_error(run_vera(["ingest", "--source", "vanishing"], env))
    assert line == (
        f"vera: error: ingestion of source 'vanishing' failed: folder {folder} does not exist or is not a folder"
    )
