"""The transactional outbox (sql/functions/080_outbox.sql): jobs commit and
roll back with the writes that need them."""

from __future__ import annotations

import pytest
from psycopg import sql

from pg_tests.support.seed import World, caller, create_project
from pg_tests.support.writes import claim, publish, record_episode, register_source


def _jobs(world: World, group: str) -> list[tuple[str, dict[str, object]]]:
    with world.db.admin() as admin:
        return [
            (row[0], row[1])
            for row in admin.execute(
                "select task_name, args from procrastinate.procrastinate_jobs where args ->> 'group_id' = %s "
                "and queue_name = substr(task_name, 6) order by id", (group,))
        ]  # fmt: skip


def test_a_committed_publish_has_its_jobs(world: World) -> None:
    group = create_project(world, "outbox-commit")
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, group, "docs", 1)
        episode, _, _ = record_episode(conn, group, source, "a.md", "a")
        [row] = publish(conn, group, episode, [claim("api", "runs on", "blue")])
        conn.commit()
    jobs = _jobs(world, group)
    assert [task for task, _ in jobs] == ["vera.project_to_graph", "vera.embed"]
    assert jobs[0][1]["fact_ids"] == [str(row["fact_id"])]
    assert jobs[1][1]["fact_ids"] == [str(row["fact_id"])]


def test_a_rolled_back_publish_leaves_no_job(world: World) -> None:
    group = create_project(world, "outbox-rollback")
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, group, "docs", 1)
        episode, _, _ = record_episode(conn, group, source, "a.md", "a")
        publish(conn, group, episode, [claim("api", "runs on", "blue")])
        conn.rollback()
    assert _jobs(world, group) == []


def test_facts_with_embeddings_need_no_embed_job(world: World) -> None:
    group = create_project(world, "outbox-embedded")
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, group, "docs", 1)
        episode, _, _ = record_episode(conn, group, source, "a.md", "a")
        publish(conn, group, episode, [claim("api", "runs on", "blue", embedding=[0.6, 0.8])], "toy-2")
        conn.commit()
    assert [task for task, _ in _jobs(world, group)] == ["vera.project_to_graph"]


def test_pending_claims_are_not_projected(world: World) -> None:
    group = create_project(world, "outbox-pending")
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, group, "forum", 3)
        episode, _, _ = record_episode(conn, group, source, "thread", "t")
        publish(conn, group, episode, [claim("api", "runs on", "blue")])
        conn.commit()
    assert [task for task, _ in _jobs(world, group)] == ["vera.embed"]


def test_without_the_queue_the_write_fails_clearly(make_database) -> None:
    """A database migrated with psql alone, without Procrastinate's schema."""
    database = make_database()
    with database.admin() as admin:
        admin.execute("drop schema procrastinate cascade")
        key = admin.execute("select api_key from vera.create_tenant('Q', 'O')").fetchone()[0]  # type: ignore[index]
    with caller(database, key) as conn:
        personal = conn.execute(
            "select group_id from vera.whoami() where group_kind = 'personal'"
        ).fetchone()[0]  # type: ignore[index]
        with pytest.raises(Exception, match="job queue") as raised:
            publish(conn, personal, None, [claim("a", "b", "c")])
        assert raised.value.sqlstate == "VJ001"  # type: ignore[attr-defined]


def test_another_tenants_jobs_announce_nothing_to_listeners(world: World) -> None:
    """Procrastinate would NOTIFY every new job's id on channels any connection may LISTEN to;
    VERA drops those triggers (its workers poll), so a tenant learns nothing of others' writes."""
    with world.db.connect(autocommit=True) as listener:
        for channel in ("procrastinate_any_queue_v1", "procrastinate_queue_v1#project_to_graph"):
            listener.execute(sql.SQL("listen {}").format(sql.Identifier(channel)))
        with caller(world.db, world.b.owner_key) as conn:
            conn.execute(
                "select vera.publish_claims(%s, null, %s::jsonb)",
                (
                    world.b.organisation,
                    '[{"subject": "quiet-api", "predicate": "runs on", "object": "blue"}]',
                ),
            )
            conn.commit()
        assert list(listener.notifies(timeout=1.0)) == []
    with world.db.admin() as admin:
        assert (
            admin.execute(
                "select count(*) from procrastinate.procrastinate_jobs where args ->> 'group_id' like 'u:%%'"
                " or args ->> 'group_id' = %s",
                (world.b.organisation,),
            ).fetchone()[0]
            > 0
        )  # type: ignore[index]  # the jobs were deferred; only the announcement is gone
