"""Supersession and validity (sql/functions/125_supersede.sql): functional
predicates keep one value at a time with their history; multi-valued ones
coexist; out-of-order arrivals slot into history; concurrent writers end with
one current value."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import psycopg
from psycopg.types.json import Jsonb

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import (
    claim,
    facts_of,
    functional_project,
    publish,
    record_episode,
    register_source,
)


def _setup(conn: psycopg.Connection, world: World, name: str) -> tuple[str, object]:
    group = functional_project(conn, world.a.organisation, name)
    source = register_source(conn, group, "cmdb", 1, kind="cmdb")
    episode, _, _ = record_episode(conn, group, source, "export", "x")
    return group, episode


def _history(conn: psycopg.Connection, group: str) -> list[tuple[str, str, str | None, str | None]]:
    return [
        (f["object_value"], f["lifecycle"], f["valid_from"].date().isoformat(),
         f["valid_to"].date().isoformat() if f["valid_to"] else None)
        for f in facts_of(conn, "f.group_id = %s and f.predicate = 'RUNS_ON'", (group,))
    ]  # fmt: skip


def test_a_functional_predicate_supersedes_earlier_values(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _setup(conn, world, "fn")
        publish(conn, group, episode, [claim("api", "runs on", "blue", valid_from="2026-01-01")])
        publish(conn, group, episode, [claim("api", "runs on", "green", valid_from="2026-03-01")])
        assert _history(conn, group) == [
            ("blue", "superseded", "2026-01-01", "2026-03-01"),
            ("green", "published", "2026-03-01", None),
        ]
        old, new = facts_of(conn, "f.group_id = %s and f.predicate = 'RUNS_ON'", (group,))
        assert old["superseded_by"] == new["fact_id"]


def test_out_of_order_facts_slot_into_history(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _setup(conn, world, "ooo")
        publish(conn, group, episode, [claim("api", "runs on", "green", valid_from="2026-03-01")])
        publish(conn, group, episode, [claim("api", "runs on", "blue", valid_from="2026-01-01")])
        publish(conn, group, episode, [claim("api", "runs on", "red", valid_from="2026-02-01")])
        assert _history(conn, group) == [
            ("blue", "superseded", "2026-01-01", "2026-02-01"),
            ("red", "superseded", "2026-02-01", "2026-03-01"),
            ("green", "published", "2026-03-01", None),
        ]


def test_a_stated_end_is_kept(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _setup(conn, world, "end")
        publish(
            conn,
            group,
            episode,
            [claim("api", "runs on", "blue", valid_from="2026-01-01", valid_to="2026-01-15")],
        )
        publish(conn, group, episode, [claim("api", "runs on", "green", valid_from="2026-03-01")])
        assert _history(conn, group)[0] == ("blue", "superseded", "2026-01-01", "2026-01-15")


def test_multi_valued_predicates_coexist(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _setup(conn, world, "multi")
        publish(
            conn,
            group,
            episode,
            [claim("api", "depends on", "postgres"), claim("api", "depends on", "redis")],
        )
        publish(conn, group, episode, [claim("api", "depends on", "kafka")])
        current = facts_of(conn, "f.group_id = %s and f.predicate = 'DEPENDS_ON'", (group,))
        assert {(f["object_value"], f["lifecycle"]) for f in current} == {
            ("postgres", "published"), ("redis", "published"), ("kafka", "published")}  # fmt: skip


def test_contradiction_judge_gets_a_job_when_configured(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _setup(conn, world, "judge")
        publish(conn, group, episode, [claim("api", "owned by", "team red")])
        conn.execute("select vera.set_setting(%s, 'judge.contradiction', %s)", (group, Jsonb(True)))
        [row] = publish(conn, group, episode, [claim("api", "owned by", "team blue")])
        conn.commit()
    with world.db.admin() as admin:
        jobs = admin.execute(
            "select args from procrastinate.procrastinate_jobs where task_name = 'vera.judge_contradiction' "
            "and args ->> 'group_id' = %s", (group,)).fetchall()  # fmt: skip
    assert [job[0]["fact_ids"] for job in jobs] == [[str(row["fact_id"])]]


def test_declaring_a_predicate_functional_rebuilds_its_history(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _setup(conn, world, "declare")
        publish(conn, group, episode, [claim("api", "region", "eu", valid_from="2026-01-01"),
                                       claim("api", "region", "us", valid_from="2026-02-01")])  # fmt: skip
        conn.execute("select vera.declare_predicate(%s, 'region', 'functional')", (group,))
        rows = facts_of(conn, "f.group_id = %s and f.predicate = 'REGION'", (group,))
        assert [(f["object_value"], f["lifecycle"]) for f in rows] == [
            ("eu", "superseded"),
            ("us", "published"),
        ]


def test_concurrent_writers_leave_exactly_one_current_value(world: World) -> None:
    """Two real connections publish different values for one subject at once."""
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _setup(conn, world, "race")
        conn.commit()
    first = world.db.connect()
    second = world.db.connect()
    try:
        for conn in (first, second):
            conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        now = datetime.now(UTC).isoformat()
        publish(first, group, episode, [claim("api", "runs on", "blue", valid_from=now)])
        # the second blocks on the first's lock on this history until the first commits
        errors: list[BaseException] = []

        def publish_second() -> None:
            try:
                publish(second, group, episode, [claim("api", "runs on", "green", valid_from=now)])
                second.commit()
            except BaseException as exc:
                errors.append(exc)

        racer = threading.Thread(target=publish_second)
        racer.start()
        racer.join(timeout=1)
        assert racer.is_alive(), "the second writer should wait for the first"
        first.commit()
        racer.join(timeout=30)
        assert errors == []
    finally:
        first.close()
        second.close()
    with world.db.admin() as admin:
        rows = admin.execute(
            "select object_value, lifecycle from vera.facts where group_id = %s and predicate = 'RUNS_ON'",
            (group,),
        ).fetchall()
    assert sorted(lifecycle for _, lifecycle in rows) == ["published", "superseded"]
