"""An erasure cleans up at once: the client that requested it deletes the raw bytes (its object
store) and the graph edges (a GraphStore passed in) right after its commit, and settles the
retract_cleanup job, which retires when nothing is left. What the requester could not do (a
failing store, no graph here, a requester that died after its commit) the job finishes, run by
the real Procrastinate worker."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.clients import client_for
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.bootstrap import Providers, build_providers
from vera_client.config import EmbedderSettings, ObjectStoreSettings, VeraSettings
from vera_client.domain.errors import NotFoundError
from vera_worker.adapters.queue import build_app
from vera_worker.graph.projection import GraphProjection


class RecordingGraph:
    """A graph store that only removes edges (and remembers which), or fails to."""

    def __init__(self, *, fails: bool = False) -> None:
        self.removed: list[tuple[str, list[UUID]]] = []
        self.fails = fails

    @property
    def backend(self) -> Any:
        return "falkordb"

    def upsert(self, group_id: str, nodes: Sequence[Any], edges: Sequence[Any]) -> int:
        return len(edges)

    def remove_edges(self, group_id: str, edge_ids: Sequence[UUID]) -> int:
        if self.fails:
            raise ConnectionError("graph server away")
        self.removed.append((group_id, list(edge_ids)))
        return len(edge_ids)

    def drop_group(self, group_id: str) -> None:
        raise NotImplementedError

    def edge_states(self, group_id: str) -> list[Any]:
        return []

    def node_count(self, group_id: str) -> int:
        return 0

    def explore(self, starts: Sequence[tuple[str, UUID]], depth: int, as_of: datetime) -> list[Any]:
        return []

    def close(self) -> None:
        pass


class FailingObjects(LocalObjectStore):
    """An object store whose deletions fail (a bucket away)."""

    def delete(self, key: str) -> bool:
        raise ConnectionError("object store away")


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Providers:
    root: Path = tmp_path_factory.mktemp("erasure")
    return build_providers(VeraSettings(
        embedder=EmbedderSettings(provider="none"), objects=ObjectStoreSettings(root=root / "objects")
    ))  # fmt: skip


def _episode_with_bytes(
    world: World, store: LocalObjectStore, name: str, delay: int = 3600
) -> tuple[str, UUID, str]:
    key = f"raw/{name}.md"
    store.put(key, b"# secret page\n")
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', %s)", (world.a.organisation, name)
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "select vera.set_setting(%s, 'retract.cleanup_delay_seconds', %s)", (group, Jsonb(delay))
        )
        source = register_source(conn, group, "wiki", 1)
        episode, _, _ = record_episode(conn, group, source, f"{name}.md", "secret", object_key=key)
        publish(conn, group, episode, [claim("page", "says", "secret")])
        conn.commit()
    return group, episode, key


def _job(world: World, group: str) -> tuple[int, str, dict[str, Any]]:
    with world.db.admin() as admin:
        row = admin.execute(
            "select id, status, args from procrastinate.procrastinate_jobs"
            " where task_name = 'vera.retract_cleanup' and args ->> 'group_id' = %s",
            (group,),
        ).fetchone()
    assert row is not None
    return row[0], row[1], row[2]


def _run_worker(world: World, store: LocalObjectStore, graph: RecordingGraph | None = None) -> None:
    projection = GraphProjection(None, graph) if graph is not None else None  # type: ignore[arg-type]
    app = build_app(world.db.dsn("vera_worker"), objects=store, projection=projection, graph_check_cron=None)

    async def work() -> None:
        async with app.open_async():
            await app.run_worker_async(queues=["retract_cleanup"], wait=False, install_signal_handlers=False)

    asyncio.run(work())


def _gone(store: LocalObjectStore, key: str) -> bool:
    try:
        store.get(key)
    except NotFoundError:
        return True
    return False


def test_an_erasure_deletes_the_raw_bytes_at_once_and_retires_its_job(
    world: World, providers: Providers
) -> None:
    store = providers.objects
    assert isinstance(store, LocalObjectStore)
    group, episode, key = _episode_with_bytes(world, store, "at-once")
    graph = RecordingGraph()
    with client_for(world, world.a.owner_key, providers=providers) as vera:
        done = vera.erase_episode(group, episode, "asked to forget", graph=graph)
    assert _gone(store, key)  # no worker has run
    assert graph.removed and graph.removed[0][0] == group
    job, status, _ = _job(world, group)
    assert (done.job, done.cleaned_up, done.objects_deleted, done.edges_left) == (job, True, 1, 0)
    assert status == "succeeded"  # retired: nothing left for a worker


def test_a_cleanup_that_fails_in_the_requester_is_finished_by_the_job(
    world: World, providers: Providers
) -> None:
    store = providers.objects
    assert isinstance(store, LocalObjectStore)
    group, episode, key = _episode_with_bytes(world, store, "fails-at-once")
    failing = dataclasses.replace(providers, objects=FailingObjects(store.root))
    with client_for(world, world.a.owner_key, providers=failing) as vera:
        done = vera.erase_episode(group, episode, "asked to forget", graph=RecordingGraph(fails=True))
    assert not done.cleaned_up and (done.objects_left, done.edges_left) == (1, 1)
    _, status, args = _job(world, group)
    assert status == "todo" and args["object_keys"] == [key] and len(args["edge_ids"]) == 1
    assert not _gone(store, key)
    graph = RecordingGraph()
    _run_worker(world, store, graph)  # due now: the requester settled it
    assert _job(world, group)[1] == "succeeded"
    assert _gone(store, key)
    assert [g for g, _ in graph.removed] == [group]


def test_without_a_graph_here_the_job_keeps_only_the_edges(world: World, providers: Providers) -> None:
    store = providers.objects
    assert isinstance(store, LocalObjectStore)
    group, episode, key = _episode_with_bytes(world, store, "no-graph-here")
    with client_for(world, world.a.owner_key, providers=providers) as vera:
        done = vera.erase_episode(group, episode)
    assert _gone(store, key)
    assert (done.cleaned_up, done.objects_deleted, done.edges_left) == (False, 1, 1)
    _, status, args = _job(world, group)
    assert status == "todo" and args["object_keys"] == [] and len(args["edge_ids"]) == 1


def test_a_requester_that_dies_after_its_commit_leaves_the_whole_job(
    world: World, providers: Providers
) -> None:
    store = providers.objects
    assert isinstance(store, LocalObjectStore)
    group, episode, key = _episode_with_bytes(world, store, "died", delay=0)  # due at once
    # the erasure commits, and the requester dies before its cleanup
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.erase_episode(%s, %s)", (group, episode))
        conn.commit()
    _, status, args = _job(world, group)
    assert status == "todo" and args["object_keys"] == [key]
    assert not _gone(store, key)
    _run_worker(world, store, RecordingGraph())
    assert _job(world, group)[1] == "succeeded"
    assert _gone(store, key)


def test_a_requester_cannot_add_work_to_a_job(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', 'settle-only-its-own')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        source = register_source(conn, group, "wiki", 1)
        episode, _, _ = record_episode(conn, group, source, "page.md", "text", object_key="raw/page.md")
        job = conn.execute("select vera.erase_episode(%s, %s)", (group, episode)).fetchone()[0]  # type: ignore[index]
        outcome = conn.execute(
            "select vera.settle_cleanup(%s, '{}', array['raw/someone-elses.md'])", (job,)
        ).fetchone()
        conn.commit()
    assert outcome == ("completed",)  # a key the job does not name is not work left


@pytest.mark.parametrize("statement", [
    "select vera.cleanup_work(%s)",
    "select vera.settle_cleanup(%s, '{}', '{}')",
])  # fmt: skip
def test_another_tenant_reads_or_settles_no_cleanup_job(world: World, statement: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', %s)", (world.a.organisation, f"tenancy-{len(statement)}")
        ).fetchone()[0]  # type: ignore[index]
        source = register_source(conn, group, "wiki", 1)
        episode, _, _ = record_episode(conn, group, source, "page.md", "text", object_key="raw/page.md")
        job = conn.execute("select vera.erase_episode(%s, %s)", (group, episode)).fetchone()[0]  # type: ignore[index]
        conn.commit()
    with caller(world.db, world.b.owner_key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(statement, (job,))
    assert raised.value.sqlstate == "VN001"
    assert _job(world, group)[1] == "todo"
