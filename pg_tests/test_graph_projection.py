"""The graph projection end to end (sql/functions/230_graph.sql, the worker's
project_to_graph and retract_cleanup jobs, `vera graph rebuild|check`,
explore through the graph), on both real graph servers (FalkorDB from its
wheel, Neo4j from its Maven artifacts), and the SQL side's access rules:
only the worker and operators read a group's projection, and a worker
acting for a principal reads only that principal's groups."""

from __future__ import annotations

from uuid import UUID, uuid4

import psycopg
import pytest

from pg_tests.databases import APP_LOGIN
from pg_tests.seed import World, caller
from vera_client.client import VeraClient

WORKER = "vera_worker"


def _as_worker(world: World, principal: UUID | None) -> psycopg.Connection:
    conn = psycopg.connect(world.db.dsn(WORKER))
    if principal is not None:
        conn.execute("select vera.authenticate_principal(%s)", (principal,))
    return conn


def _sqlstate(error: pytest.ExceptionInfo[psycopg.Error]) -> str | None:
    return error.value.sqlstate


# --- the SQL side: who may read a group's projection ----------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "select * from vera.graph_facts(%(g)s, '{}')",
        "select * from vera.graph_group_facts(%(g)s)",
        "select * from vera.graph_edge_states(%(g)s)",
        "select vera.graph_expected_nodes(%(g)s)",
        "select * from vera.graph_groups(%(g)s)",
        "select * from vera.graph_check_results()",
        "select * from vera.queue_lag()",
        "select vera.record_graph_check(%(g)s, 'neo4j', 0, 0, 0, 0, '', '', null)",
    ],
)
def test_no_application_role_may_read_a_projection(world: World, statement: str) -> None:
    # even for its own group: the projection's readers pass row-level security
    with caller(world.db, world.a.owner_key, APP_LOGIN) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(statement, {"g": world.a.organisation})
    assert _sqlstate(refused) == "42501"


def test_a_worker_acting_for_a_principal_reads_only_its_groups(world: World) -> None:
    with _as_worker(world, world.a.owner) as conn:
        own = conn.execute(
            "select fact_id, belongs from vera.graph_facts(%s, array(select fact_id from vera.facts))",
            (world.a.organisation,),
        ).fetchall()
        conn.rollback()
        # another tenant's group: refused as every write path refuses it
        for statement in (
            "select * from vera.graph_facts(%s, '{}')",
            "select * from vera.graph_group_facts(%s)",
            "select * from vera.graph_edge_states(%s)",
            "select vera.graph_expected_nodes(%s)",
            "select * from vera.graph_groups(%s)",
        ):
            conn.execute("select vera.authenticate_principal(%s)", (world.a.owner,))
            with pytest.raises(psycopg.Error) as refused:
                conn.execute(statement, (world.b.organisation,))
            assert _sqlstate(refused) == "42501", statement
            conn.rollback()
    with world.db.admin() as admin:
        b_facts = [r[0] for r in admin.execute(
            "select fact_id from vera.facts where group_id = %s", (world.b.organisation,)).fetchall()]  # fmt: skip
    assert len(own) == 1 and own[0][1] is True
    assert b_facts
    # another tenant's fact ids named in one's own group: simply not there
    with _as_worker(world, world.a.owner) as conn:
        assert (
            conn.execute("select * from vera.graph_facts(%s, %s)", (world.a.organisation, b_facts)).fetchall()
            == []
        )
        # every group at once is the worker's or an operator's own question, not a principal's
        with pytest.raises(psycopg.Error) as refused:
            conn.execute("select * from vera.graph_groups()")
        assert _sqlstate(refused) == "42501"


def test_the_worker_itself_reads_any_group_one_at_a_time(world: World) -> None:
    with _as_worker(world, None) as conn:
        groups = [r[0] for r in conn.execute("select * from vera.graph_groups()").fetchall()]
        assert {world.a.organisation, world.b.organisation} <= set(groups)
        rows = conn.execute(
            "select group_id, subject_name, object_name, object_id, belongs from vera.graph_group_facts(%s)",
            (world.b.organisation,),
        ).fetchall()
        assert rows == [(world.b.organisation, "payments-api", "cluster blue", None, True)]
        assert conn.execute("select vera.graph_expected_nodes(%s)", (world.b.organisation,)).fetchone() == (
            2,
        )
        with pytest.raises(psycopg.Error) as unknown:
            conn.execute("select * from vera.graph_groups('o:doesnotexist')")
        assert _sqlstate(unknown) == "VN001"
        conn.rollback()
        for bad in (0, 10001, None):
            with pytest.raises(psycopg.Error) as refused:
                conn.execute(
                    "select * from vera.graph_group_facts(%s, null, %s)", (world.b.organisation, bad)
                )
            assert _sqlstate(refused) == "22023"
            conn.rollback()


def test_explore_facts_never_returns_what_the_caller_cannot_read(world: World) -> None:
    with world.db.admin() as admin:
        b_fact = admin.execute(
            "select fact_id from vera.facts where group_id = %s", (world.b.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        a_fact = admin.execute(
            "select fact_id from vera.facts where group_id = %s", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
    with caller(world.db, world.a.owner_key, APP_LOGIN) as conn:
        rows = conn.execute(
            "select group_id, fact_id, hop from vera.explore_facts(%s, %s)",
            ([b_fact, a_fact, uuid4()], [1, 2, 1]),
        ).fetchall()
        assert rows == [(world.a.organisation, a_fact, 2)]
        with pytest.raises(psycopg.Error) as mismatched:
            conn.execute("select * from vera.explore_facts(%s, %s)", ([a_fact], [1, 2]))
        assert _sqlstate(mismatched) == "22023"


# --- projection lag ------------------------------------------------------------------------------


def test_projection_lag_is_the_age_of_the_oldest_due_job(world: World) -> None:
    with VeraClient(world.db.dsn(APP_LOGIN), world.a.owner_key) as vera:
        group = vera.create_group(world.a.organisation, "project", "lagging")
        source = vera.register_source(group, "cmdb", "cmdb", 1)
        episode = vera.record_episode(group, source, "export", b"9" * 32).episode_id
        vera.publish(group, episode, [{"subject": "lag-a", "predicate": "depends on", "object": "lag-b"}])
    with world.db.admin() as admin:
        # the job waited a minute already (its deferral moved back)
        admin.execute(
            "update procrastinate.procrastinate_events set at = now() - interval '60 seconds' "
            "where type = 'deferred' and job_id in (select id from procrastinate.procrastinate_jobs "
            "where task_name = 'vera.project_to_graph' and args ->> 'group_id' = %s)",
            (group,),
        )
    with _as_worker(world, None) as conn:
        lags = {r[0]: r for r in conn.execute("select * from vera.queue_lag()").fetchall()}
    waiting = lags["project_to_graph"]
    assert waiting[1] >= 1 and waiting[3] >= 59
    overall = lags[None]
    assert overall[1] >= waiting[1] and overall[3] >= waiting[3]
