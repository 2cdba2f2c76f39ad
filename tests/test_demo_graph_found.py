"""The demo's memory stays one memory: the commands after `vera demo` find the FalkorDB it
started beside the embedded database without settings (explicit settings win), and
`vera db stop` stops it too, saying so (issue 29, items 1 and 2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from vera_cli.main import main
from vera_client.bootstrap import build_database
from vera_client.config import read_settings
from vera_worker.entrypoints.graph_wiring import graph_memory, graph_store
from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB


@pytest.fixture
def demo_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[EmbeddedFalkorDB, str]]:
    """An embedded database's data folder with the demo's FalkorDB running beside it."""
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    for name in ("MEMORY__GRAPH_BACKEND", "MEMORY__GRAPH_URL", "DB__DSN", "DB__ADMIN_DSN"):
        monkeypatch.delenv(f"VERA_{name}", raising=False)
    monkeypatch.setenv("VERA_DB__DATA_DIR", str(tmp_path / "postgres"))
    server = EmbeddedFalkorDB(tmp_path / "falkordb")
    url = server.start()
    try:
        yield server, url
    finally:
        server.stop()


def test_a_command_after_the_demo_finds_its_graph(demo_graph: tuple[EmbeddedFalkorDB, str]) -> None:
    _, url = demo_graph
    database = build_database(read_settings())
    store = graph_store(database)
    assert store is not None, "the demo's FalkorDB beside the database was not found"
    try:
        assert store.backend == "falkordb"
    finally:
        store.close()
    assert graph_memory(database).graph_url == url


def test_explicit_settings_win(
    demo_graph: tuple[EmbeddedFalkorDB, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERA_MEMORY__GRAPH_BACKEND", "none")
    assert graph_store(build_database(read_settings())) is None


def test_an_external_database_finds_no_graph_beside_it(
    demo_graph: tuple[EmbeddedFalkorDB, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERA_DB__DSN", "postgresql://app@db.invalid/vera")
    assert graph_store(build_database(read_settings())) is None


def test_db_stop_stops_the_demo_graph_and_says_so(demo_graph: tuple[EmbeddedFalkorDB, str]) -> None:
    server, _ = demo_graph
    result = CliRunner().invoke(main, ["db", "stop"])
    assert result.exit_code == 0, result.output
    assert not server.status().running, "the demo's FalkorDB still runs after `vera db stop`"
    stopped = [line for line in result.output.splitlines() if "FalkorDB" in line]
    assert len(stopped) == 1 and "stopped" in stopped[0], result.output
