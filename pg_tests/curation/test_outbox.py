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


def _job_rows(world: World, group: str, task: str) -> list[tuple[int, str, list[str]]]:
    """(id, status, fact_ids) of the group's jobs of task, in order."""
    with world.db.admin() as admin:
        return [
            (row[0], row[1], sorted(row[2]))
            for row in admin.execute(
                "select id, status::text, args -> 'fact_ids' from procrastinate.procrastinate_jobs"
                " where args ->> 'group_id' = %s and task_name = %s order by id", (group, task))
        ]  # fmt: skip


def _publish_one(world: World, group: str, subject: str) -> str:
    """One claim in its own transaction (a file of an ingestion); its fact id."""
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, group, f"docs-{subject}", 1)
        episode, _, _ = record_episode(conn, group, source, f"{subject}.md", subject)
        [row] = publish(conn, group, episode, [claim(subject, "runs on", "blue")])
        conn.commit()
    return str(row["fact_id"])


def test_a_groups_waiting_job_takes_the_next_writes(world: World) -> None:
    """An ingestion writes a file a transaction: the facts of the files written before a worker
    starts the group's projection (or embedding) go in one job, not one job per file."""
    group = create_project(world, "outbox-joined")
    facts = [_publish_one(world, group, f"svc-{n}") for n in range(3)]
    for task in ("vera.project_to_graph", "vera.embed"):
        [(_, status, fact_ids)] = _job_rows(world, group, task)
        assert (status, fact_ids) == ("todo", sorted(facts))


@pytest.mark.parametrize(
    "change",
    [
        "status = 'doing'",  # a worker took it: what it projects was read when it started
        "status = 'succeeded'",
        "attempts = 1, scheduled_at = now() + interval '1 minute'",  # waits for its retry
        "args = jsonb_set(args, '{principal_id}', to_jsonb(gen_random_uuid()::text))",  # another caller's
        "args = jsonb_set(args, '{fact_ids}', (select jsonb_agg(gen_random_uuid()) from generate_series(1, 50)))",
    ],
)
def test_a_job_that_is_not_waiting_as_it_was_takes_no_more(world: World, change: str) -> None:
    group = create_project(world, "outbox-not-joined")
    first = _publish_one(world, group, "api")
    with world.db.admin() as admin:
        admin.execute("set search_path = procrastinate, public")  # its triggers' functions name it so
        admin.execute(
            f"update procrastinate.procrastinate_jobs set {change}"
            " where args ->> 'group_id' = %s and task_name = 'vera.project_to_graph'", (group,))  # fmt: skip
    second = _publish_one(world, group, "web")
    jobs = _job_rows(world, group, "vera.project_to_graph")
    assert len(jobs) == 2
    assert jobs[1][2] == [second]
    assert first not in jobs[1][2] and second not in jobs[0][2]


def test_a_job_another_transaction_holds_is_left_to_it(world: World) -> None:
    """A worker taking the job, or another writer joining it, holds its row: the write defers a
    job of its own at once instead of waiting for that transaction (SKIP LOCKED)."""
    group = create_project(world, "outbox-held")
    first = _publish_one(world, group, "api")
    with world.db.admin(autocommit=False) as holder:
        holder.execute(
            "select 1 from procrastinate.procrastinate_jobs where args ->> 'group_id' = %s for update",
            (group,),
        )
        with caller(world.db, world.a.owner_key) as conn:
            conn.execute("set local lock_timeout = '2s'")
            source = register_source(conn, group, "docs-web", 1)
            episode, _, _ = record_episode(conn, group, source, "web.md", "web")
            [row] = publish(conn, group, episode, [claim("web", "runs on", "blue")])
            conn.commit()
        holder.rollback()
    assert [ids for _, _, ids in _job_rows(world, group, "vera.project_to_graph")] == [
        [first],
        [str(row["fact_id"])],
    ]


def test_a_rolled_back_write_leaves_the_waiting_job_as_it_was(world: World) -> None:
    group = create_project(world, "outbox-join-rollback")
    first = _publish_one(world, group, "api")
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, group, "docs-web", 1)
        episode, _, _ = record_episode(conn, group, source, "web.md", "web")
        publish(conn, group, episode, [claim("web", "runs on", "blue")])
        conn.rollback()
    assert [ids for _, _, ids in _job_rows(world, group, "vera.project_to_graph")] == [[first]]


def test_a_write_looks_for_a_waiting_job_among_the_newest_fifty_only(world: World) -> None:
    """The queue keeps its finished jobs and may hold a long backlog: a write reads no more than
    the 50 newest waiting jobs (Procrastinate's index of waiting jobs), so its cost does not grow
    with either; a job older than those gets no more items."""
    group = create_project(world, "outbox-window")
    first = _publish_one(world, group, "api")
    with world.db.admin() as admin:
        admin.execute("set search_path = procrastinate, public")  # its triggers' functions name it so
        admin.execute(
            "insert into procrastinate.procrastinate_jobs (queue_name, task_name, priority, args)"
            " select 'extract', 'vera.extract', 0, '{}'::jsonb from generate_series(1, %s)",
            (50,),
        )
    try:
        second = _publish_one(world, group, "web")
        third = _publish_one(world, group, "db")
    finally:  # no worker of another test may find them
        with world.db.admin() as admin:
            admin.execute("set search_path = procrastinate, public")
            admin.execute(
                "delete from procrastinate.procrastinate_jobs where task_name = 'vera.extract' and args = '{}'"
            )
    assert [ids for _, _, ids in _job_rows(world, group, "vera.project_to_graph")] == [
        [first],
        sorted([second, third]),
    ]
