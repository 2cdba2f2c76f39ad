"""The retract_cleanup job end to end: SQL enqueues it with the erasure, and
the real Procrastinate worker runs it when due, deleting the raw bytes; or
the caller cleans up in-process and marks it completed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from uuid import uuid4

import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.domain.cleanup import RetractCleanup, run_retract_cleanup
from vera_client.domain.errors import InvalidArgumentError
from vera_worker.adapters.queue import build_app


def _erase_with_object(world: World, store: LocalObjectStore, name: str, delay: int) -> tuple[int, str]:
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
        job = conn.execute("select vera.erase_episode(%s, %s)", (group, episode)).fetchone()[0]  # type: ignore[index]
        conn.commit()
    return job, key


def _status(world: World, job: int) -> str:
    with world.db.admin() as admin:
        return admin.execute(
            "select status from procrastinate.procrastinate_jobs where id = %s", (job,)
        ).fetchone()[0]  # type: ignore[index, no-any-return]


def test_the_worker_runs_the_cleanup_when_it_falls_due(world: World, tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    job, key = _erase_with_object(world, store, "worker-cleanup", delay=0)
    app = build_app(world.db.dsn("vera_worker"), objects=store)

    async def work() -> None:
        async with app.open_async():
            await app.run_worker_async(queues=["retract_cleanup"], wait=False, install_signal_handlers=False)

    asyncio.run(work())
    assert _status(world, job) == "succeeded"
    with pytest.raises(Exception, match="no object"):
        store.get(key)


def test_a_job_not_yet_due_is_left_for_later(world: World, tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    job, key = _erase_with_object(world, store, "not-due", delay=3600)
    app = build_app(world.db.dsn("vera_worker"), objects=store)

    async def work() -> None:
        async with app.open_async():
            await app.run_worker_async(queues=["retract_cleanup"], wait=False, install_signal_handlers=False)

    asyncio.run(work())
    assert _status(world, job) == "todo"
    assert store.get(key) == b"# secret page\n"


def test_in_process_cleanup_then_completion_retires_the_job(world: World, tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    job, key = _erase_with_object(world, store, "in-process", delay=3600)
    assert store.get(key)
    with world.db.admin() as admin:
        args = admin.execute(
            "select args from procrastinate.procrastinate_jobs where id = %s", (job,)
        ).fetchone()[0]  # type: ignore[index]
    report = run_retract_cleanup(RetractCleanup.from_job_args(args), objects=store, graph=None)
    assert (report.objects_deleted, report.objects_already_gone) == (1, 0)
    # idempotent: a second run (say, the worker's) finds it gone
    again = run_retract_cleanup(RetractCleanup.from_job_args(args), objects=store, graph=None)
    assert (again.objects_deleted, again.objects_already_gone) == (0, 1)
    with caller(world.db, world.a.owner_key) as conn:
        assert conn.execute("select vera.complete_cleanup(%s)", (job,)).fetchone() == (True,)
        conn.commit()
    assert _status(world, job) == "succeeded"


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"group_id": "o:1", "edge_ids": "x"},
        {"group_id": "o:1", "object_keys": [1]},
        # an edge id is a fact's UUID, never text a graph query could read as Cypher
        {"group_id": "o:1", "edge_ids": ["x' OR 1=1 //"]},
        {"group_id": "o:1", "edge_ids": [str(uuid4()), "not-a-uuid"]},
    ],
)
def test_malformed_job_payloads_are_refused(args: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        RetractCleanup.from_job_args(args)


def test_a_job_payload_reads_its_ids_as_uuids() -> None:
    edge = uuid4()
    job = RetractCleanup.from_job_args(
        {"group_id": "o:1", "edge_ids": [str(edge)], "object_keys": ["raw/a"], "erase": True}
    )
    assert (job.edge_ids, job.object_keys, job.erase) == ((edge,), ("raw/a",), True)
