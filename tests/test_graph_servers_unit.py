"""The parts of the local graph servers that need no server: the state file,
port checks, the FalkorDB config, the launcher's readiness and staleness rules,
argument checks. pg_tests/graph/test_graph_servers.py starts the real servers."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from vera_client.domain.errors import GraphServerError, GraphServerMissingError, PortInUseError
from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB, falkordb_config
from vera_worker.graph.servers.local import (
    HOST,
    ServerFiles,
    ServerRecord,
    check_port,
    ensure_port_free,
    free_port,
    process_runs,
)
from vera_worker.graph.servers.neo4j import (
    JAR_NAME,
    Neo4jLauncher,
    build_launcher,
    check_memory_size,
    is_ready,
    needs_build,
    required_program,
)


@pytest.fixture
def listener() -> socket.socket:
    """A socket listening on a loopback port, as another program would."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((HOST, 0))
    sock.listen()
    yield sock
    sock.close()


# -- the state file -------------------------------------------------------------


def test_record_round_trips() -> None:
    record = ServerRecord(pid=4321, port=6380)
    assert ServerRecord.parse(record.render()) == record


@pytest.mark.parametrize(
    "text", ["", "4321", "4321 6380 7", "abc 6380", "4321 70000", "0 6380", "-1 6380", "4321 0"]
)
def test_malformed_records_are_none(text: str) -> None:
    assert ServerRecord.parse(text) is None


def test_a_record_of_a_dead_or_foreign_process_is_dropped(tmp_path: Path) -> None:
    files = ServerFiles(tmp_path, program_marker="redis-server", log_name="x.log")
    files.prepare()
    # this test's own pid runs, but it is Python, not redis-server: a reused pid
    files.write(ServerRecord(pid=os.getpid(), port=6380))
    assert files.read() is None
    assert not files.state_file.exists()


def test_a_record_of_the_expected_program_is_kept(tmp_path: Path) -> None:
    files = ServerFiles(tmp_path, program_marker="python", log_name="x.log")
    files.prepare()
    files.write(ServerRecord(pid=os.getpid(), port=6380))
    assert files.read() == ServerRecord(pid=os.getpid(), port=6380)


def test_a_half_written_record_is_dropped(tmp_path: Path) -> None:
    files = ServerFiles(tmp_path, program_marker="python", log_name="x.log")
    files.prepare()
    files.state_file.write_text("12")
    assert files.read() is None


def test_process_runs_is_false_for_a_pid_that_does_not_exist() -> None:
    assert not process_runs(2**22 + 12345, "anything")


# -- ports ------------------------------------------------------------------------


@pytest.mark.parametrize("port", [0, -1, 65536, True, "6379", 1.5])
def test_bad_ports_are_refused(port: object) -> None:
    with pytest.raises(GraphServerError, match="port"):
        check_port(port)  # type: ignore[arg-type]


def test_good_ports_pass() -> None:
    assert check_port(None) is None
    assert check_port(6379) == 6379


def test_free_port_is_bindable() -> None:
    ensure_port_free(free_port(), "a test")


def test_a_taken_port_is_a_typed_error(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    with pytest.raises(PortInUseError, match=f"port {port}"):
        ensure_port_free(port, "a test")


def test_falkordb_refuses_a_taken_port_before_starting_anything(
    tmp_path: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    server = EmbeddedFalkorDB(tmp_path / "graph", port)
    with pytest.raises(PortInUseError):
        server.start()
    assert not server.files.state_file.exists()
    assert not server.status().running


def test_neo4j_launcher_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(GraphServerError, match="port"):
        Neo4jLauncher(tmp_path, 0)
    with pytest.raises(GraphServerError, match="heap"):
        Neo4jLauncher(tmp_path, heap="lots")


# -- FalkorDB's settings ------------------------------------------------------------


def test_falkordb_config_binds_loopback_and_keeps_data_in_its_folder(tmp_path: Path) -> None:
    config = falkordb_config(port=6390, data_dir=tmp_path, module=Path("/x/falkordb.so"), password=None)
    lines = config.splitlines()
    assert "bind 127.0.0.1" in lines
    assert "port 6390" in lines
    assert "protected-mode yes" in lines
    assert f'dir "{tmp_path}"' in lines
    assert 'loadmodule "/x/falkordb.so"' in lines
    assert not any(line.startswith("requirepass") for line in lines)


def test_falkordb_password_goes_in_the_config_and_the_url(tmp_path: Path) -> None:
    config = falkordb_config(port=6390, data_dir=tmp_path, module=Path("/x.so"), password="s3cret")
    assert 'requirepass "s3cret"' in config.splitlines()
    assert EmbeddedFalkorDB(tmp_path, password="s3cret").url(6390) == "falkor://:s3cret@127.0.0.1:6390"
    assert EmbeddedFalkorDB(tmp_path).url(6390) == "falkor://127.0.0.1:6390"


@pytest.mark.parametrize("password", ['a"b', "a\\b", "a\nrename-command FLUSHALL x"])
def test_a_password_that_could_inject_settings_is_refused(tmp_path: Path, password: str) -> None:
    with pytest.raises(GraphServerError, match="password"):
        EmbeddedFalkorDB(tmp_path, password=password)


# -- the Neo4j launcher ------------------------------------------------------------------


def test_ready_means_a_ready_line_after_the_last_starting_line() -> None:
    assert not is_ready("")
    assert not is_ready("neo4j-launcher starting\n")
    assert is_ready("neo4j-launcher starting\nneo4j-launcher ready bolt://127.0.0.1:7687\n")
    # a previous run's ready line does not count for the run that is starting now
    assert not is_ready(
        "neo4j-launcher starting\nneo4j-launcher ready bolt://127.0.0.1:7687\n"
        "neo4j-launcher stopped\nneo4j-launcher starting\n"
    )


@pytest.mark.parametrize("size", ["", "1", "g", "0m", "1.5g", "12t", "-1g"])
def test_bad_memory_sizes_are_refused(size: str) -> None:
    with pytest.raises(GraphServerError):
        check_memory_size(size, "the heap")


def test_good_memory_sizes_pass() -> None:
    assert check_memory_size("512m", "the heap") == "512m"
    assert check_memory_size("2G", "the heap") == "2G"


def _launcher_tree(root: Path) -> Path:
    (root / "src" / "main" / "java").mkdir(parents=True)
    (root / "pom.xml").write_text("<project/>")
    (root / "src" / "main" / "java" / "Launcher.java").write_text("class Launcher {}")
    return root


def test_needs_build_until_jar_and_libs_are_newer_than_the_sources(tmp_path: Path) -> None:
    launcher = _launcher_tree(tmp_path)
    assert needs_build(launcher)
    (launcher / "target" / "lib").mkdir(parents=True)
    jar = launcher / "target" / JAR_NAME
    jar.write_bytes(b"jar")
    later = time.time() + 10
    os.utime(jar, (later, later))
    assert not needs_build(launcher)
    source = launcher / "src" / "main" / "java" / "Launcher.java"
    os.utime(source, (later + 10, later + 10))
    assert needs_build(launcher)


def test_missing_launcher_sources_are_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(GraphServerMissingError, match="sources"):
        build_launcher(tmp_path / "nowhere")


def test_missing_java_or_maven_is_a_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphServerMissingError, match="mvn is not installed"):
        required_program("mvn", "Maven builds the Neo4j launcher")
    with pytest.raises(GraphServerMissingError, match="java is not installed"):
        build_launcher(_launcher_tree(tmp_path / "launcher"))
