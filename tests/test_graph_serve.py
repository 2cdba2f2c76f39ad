"""`vera graph serve --neo4j` (issue 29): the Neo4j the tests use, for a local user. Its wiring
(what it prints, Ctrl-C stops what it started and leaves what it found running) with a stand-in
launcher, and its one line when Java or Maven is missing. pg_tests/graph/test_graph_servers.py
runs the command against the session's real Neo4j."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from vera_cli.commands import graph as graph_command
from vera_cli.main import main
from vera_worker.graph.servers import neo4j
from vera_worker.graph.servers.local import GraphServerStatus


class StandinLauncher:
    """Neo4jLauncher's face: start, status, stop, log_file, data_dir."""

    made: ClassVar[list[StandinLauncher]] = []
    running_before: ClassVar[bool] = False

    def __init__(self, data_dir: Path, port: int | None, **options: Any) -> None:
        self.data_dir, self.port, self.options = data_dir, port, options
        self.log_file = data_dir / "neo4j-launcher.log"
        self.started = self.stopped = False
        self.watched = 0
        StandinLauncher.made.append(self)

    def status(self) -> GraphServerStatus:
        if self.started:  # `serve` watches it: the user presses Ctrl-C at the first look
            self.watched += 1
            raise KeyboardInterrupt
        return GraphServerStatus(running=self.running_before, data_dir=self.data_dir, log_file=self.log_file)

    def start(self) -> str:
        self.started = True
        return f"bolt://127.0.0.1:{self.port}"

    def stop(self) -> GraphServerStatus:
        self.stopped = True
        return GraphServerStatus(running=False, data_dir=self.data_dir, log_file=self.log_file)


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> type[StandinLauncher]:
    StandinLauncher.made = []
    StandinLauncher.running_before = False
    monkeypatch.setattr(neo4j, "Neo4jLauncher", StandinLauncher)
    monkeypatch.setattr(graph_command, "WATCH_SECONDS", 0.0)
    return StandinLauncher


def test_serve_prints_the_url_and_settings_and_ctrl_c_stops_it(
    standin: type[StandinLauncher], tmp_path: Path
) -> None:
    ran = CliRunner().invoke(main, ["graph", "serve", "--neo4j", "--data-dir", str(tmp_path / "n")])
    assert ran.exit_code == 0, ran.output
    [server] = standin.made
    assert (server.port, server.options["launcher_dir"]) == (7687, neo4j.LAUNCHER_DIR)
    assert server.started and server.watched == 1 and server.stopped
    lines = ran.output.splitlines()
    assert "Neo4j runs at bolt://127.0.0.1:7687" in ran.output
    assert "  export VERA_MEMORY__GRAPH_BACKEND=neo4j" in lines
    assert "  export VERA_MEMORY__GRAPH_URL=bolt://127.0.0.1:7687" in lines
    assert "Ctrl-C stops it." in lines and lines[-1] == "Neo4j stopped"


def test_serve_leaves_a_server_it_found_running(standin: type[StandinLauncher], tmp_path: Path) -> None:
    standin.running_before = True
    ran = CliRunner().invoke(
        main, ["graph", "serve", "--neo4j", "--data-dir", str(tmp_path), "--port", "7999"]
    )
    assert ran.exit_code == 0, ran.output
    [server] = standin.made
    assert server.started and not server.stopped
    assert "was already running at bolt://127.0.0.1:7999" in ran.output
    assert ran.output.splitlines()[-1] == f"left running from {tmp_path}"


def test_serve_says_which_server(tmp_path: Path) -> None:
    ran = CliRunner().invoke(main, ["graph", "serve", "--data-dir", str(tmp_path)])
    assert ran.exit_code == 1 and ran.stderr.startswith("vera: error: say which server: --neo4j")


@pytest.mark.parametrize(("installed", "missing"), [((), "java"), (("java",), "mvn")])
def test_serve_without_java_or_maven_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, installed: tuple[str, ...], missing: str
) -> None:
    # the launcher's sources without a built jar: the start builds it first (java, then mvn)
    sources = tmp_path / "launcher"
    shutil.copytree(neo4j.LAUNCHER_DIR, sources, ignore=shutil.ignore_patterns("target"))
    monkeypatch.setattr(neo4j, "LAUNCHER_DIR", sources)
    programs = tmp_path / "bin"
    programs.mkdir()
    for name in installed:
        (programs / name).write_text("#!/bin/sh\nexit 1\n")
        (programs / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(programs))
    ran = CliRunner().invoke(main, ["graph", "serve", "--neo4j", "--data-dir", str(tmp_path / "n")])
    assert ran.exit_code == 1, ran.output
    lines = ran.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"vera: error: {missing} is not installed: "), lines
    assert "apt-get install openjdk-17-jdk-headless maven" in lines[0]
    assert "Traceback" not in ran.output
