"""A worker without a graph does not finish a projection job silently: it records that the
group's graph is behind (vera.record_graph_behind), which `vera graph check` and `vera db status`
show until a real check of a configured graph replaces it (docs/graph.md, "A worker without a
graph")."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

import psycopg
import pytest
from click.testing import CliRunner

from pg_tests.support.cli import vera_env
from pg_tests.support.ingesting import worker_executor
from pg_tests.support.seed import World
from vera_cli.main import main
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.api import jobs as jobs_api
from vera_client.domain.callers import Operator
from vera_worker.adapters.queue import build_app
from vera_worker.domain.jobs import JobName


def _behind(world: World) -> dict[str, str | None]:
    with world.db.admin() as conn:
        rows = conn.execute("select group_id, drift from vera.graph_checks where backend = 'none'").fetchall()
    return dict(rows)


def test_a_projection_job_without_a_graph_records_that_the_graph_is_behind(
    world: World, tmp_path: Path
) -> None:
    sql = worker_executor(world.db)
    try:
        app = build_app(
            world.db.dsn("vera_worker"),
            objects=LocalObjectStore(tmp_path),
            projection=None,
            record_behind=lambda group, facts: sql.run(
                Operator(), jobs_api.record_graph_behind(group, facts)
            ),
        )
        task = app.tasks[JobName.PROJECT_TO_GRAPH.value]
        task.func(group_id=world.a.organisation, principal_id=None, fact_ids=[str(uuid4()), str(uuid4())])
    finally:
        sql.close()
    drift = _behind(world)[world.a.organisation]
    assert drift is not None and "2 facts" in drift and "vera graph rebuild" in drift
    assert world.b.organisation not in _behind(world)


def test_graph_check_without_a_graph_says_which_groups_are_behind(world: World) -> None:
    with world.db.admin() as conn:
        conn.execute("select vera.record_graph_behind(%s, 3)", (world.b.organisation,))
    env = {**vera_env(world.db.server, world.db.name), "VERA_MEMORY__GRAPH_BACKEND": "none"}
    result = CliRunner().invoke(main, ["graph", "check"], env=env, catch_exceptions=False)
    assert result.exit_code == 1
    assert f"{world.b.organisation}: behind: not projected" in result.output
    assert "no graph is configured" in result.stderr


def test_only_the_worker_and_operators_record_a_graph_behind(world: World) -> None:
    with world.db.connect() as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select vera.record_graph_behind(%s, 1)", (world.a.organisation,))
