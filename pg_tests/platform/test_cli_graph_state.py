"""`vera db status` says which graph the facts are projected into, or that none is (docs/graph.md,
"Which graph, and when"): no graph is a visible state, not a silent default."""

from __future__ import annotations

import json
import shutil

import pytest

from pg_tests.support.cli import run_vera, vera_env
from pg_tests.support.databases import Database
from vera_worker.entrypoints.graph_wiring import DEMO_GRAPH_FOLDER
from vera_worker.graph.servers.falkordb import CONFIG_FILE, EmbeddedFalkorDB


@pytest.fixture
def empty_db(make_database) -> Database:
    database: Database = make_database(template="template0")
    return database


def test_status_says_no_graph_is_configured(empty_db: Database) -> None:
    env = vera_env(empty_db.server, empty_db.name)  # VERA_MEMORY__GRAPH_BACKEND=none
    status = run_vera(["db", "status"], env)
    assert status.exit_code == 0, status.output
    assert (
        "graph:    none configured: facts are not projected (set VERA_MEMORY__GRAPH_BACKEND" in status.output
    )
    as_json = json.loads(run_vera(["db", "status", "--json"], env).output)
    assert as_json["graph"] == {"backend": "none", "url": None, "source": "settings"}


def test_status_names_the_configured_graph_without_its_password(empty_db: Database) -> None:
    env = vera_env(empty_db.server, empty_db.name) | {
        "VERA_MEMORY__GRAPH_BACKEND": "neo4j",
        "VERA_MEMORY__GRAPH_URL": "bolt://vera:s3cret@127.0.0.1:1",
    }
    status = run_vera(["db", "status"], env)
    assert status.exit_code == 0, status.output
    assert "graph:    neo4j at bolt://vera:***@127.0.0.1:1" in status.output
    assert "s3cret" not in status.output  # and nothing was connected to: port 1 answers nobody
    as_json = json.loads(run_vera(["db", "status", "--json"], env).output)
    assert as_json["graph"] == {
        "backend": "neo4j",
        "url": "bolt://vera:***@127.0.0.1:1",
        "source": "settings",
    }


def test_status_shows_the_demo_graph_a_local_install_uses_without_starting_it(empty_db: Database) -> None:
    """Backend not set, a demo's FalkorDB beside the embedded database: the commands use it, and
    status says so (stopped here: it only reads, it does not start it)."""
    env = vera_env(empty_db.server, empty_db.name)
    del env["VERA_MEMORY__GRAPH_BACKEND"]
    folder = empty_db.server.data_dir.absolute().parent / DEMO_GRAPH_FOLDER
    made = not folder.exists()
    try:
        folder.mkdir(exist_ok=True)
        (folder / CONFIG_FILE).touch(exist_ok=True)
        EmbeddedFalkorDB(folder).stop()  # an earlier demo of the session may have left it running
        status = run_vera(["db", "status"], env)
        assert status.exit_code == 0, status.output
        assert (
            f"graph:    falkordb, the demo's in {folder} (stopped, started by the next command"
            in status.output
        )
        assert json.loads(run_vera(["db", "status", "--json"], env).output)["graph"]["source"] == "demo"
    finally:
        if made:
            shutil.rmtree(folder, ignore_errors=True)
