"""Retraction and erasure (sql/functions/150_retract.sql), end to end."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import (
    SQL_ERRORS,
    claim,
    facts_of,
    functional_project,
    publish,
    record_episode,
    register_source,
)


def _project(conn: psycopg.Connection, world: World, name: str) -> str:
    return functional_project(conn, world.a.organisation, name)


def _job(world: World, job_id: int) -> tuple[str, str, dict[str, object], object]:
    with world.db.admin() as admin:
        row = admin.execute(
            "select task_name, status, args, scheduled_at > now() from procrastinate.procrastinate_jobs where id = %s",
            (job_id,),
        ).fetchone()
    assert row is not None
    return row  # type: ignore[return-value]


def test_retracting_an_episode_takes_its_facts_out_and_restores_what_they_superseded(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = _project(conn, world, "retract-episode")
        cmdb = register_source(conn, group, "cmdb", 1, kind="cmdb")
        wiki = register_source(conn, group, "wiki", 2)
        old, _, _ = record_episode(conn, group, cmdb, "export", "x")
        new, _, _ = record_episode(conn, group, wiki, "migration.md", "y")
        publish(conn, group, old, [claim("api", "runs on", "blue", valid_from="2026-01-01")])
        [moved] = publish(conn, group, new, [claim("api", "runs on", "green", valid_from="2026-03-01")])
        job = conn.execute("select vera.retract_episode(%s, %s, 'wrong page')", (group, new)).fetchone()[0]  # type: ignore[index]
        history = facts_of(conn, "f.group_id = %s and f.predicate = 'RUNS_ON'", (group,))
        assert [(f["object_value"], f["lifecycle"], f["valid_to"]) for f in history] == [
            ("blue", "published", None), ("green", "retracted", None)]  # fmt: skip
        status = conn.execute("select status from vera.episodes where episode_id = %s", (new,)).fetchone()
        assert status == ("retracted",)
        audit = conn.execute("select detail from vera.audit_log where group_id = %s and action = 'episode.retract'",
                             (group,)).fetchone()  # fmt: skip
        assert audit is not None
        assert audit[0]["reason"] == "wrong page"
        conn.commit()
    task, state, args, later = _job(world, job)
    assert (task, state, later) == ("vera.retract_cleanup", "todo", True)
    assert args["edge_ids"] == [str(moved["fact_id"])]
    assert args["object_keys"] == []  # retraction keeps the raw bytes


def test_retracting_a_source_withdraws_all_its_episodes_and_refuses_new_ones(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = _project(conn, world, "retract-source")
        source = register_source(conn, group, "jira", 2, kind="jira")
        one, _, _ = record_episode(conn, group, source, "JIRA-1", "1")
        two, _, _ = record_episode(conn, group, source, "JIRA-2", "2")
        publish(conn, group, one, [claim("api", "tracked in", "JIRA-1")])
        publish(conn, group, two, [claim("api", "tracked in", "JIRA-2")])
        conn.execute("select vera.retract_source(%s, %s)", (group, source))
        assert {f["lifecycle"] for f in facts_of(conn, "f.group_id = %s", (group,))} == {"retracted"}
        with pytest.raises(SQL_ERRORS, match="retracted") as raised:
            record_episode(conn, group, source, "JIRA-3", "3")
        assert raised.value.sqlstate == "22023"


def test_erasing_an_episode_deletes_it_and_everything_drawn_from_it(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = _project(conn, world, "erase")
        source = register_source(conn, group, "hr", 1, kind="hr")
        episode, _, _ = record_episode(conn, group, source, "person.md", "secret", object_key="raw/person.md")
        conn.execute("select * from vera.store_chunks(%s, %s, %s)",
                     (group, episode, Jsonb([{"text": "Jane Roe lives at 1 Secret Lane"}])))  # fmt: skip
        [fact] = publish(conn, group, episode, [claim("Jane Roe", "lives at", "1 Secret Lane", chunk=0)])
        # an agent's proposal drawn from the same episode, in a u: scope
        conn.commit()
    with world.db.admin() as admin:  # a snapshot copy and a vote citing it, as later issues will write them
        admin.execute(
            "insert into vera.snapshots (group_id, name, search_version) values (%s, 'before', 'v1')",
            (group,),
        )
        admin.execute(
            """insert into vera.snapshot_items (group_id, snapshot_id, item_kind, item_id, text, tsv, recorded_at, episode_id)
               select %s, snapshot_id, 'fact', %s, 'Jane Roe lives at 1 Secret Lane', to_tsvector('x'), now(), %s
               from vera.snapshots where group_id = %s""",
            (group, fact["fact_id"], episode, group),
        )
        admin.execute(
            """insert into vera.feedback (group_id, principal_id, item_kind, item_id, query_text, query_sha256, vote, signals)
               values (%s, %s, 'fact', %s, 'where does jane live', sha256('q'), 1, '{1,1,1,1,1,1,NULL}')""",
            (group, world.a.owner, fact["fact_id"]))  # fmt: skip
    with caller(world.db, world.a.owner_key) as conn:
        job = conn.execute("select vera.erase_episode(%s, %s, 'GDPR request')", (group, episode)).fetchone()[
            0
        ]  # type: ignore[index]
        conn.commit()
    with world.db.admin() as admin:
        for table in ("episodes", "chunks", "facts", "snapshot_items", "feedback"):
            count = admin.execute(
                f"select count(*) from vera.{table} where group_id = %s", (group,)
            ).fetchone()
            assert count == (0,), table
        leftovers = admin.execute(
            "select count(*) from vera.facts where fact_text like '%%Secret Lane%%' or object_value like '%%Secret%%'"
        ).fetchone()
        assert leftovers == (0,)
    _, _, args, _ = _job(world, job)
    assert args["object_keys"] == ["raw/person.md"]
    assert args["edge_ids"] == [str(fact["fact_id"])]
    assert args["erase"] is True


def test_erasing_keeps_raw_bytes_that_another_episode_still_references(world: World) -> None:
    """A record deleted and restored unchanged is a new version under the same object key."""
    with caller(world.db, world.a.owner_key) as conn:
        group = _project(conn, world, "erase-shared-bytes")
        source = register_source(conn, group, "wiki", 2)
        first, _, _ = record_episode(conn, group, source, "page.md", "same", object_key="raw/page")
        conn.execute("select vera.retract_episode(%s, %s)", (group, first))
        _, version, created = record_episode(conn, group, source, "page.md", "same", object_key="raw/page")
        assert (created, version) == (True, 2)
        record_episode(conn, group, source, "other.md", "other", object_key="raw/other")
        job = conn.execute("select vera.erase_episode(%s, %s)", (group, first)).fetchone()[0]  # type: ignore[index]
        both = conn.execute("select vera.erase_source(%s, %s)", (group, source)).fetchone()[0]  # type: ignore[index]
        conn.commit()
    assert _job(world, job)[2]["object_keys"] == []  # version 2 still holds raw/page
    assert _job(world, both)[2]["object_keys"] == ["raw/other", "raw/page"]


def test_erasing_a_source_removes_the_source_too(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = _project(conn, world, "erase-source")
        source = register_source(conn, group, "tmp", 1)
        episode, _, _ = record_episode(conn, group, source, "a", "a")
        publish(conn, group, episode, [claim("a", "b", "c")])
        conn.execute("select vera.erase_source(%s, %s)", (group, source))
        assert conn.execute("select count(*) from vera.sources where group_id = %s", (group,)).fetchone() == (
            0,
        )
        assert conn.execute("select count(*) from vera.facts where group_id = %s", (group,)).fetchone() == (
            0,
        )


def test_erasure_reaches_proposals_drawn_from_the_episode(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = _project(conn, world, "erase-proposals")
        source = register_source(conn, group, "chat", 4, kind="slack")
        episode, _, _ = record_episode(conn, group, source, "m1", "m")
        [proposal] = publish(conn, group, episode, [claim("Jane Roe", "phone", "555-0100")])
        assert proposal["fact_group_id"] == world.a.owner_personal
        conn.execute("select vera.erase_episode(%s, %s)", (group, episode))
        assert facts_of(conn, "f.fact_id = %s", (proposal["fact_id"],)) == []


def test_complete_cleanup_retires_the_job(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = _project(conn, world, "cleanup")
        source = register_source(conn, group, "s", 1)
        episode, _, _ = record_episode(conn, group, source, "a", "a")
        publish(conn, group, episode, [claim("a", "b", "c")])
        job = conn.execute("select vera.retract_episode(%s, %s)", (group, episode)).fetchone()[0]  # type: ignore[index]
        conn.commit()
    with caller(world.db, world.b.owner_key) as conn, pytest.raises(SQL_ERRORS) as raised:
        conn.execute("select vera.complete_cleanup(%s)", (job,))
    assert raised.value.sqlstate == "VN001"
    with caller(world.db, world.a.owner_key) as conn:
        assert conn.execute("select vera.complete_cleanup(%s)", (job,)).fetchone() == (True,)
        assert conn.execute("select vera.complete_cleanup(%s)", (job,)).fetchone() == (False,)
        conn.commit()
    assert _job(world, job)[1] == "succeeded"


@pytest.mark.parametrize(
    "statement",
    [
        "select vera.retract_episode(%s, %s)",
        "select vera.erase_episode(%s, %s)",
        "select vera.retract_source(%s, %s)",
        "select vera.erase_source(%s, %s)",
    ],
)
@pytest.mark.parametrize("who", ["viewer", "other tenant"])
def test_only_scope_admins_retract_or_erase(world: World, statement: str, who: str) -> None:
    with world.db.admin() as admin:
        source, episode = admin.execute(
            "select source_id, episode_id from vera.episodes where group_id = %s limit 1",
            (world.a.organisation,),
        ).fetchone()  # type: ignore[misc]
    target = source if "source" in statement else episode
    key = world.a.viewer_key if who == "viewer" else world.b.owner_key
    with caller(world.db, key) as conn, pytest.raises(SQL_ERRORS) as raised:
        conn.execute(statement, (world.a.organisation, target))  # type: ignore[arg-type]
    assert raised.value.sqlstate == "42501"


def test_unknown_episode_or_source_is_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        for statement in ("select vera.retract_episode(%s, gen_random_uuid())",
                          "select vera.erase_source(%s, gen_random_uuid())"):  # fmt: skip
            with pytest.raises(SQL_ERRORS) as raised:
                conn.execute(statement, (world.a.organisation,))  # type: ignore[arg-type]
            assert raised.value.sqlstate == "VN001"
            conn.rollback()
            conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
