"""Both real graph servers: they start, answer a query and the index kinds
Graphiti creates (vector and full-text), listen on 127.0.0.1 only, and a
second start finds the running server instead of launching another.

FalkorDB is cheap, so its stop/start cycle (data kept) runs on a server of its
own; Neo4j is the session's (pg_tests/support/graph_servers.py), started once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from falkordb import FalkorDB
from neo4j import GraphDatabase

from vera_client.domain.errors import GraphServerError, PortInUseError
from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB
from vera_worker.graph.servers.local import HOST, GraphServerStatus
from vera_worker.graph.servers.neo4j import Neo4jLauncher


def _listening_addresses(pid: int) -> set[str]:
    """The addresses `pid` listens on; Java's IPv4-mapped ::ffff:127.0.0.1 counts as 127.0.0.1."""
    return {
        connection.laddr.ip.removeprefix("::ffff:")
        for connection in psutil.Process(pid).net_connections(kind="inet")
        if connection.status == psutil.CONN_LISTEN
    }


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


# -- FalkorDB ----------------------------------------------------------------------------


@pytest.fixture
def own_falkordb(tmp_path: Path) -> Iterator[EmbeddedFalkorDB]:
    server = EmbeddedFalkorDB(tmp_path / "graph")
    yield server
    server.stop()


def test_falkordb_answers_cypher(falkordb_url: str) -> None:
    graph = FalkorDB.from_url(falkordb_url).select_graph("server_probe")
    try:
        graph.query("CREATE (:Service {name: 'ledger-api'})-[:DEPENDS_ON]->(:Service {name: 'ledger-db'})")
        result = graph.query("MATCH (a:Service)-[:DEPENDS_ON]->(b:Service) RETURN a.name, b.name").result_set
        assert result == [["ledger-api", "ledger-db"]]
    finally:
        graph.delete()


def test_falkordb_has_vector_and_full_text_indexes(falkordb_url: str) -> None:
    graph = FalkorDB.from_url(falkordb_url).select_graph("server_probe_indexes")
    try:
        graph.query(
            "CREATE VECTOR INDEX FOR (n:Probe) ON (n.embedding) "
            "OPTIONS {dimension: 3, similarityFunction: 'cosine'}"
        )
        graph.query("CALL db.idx.fulltext.createNodeIndex('Probe', 'name')")
        graph.query("CREATE (:Probe {name: 'ledger database', embedding: vecf32([1.0, 0.0, 0.0])})")
        graph.query("CREATE (:Probe {name: 'billing queue', embedding: vecf32([0.0, 1.0, 0.0])})")
        nearest = graph.query(
            "CALL db.idx.vector.queryNodes('Probe', 'embedding', 1, vecf32([0.9, 0.1, 0.0])) "
            "YIELD node RETURN node.name"
        ).result_set
        assert nearest == [["ledger database"]]
        matched = graph.query(
            "CALL db.idx.fulltext.queryNodes('Probe', 'billing') YIELD node RETURN node.name"
        ).result_set
        assert matched == [["billing queue"]]
    finally:
        graph.delete()


def test_falkordb_listens_on_loopback_only(own_falkordb: EmbeddedFalkorDB) -> None:
    own_falkordb.start()
    status = own_falkordb.status()
    assert status.running and status.pid is not None
    assert _listening_addresses(status.pid) == {HOST}


def test_falkordb_second_start_finds_the_running_server(own_falkordb: EmbeddedFalkorDB) -> None:
    url = own_falkordb.start()
    first = own_falkordb.status()
    again = EmbeddedFalkorDB(own_falkordb.data_dir)
    assert again.start() == url
    assert again.status().pid == first.pid
    # asking the same folder for another port is refused rather than ignored
    with pytest.raises(GraphServerError, match="already runs"):
        EmbeddedFalkorDB(own_falkordb.data_dir, _port(url) + 1).start()


def test_falkordb_keeps_its_data_across_a_restart(own_falkordb: EmbeddedFalkorDB) -> None:
    url = own_falkordb.start()
    FalkorDB.from_url(url).select_graph("kept").query("CREATE (:Entity {name: 'ledger-db'})")
    stopped = own_falkordb.stop()
    assert stopped == GraphServerStatus(
        running=False, data_dir=own_falkordb.data_dir, log_file=own_falkordb.log_file
    )
    assert not (own_falkordb.data_dir / "server.state").exists()
    url = own_falkordb.start()
    names = FalkorDB.from_url(url).select_graph("kept").query("MATCH (n:Entity) RETURN n.name").result_set
    assert names == [["ledger-db"]]


def test_falkordb_with_a_password_refuses_anonymous_clients(tmp_path: Path) -> None:
    server = EmbeddedFalkorDB(tmp_path / "graph", password="graph-secret")
    url = server.start()
    try:
        assert url.startswith("falkor://:graph-secret@127.0.0.1:")
        assert FalkorDB.from_url(url).select_graph("g").query("RETURN 1").result_set == [[1]]
        with pytest.raises(Exception, match=r"(?i)auth"):
            FalkorDB.from_url(f"falkor://{HOST}:{_port(url)}").select_graph("g").query("RETURN 1")
        # the password is in the 0600 config file, not in the process list
        status = server.status()
        assert status.pid is not None
        assert "graph-secret" not in " ".join(psutil.Process(status.pid).cmdline())
        assert (server.data_dir / "falkordb.conf").stat().st_mode & 0o077 == 0
        # a second start without the password finds the running server rather than waiting on it
        anonymous = EmbeddedFalkorDB(server.data_dir)
        assert anonymous.status().pid == status.pid
        assert anonymous.start() == f"falkor://{HOST}:{_port(url)}"
    finally:
        server.stop()


def test_falkordb_on_a_taken_port_is_a_typed_error(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((HOST, 0))
        taken.listen()
        with pytest.raises(PortInUseError):
            EmbeddedFalkorDB(tmp_path / "graph", taken.getsockname()[1]).start()


# -- Neo4j -----------------------------------------------------------------------------------


def test_neo4j_answers_cypher_with_vector_and_full_text_indexes(neo4j_url: str) -> None:
    with GraphDatabase.driver(neo4j_url, auth=None) as driver:
        assert driver.execute_query("RETURN 1 AS one").records[0]["one"] == 1
        try:
            driver.execute_query(
                "CREATE VECTOR INDEX server_probe_vectors IF NOT EXISTS FOR (n:ServerProbe) ON n.embedding "
                "OPTIONS {indexConfig: {`vector.dimensions`: 3, `vector.similarity_function`: 'cosine'}}"
            )
            driver.execute_query(
                "CREATE FULLTEXT INDEX server_probe_names IF NOT EXISTS FOR (n:ServerProbe) ON EACH [n.name]"
            )
            driver.execute_query(
                "CREATE (:ServerProbe {name: 'ledger database', embedding: [1.0, 0.0, 0.0]}), "
                "(:ServerProbe {name: 'billing queue', embedding: [0.0, 1.0, 0.0]})"
            )
            driver.execute_query("CALL db.awaitIndexes(60)")
            nearest = driver.execute_query(
                "CALL db.index.vector.queryNodes('server_probe_vectors', 1, [0.9, 0.1, 0.0]) "
                "YIELD node RETURN node.name AS name"
            ).records
            assert [record["name"] for record in nearest] == ["ledger database"]
            matched = driver.execute_query(
                "CALL db.index.fulltext.queryNodes('server_probe_names', 'billing') "
                "YIELD node RETURN node.name AS name"
            ).records
            assert [record["name"] for record in matched] == ["billing queue"]
            # Graphiti ranks with this function too
            similarity = driver.execute_query(
                "RETURN vector.similarity.cosine([1.0, 0.0], [1.0, 0.0]) AS s"
            ).records[0]["s"]
            assert similarity == pytest.approx(1.0)
        finally:
            driver.execute_query("MATCH (n:ServerProbe) DETACH DELETE n")
            driver.execute_query("DROP INDEX server_probe_vectors IF EXISTS")
            driver.execute_query("DROP INDEX server_probe_names IF EXISTS")


def test_neo4j_listens_on_loopback_only_and_a_second_start_finds_it(
    neo4j_url: str, neo4j_data_dir: Path
) -> None:
    again = Neo4jLauncher(neo4j_data_dir)
    assert again.start() == neo4j_url
    status = again.status()
    assert status.running and status.pid is not None and status.url == neo4j_url
    assert _listening_addresses(status.pid) == {HOST}


def test_vera_graph_serve_reuses_the_running_neo4j_and_leaves_it_on_ctrl_c(
    neo4j_url: str, neo4j_data_dir: Path
) -> None:
    """`vera graph serve --neo4j` (issue 29) on the folder of the session's Neo4j: it prints the
    URL and settings at once, and Ctrl-C leaves a server it did not start running (one it
    started it stops: tests/test_graph_serve.py)."""
    vera = Path(sys.executable).with_name("vera")
    command = [str(vera), "graph", "serve", "--neo4j", "--data-dir", str(neo4j_data_dir),
               "--port", str(_port(neo4j_url))]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(  # noqa: S603 - our own command
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as serving:
        try:
            assert serving.stdout is not None
            seen = []
            for line in serving.stdout:
                seen.append(line.rstrip("\n"))
                if line.startswith("Ctrl-C"):
                    break
            serving.send_signal(signal.SIGINT)
            rest, errors = serving.communicate(timeout=60)
        finally:
            if serving.poll() is None:  # a failure above must not leave the test waiting on it
                serving.kill()
    assert serving.returncode == 0, errors
    assert (
        seen[0] == f"Neo4j was already running at {neo4j_url} (log: {neo4j_data_dir / 'neo4j-launcher.log'})"
    )
    assert f"  export VERA_MEMORY__GRAPH_URL={neo4j_url}" in seen
    assert rest.strip() == f"left running from {neo4j_data_dir}"
    assert Neo4jLauncher(neo4j_data_dir).status().running
