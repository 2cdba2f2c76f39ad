"""The SQL functions of connector runs (sql/functions/117_source_runs.sql)
under RLS: a run's record, a source's run settings, its records' heads and
live records, its schedule and status stay inside the tenant; the schedule
runs only as the worker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.ingesting import worker_executor
from pg_tests.support.seed import World, create_project
from pg_tests.support.statistics import clear_statistics, without_autovacuum
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.api import sources as sources_api
from vera_client.api.call import Call
from vera_client.domain.callers import Principal
from vera_client.domain.errors import InvalidArgumentError, NotFoundError, PermissionDeniedError, VeraError
from vera_worker.adapters.queue import SOURCE_SCHEDULE_QUEUE, SOURCE_SCHEDULE_TASK, build_app, served_queues


@pytest.fixture(scope="module")
def sql(world: World) -> Iterator[Executor]:
    executor = worker_executor(world.db)
    yield executor
    executor.close()


@pytest.fixture(scope="module")
def source(world: World) -> sources_api.Source:
    group = create_project(world, "source-runs")
    with client_for(world, world.a.owner_key) as vera:
        source_id = vera.register_source(group, "cmdb", "runs", 1, config={"url": "http://127.0.0.1:9/"})
        return next(s for s in vera.list_sources(group) if s.source_id == source_id)


CALLS: dict[str, Callable[[sources_api.Source], Call[Any]]] = {
    "begin_source_run": lambda s: sources_api.begin_source_run(s.group_id, s.source_id),
    "end_source_run": lambda s: sources_api.end_source_run(s.group_id, UUID(int=1), "done", {}),
    "source_run_settings": lambda s: sources_api.source_run_settings(s.group_id, s.source_id),
    "record_heads": lambda s: sources_api.record_heads(s.group_id, s.source_id, ["ci-1"]),
    "note_record_signatures": lambda s: sources_api.note_record_signatures(
        s.group_id,
        s.source_id,
        [sources_api.NotedSignature(external_id="ci-1", sha256="0" * 64, signature="1:2")],
    ),
    "live_records": lambda s: sources_api.live_records(s.group_id, s.source_id),
    "set_source_interval": lambda s: sources_api.set_source_interval(s.group_id, s.source_id, 60),
    "source_status": lambda s: sources_api.source_status(s.group_id),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_another_tenant_reaches_no_source_run_function(
    world: World, sql: Executor, source: sources_api.Source, name: str
) -> None:
    with pytest.raises((PermissionDeniedError, NotFoundError)):
        sql.run(Principal(world.b.owner), CALLS[name](source))


def test_a_run_is_recorded_and_an_unfinished_one_is_interrupted(
    world: World, sql: Executor, source: sources_api.Source
) -> None:
    owner = Principal(world.a.owner)
    first = sql.run(owner, sources_api.begin_source_run(source.group_id, source.source_id))
    second = sql.run(owner, sources_api.begin_source_run(source.group_id, source.source_id))
    with pytest.raises(InvalidArgumentError):
        sql.run(owner, sources_api.end_source_run(source.group_id, second, "exploded", {}))
    with pytest.raises(InvalidArgumentError):
        sql.run(owner, sources_api.end_source_run(source.group_id, second, "done", {"items": -1}))
    sql.run(owner, sources_api.end_source_run(source.group_id, second, "done", {"items": 3, "skipped": 1}))
    [status] = sql.run(owner, sources_api.source_status(source.group_id))
    assert (status.last_status, status.items, status.skipped) == ("done", 3, 1)
    with world.db.admin() as admin:
        statuses = dict(admin.execute("select run_id, status from vera.source_runs").fetchall())
    assert statuses[first] == "interrupted"


def _reltuples(world: World, table: str) -> float:
    with world.db.admin() as admin:
        row = admin.execute("select reltuples from pg_class where oid = %s::regclass", (table,)).fetchone()
    assert row is not None
    return float(row[0])


def test_a_runs_end_analyzes_the_searched_tables_that_autovacuum_has_not(
    world: World, sql: Executor, source: sources_api.Source
) -> None:
    """A search planned before a table's first analyze is planned on default guesses, and a run
    that just loaded a source is where the first search comes from: its end analyzes the tables a
    search reads that were never analyzed (vera.refresh_planner_statistics), and leaves alone one
    whose rows changed since its last analyze are fewer than it held then (autovacuum's work)."""
    owner = Principal(world.a.owner)
    with world.db.admin() as admin, without_autovacuum(admin, ["vera.chunks", "vera.facts"]):
        clear_statistics(admin, "vera.chunks")
        clear_statistics(admin, "vera.facts")
        counts = admin.execute(
            "select (select count(*) from vera.chunks), (select count(*) from vera.facts)"
        ).fetchone()
        assert counts is not None and counts[1] > 0
        assert _reltuples(world, "vera.chunks") < 0 and _reltuples(world, "vera.facts") < 0
        run = sql.run(owner, sources_api.begin_source_run(source.group_id, source.source_id))
        sql.run(owner, sources_api.end_source_run(source.group_id, run, "done", {"items": 0}))
        # analyzed: every row of tables this small is in the sample
        assert (_reltuples(world, "vera.chunks"), _reltuples(world, "vera.facts")) == (counts[0], counts[1])

        # statistics of a table of 1,000,000 rows, of which far fewer than a tenth changed since
        admin.execute("select pg_restore_relation_stats('schemaname', 'vera', 'relname', 'facts',"
                      " 'reltuples', 1000000::real)")  # fmt: skip
        run = sql.run(owner, sources_api.begin_source_run(source.group_id, source.source_id))
        sql.run(owner, sources_api.end_source_run(source.group_id, run, "done", {"items": 0}))
        assert _reltuples(world, "vera.facts") == 1_000_000
        admin.execute("analyze vera.facts")  # as it was, for the module's other tests


def test_the_schedule_runs_only_as_the_worker(
    world: World, sql: Executor, source: sources_api.Source
) -> None:
    with pytest.raises(PermissionDeniedError):
        sql.run(Principal(world.a.owner), sources_api.request_due_ingests())
    with pytest.raises(VeraError):
        sql.run(
            Principal(world.a.owner), sources_api.set_source_interval(source.group_id, source.source_id, 5)
        )


def test_source_status_of_every_readable_group_leaves_other_tenants_out(
    world: World, sql: Executor, source: sources_api.Source
) -> None:
    assert all(
        s.group_id != source.group_id for s in sql.run(Principal(world.b.owner), sources_api.source_status())
    )
    assert any(
        s.source_id == source.source_id
        for s in sql.run(Principal(world.a.owner), sources_api.source_status())
    )


def test_a_worker_with_the_schedule_serves_its_queue(world: World, tmp_path: Path) -> None:
    dsn = world.db.dsn("vera_worker")
    scheduled = build_app(dsn, objects=LocalObjectStore(tmp_path), request_due_ingests=lambda: [])
    assert SOURCE_SCHEDULE_TASK in scheduled.tasks and SOURCE_SCHEDULE_QUEUE in served_queues(scheduled)
    assert SOURCE_SCHEDULE_QUEUE not in served_queues(build_app(dsn, objects=LocalObjectStore(tmp_path)))
