"""The guards of calibration (sql/functions/195_weights.sql): a calibrated weight never falls
below the group's floor nor moves more than its step in one run, the change is audited with
the weights before and after, the sets have a history and a rollback, and the worker's
schedule calibrates only groups with enough new votes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from pg_tests.support.searching import MODEL, embed, search
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.api import weights as weights_api
from vera_client.domain.callers import Operator
from vera_worker.adapters.queue import CALIBRATION_QUEUE, CALIBRATION_TASK, build_app, served_queues

SIGNALS = ("relevance", "authority", "verification", "recency", "feedback", "confidence", "period")
DEFAULTS = {"relevance": 0.32, "authority": 0.144, "verification": 0.096, "recency": 0.096,
            "feedback": 0.064, "confidence": 0.08, "period": 0.20}  # fmt: skip


@pytest.fixture
def group(world: World) -> str:
    """A fresh project (no votes, no weight sets) with a tier-1 and a tier-2 source."""
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        project = conn.execute(
            "select vera.create_group(%s, 'project', 'calibration ' || gen_random_uuid())",
            (world.a.organisation,),
        ).fetchone()[0]  # type: ignore[index]
        cmdb = register_source(conn, project, "cmdb", 1)
        wiki = register_source(conn, project, "wiki", 2)
        for source, name in ((cmdb, "export"), (wiki, "page")):
            episode, _, _ = record_episode(conn, project, source, name, name)
            publish(conn, project, episode, [
                claim(f"host-{i}", "run by", f"crew {name} {i}", fact_text=f"host-{i} run by crew {name} {i}",
                      embedding=embed(f"host-{i} run by crew {name} {i}"))
                for i in range(4)
            ], MODEL)  # fmt: skip
        conn.commit()
    return project


def _one(conn: psycopg.Connection, sql: str, params: tuple[Any, ...]) -> dict[str, Any]:
    cursor = conn.execute(sql, params)
    columns = [column.name for column in cursor.description or []]
    row = cursor.fetchone()
    assert row is not None
    return dict(zip(columns, row, strict=True))


def _two_votes(conn: psycopg.Connection, group: str, i: int = 1) -> None:
    """One up on the tier-1 hit, one down on the tier-2 hit: relevance does not separate them
    (or separates them the wrong way), authority does."""
    query = f"host-{i} run by crew"
    for hit in search(conn, query, groups=[group], k=20):
        if hit["subject"] == f"host-{i}":
            vote = "up" if hit["citation"]["tier"] == 1 else "down"
            conn.execute(
                "select vera.record_feedback(%s, %s, %s, %s)", (hit["kind"], hit["item_id"], query, vote)
            )


def _calibrate(conn: psycopg.Connection, group: str, min_samples: int | None = 2) -> dict[str, Any]:
    return _one(conn, "select * from vera.calibrate_weights(%s, %s)", (group, min_samples))


def test_two_votes_cannot_zero_a_weight(world: World, group: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        _two_votes(conn, group)
        result = _calibrate(conn, group)
        assert result["persisted"] is True
        weights = result["weights"]
        # one run moves each signal by 0.1 at most, and none below the floor (0.02)
        assert float(weights["relevance"]) >= 0.22 - 1e-5
        assert max(abs(float(weights[name]) - DEFAULTS[name]) for name in SIGNALS) == pytest.approx(
            0.1, abs=1e-5
        )
        assert min(float(weights[name]) for name in SIGNALS) >= 0.02 - 1e-6
        assert sum(float(weights[name]) for name in SIGNALS) == pytest.approx(1.0, abs=1e-6)
        # runs from the same votes move on, a bounded step at a time, and stop at the floor
        previous = weights
        for _ in range(8):
            again = _calibrate(conn, group)["weights"]
            assert max(abs(float(again[n]) - float(previous[n])) for n in SIGNALS) <= 0.1 + 1e-5
            previous = again
        assert min(float(previous[name]) for name in SIGNALS) == pytest.approx(0.02, abs=1e-5)


def test_the_guards_are_group_settings_and_checked(world: World, group: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        _two_votes(conn, group)
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_floor', '0')", (group,))
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_max_step', '1')", (group,))
        unguarded = _calibrate(conn, group)["weights"]
        assert min(float(unguarded[name]) for name in SIGNALS) == 0  # the bare mean-difference rule
        for name, value in (("ranking.calibration_floor", "0.5"), ("ranking.calibration_max_step", "0")):
            with pytest.raises(psycopg.Error, match="invalid value") as error:
                conn.execute("select vera.set_setting(%s, %s, %s)", (group, name, value))
            assert error.value.sqlstate == "22023"
            conn.rollback()
            conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))


def test_a_calibration_is_audited_with_the_weights_before_and_after(world: World, group: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        _two_votes(conn, group)
        kept = _calibrate(conn, group)
        detail = conn.execute(
            "select detail from vera.audit_log where group_id = %s and action = 'ranking.calibrate'", (group,)
        ).fetchone()[0]  # type: ignore[index]
        assert float(detail["before"]["relevance"]) == pytest.approx(0.32)
        assert float(detail["after"]["relevance"]) == pytest.approx(float(kept["weights"]["relevance"]))
        # what the guards held back: the unguarded proposal puts some signal at 0
        assert min(float(detail["proposed"][name]) for name in SIGNALS) == 0
        assert detail["trigger"] == "manual"


def test_history_and_rollback(world: World, group: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        _two_votes(conn, group)
        made = _calibrate(conn, group)
        first = made["weight_set_id"]
        second = _calibrate(conn, group)["weight_set_id"]
        history = conn.execute(
            "select weight_set_id, active from vera.weight_history(%s)", (group,)
        ).fetchall()
        assert history == [(second, True), (first, False)]

        back = _one(conn, "select * from vera.rollback_weights(%s)", (group,))
        assert back["active_set"] == first
        active = conn.execute("select vera.active_weights(%s) ->> 'weight_set_id'", (group,)).fetchone()[0]  # type: ignore[index]
        assert active == str(first)
        detail = conn.execute(
            "select detail from vera.audit_log where group_id = %s and action = 'ranking.rollback'", (group,)
        ).fetchone()[0]  # type: ignore[index]
        assert detail["before"]["weight_set_id"] == str(second)
        assert float(detail["after"]["relevance"]) == pytest.approx(
            float(made["weights"]["relevance"]), abs=1e-5
        )

        assert (
            _one(conn, "select * from vera.rollback_weights(%s)", (group,))["active_set"] is None
        )  # the defaults
        assert conn.execute("select vera.active_weights(%s) ->> 'relevance'", (group,)).fetchone() == (
            "0.32",
        )
        # a set named: forward again
        assert (
            _one(conn, "select * from vera.rollback_weights(%s, %s)", (group, second))["active_set"] == second
        )
        assert _one(conn, "select * from vera.rollback_weights(%s)", (group,))["active_set"] == first
        assert _one(conn, "select * from vera.rollback_weights(%s)", (group,))["active_set"] is None
        with pytest.raises(psycopg.Error, match="nothing to roll back") as error, conn.transaction():
            conn.execute("select vera.rollback_weights(%s)", (group,))
        assert error.value.sqlstate == "VN001"
        with pytest.raises(psycopg.Error, match="has no weight set") as error, conn.transaction():
            conn.execute("select vera.rollback_weights(%s, gen_random_uuid())", (group,))
        assert error.value.sqlstate == "VN001"


def test_only_admins_roll_back_and_other_tenants_see_no_history(world: World, group: str) -> None:
    with caller(world.db, world.a.viewer_key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select vera.rollback_weights(%s)", (group,))
    with caller(world.db, world.b.owner_key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select * from vera.weight_history(%s)", (group,))


def test_the_schedule_calibrates_groups_with_enough_new_votes(world: World, group: str) -> None:
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        _two_votes(conn, group)
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_min_samples', '2')", (group,))
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_min_new_votes', '3')", (group,))
        conn.commit()
    with world.db.connect("vera_worker") as worker:
        due = {row[0]: row for row in worker.execute("select * from vera.calibrate_due()").fetchall()}
        # two new votes, three needed: skipped
        assert due[group][1:4] == (2, False, False)
        worker.commit()
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        _two_votes(conn, group, 2)
        conn.commit()
    with world.db.connect("vera_worker") as worker:
        row = {r[0]: r for r in worker.execute("select * from vera.calibrate_due()").fetchall()}[group]
        assert row[1:4] == (4, True, True)
        worker.commit()
        # the votes before the set it made are not new any more
        again = {r[0]: r for r in worker.execute("select * from vera.calibrate_due()").fetchall()}[group]
        assert again[1:3] == (0, False)
        worker.rollback()
    with caller(world.db, world.a.owner_key) as conn:
        detail = conn.execute(
            "select detail from vera.audit_log where group_id = %s and action = 'ranking.calibrate'", (group,)
        ).fetchone()[0]  # type: ignore[index]
        assert detail["trigger"] == "schedule"
        assert float(detail["after"]["relevance"]) >= 0.22 - 1e-5
        # a principal does not run the schedule
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select vera.calibrate_due()")


def test_the_worker_runs_the_schedule_as_a_periodic_task(world: World, group: str, worker_sql: Executor,
                                                          tmp_path: Path) -> None:  # fmt: skip
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        _two_votes(conn, group)
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_min_samples', '2')", (group,))
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_min_new_votes', '2')", (group,))
        conn.commit()
    app = build_app(
        world.db.dsn("vera_worker"), objects=LocalObjectStore(tmp_path / "objects"),
        calibration=lambda: worker_sql.run(Operator(), weights_api.calibrate_due()), calibration_cron="17 3 * * *",
    )  # fmt: skip
    assert CALIBRATION_QUEUE in served_queues(app)
    [periodic] = [
        task for task in app.periodic_registry.periodic_tasks.values() if task.task.name == CALIBRATION_TASK
    ]
    assert periodic.cron == "17 3 * * *"
    app.tasks[CALIBRATION_TASK](timestamp=0)
    with caller(world.db, world.a.owner_key) as conn:
        [(created_by, active)] = conn.execute(
            "select created_by, active from vera.weight_history(%s)", (group,)
        ).fetchall()
        assert (created_by, active) == (None, True)  # made by the schedule, in use
    plain = build_app(world.db.dsn("vera_worker"), objects=LocalObjectStore(tmp_path / "objects"))
    assert CALIBRATION_TASK not in plain.tasks
