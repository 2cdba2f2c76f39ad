"""The graph projection end to end (sql/functions/230_graph.sql, the worker's
project_to_graph and retract_cleanup jobs, `vera graph rebuild|check`,
explore through the graph), on both real graph servers (FalkorDB from its
wheel, Neo4j from its Maven artifacts), and the SQL side's access rules:
only the worker and operators read a group's projection, and a worker
acting for a principal reads only that principal's groups."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID, uuid4

import psycopg
import pytest
from click.testing import CliRunner

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN, APP_LOGIN_LIMITS
from pg_tests.support.seed import World, caller
from vera_cli.main import main
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.embedded import APP_ROLE
from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.postgres.logins import create_app_login
from vera_client.api.reads import ExploredFact
from vera_client.client import VeraClient
from vera_client.domain.graph import EdgeState
from vera_client.domain.ports import GraphStore
from vera_worker.adapters.queue import (
    GRAPH_CHECK_QUEUE,
    GRAPH_CHECK_TASK,
    SERVED_QUEUES,
    build_app,
    served_queues,
)
from vera_worker.adapters.queue_metrics import BacklogMonitor, database_graph_health
from vera_worker.domain.jobs import ProjectJob
from vera_worker.graph.graphiti_model import graph_group_id
from vera_worker.graph.projection import GraphProjection
from vera_worker.graph.stores import open_graph_store

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


def _env(world: World, **extra: str) -> dict[str, str]:
    """The `vera` command's settings for this module's database (the session's embedded server)."""
    return {
        "VERA_DB__DATA_DIR": str(world.db.server.data_dir), "VERA_DB__PORT": str(world.db.server.port),
        "VERA_DB__DATABASE": world.db.name, "VERA_DB__DSN": "", "VERA_DB__ADMIN_DSN": "", **extra,
    }  # fmt: skip


# --- projection lag ------------------------------------------------------------------------------


def test_projection_lag_is_the_age_of_the_oldest_due_job(world: World, owner_a: VeraClient) -> None:
    group = owner_a.create_group(world.a.organisation, "project", "lagging")
    source = owner_a.register_source(group, "cmdb", "cmdb", 1)
    episode = owner_a.record_episode(group, source, "export", b"9" * 32).episode_id
    owner_a.publish(group, episode, [{"subject": "lag-a", "predicate": "depends on", "object": "lag-b"}])
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
    status = CliRunner().invoke(main, ["db", "status"], env=_env(world))
    assert status.exit_code == 0, status.output
    assert re.search(r"graph projection lag +\d+ jobs due, oldest \d+s ago", status.stdout), status.stdout


# --- on both graph servers ---------------------------------------------------------------------


def _store(backend_url: tuple[str, str]) -> GraphStore:
    backend, url = backend_url
    return open_graph_store(backend, url)


@pytest.fixture
def graph(graph_backend_url: tuple[str, str]) -> Iterator[GraphStore]:
    store = _store(graph_backend_url)
    yield store
    store.close()


@pytest.fixture
def projection(worker_sql: Executor, graph: GraphStore) -> GraphProjection:
    return GraphProjection(worker_sql, graph)


def _drain(world: World, projection: GraphProjection, tmp_path: Path) -> None:
    """A real Procrastinate worker runs every due projection and cleanup job."""
    app = build_app(
        world.db.dsn(WORKER), objects=LocalObjectStore(tmp_path / "objects"), projection=projection,
        graph_check_cron=None,
    )  # fmt: skip

    async def work() -> None:
        async with app.open_async():
            await app.run_worker_async(
                queues=["project_to_graph", "retract_cleanup"], wait=False, install_signal_handlers=False
            )

    asyncio.run(work())


@dataclass
class Loaded:
    group: str
    cmdb: UUID
    episode: UUID
    blue: UUID
    green: UUID
    pending: UUID


def _load(world: World, name: str) -> Loaded:
    """A project of tenant A: billing-api ran on blue, then green (functional); a chain of
    DEPENDS_ON into ledger-db; a literal value; a tier-3 claim waiting for review."""
    with client_for(world, world.a.owner_key) as vera:
        group = vera.create_group(world.a.organisation, "project", name)
        vera.set_setting(group, "retract.cleanup_delay_seconds", 0)
        vera.declare_predicate(group, "runs on", "functional")
        cmdb = vera.register_source(group, "cmdb", "cmdb", 1)
        episode = vera.record_episode(group, cmdb, "export", uuid4().bytes * 2).episode_id
        published = vera.publish(group, episode, [
            {"subject": "billing-api", "predicate": "runs on", "object": "blue", "valid_from": "2026-01-01"},
            {"subject": "billing-api", "predicate": "runs on", "object": "green", "valid_from": "2026-03-01"},
            {"subject": "payments-api", "predicate": "depends on", "object": "billing-api", "object_is_entity": True},
            # VERA's own vectors travel into the graph (Graphiti's fact_embedding and name_embedding)
            {"subject": "billing-api", "predicate": "depends on", "object": "ledger-db", "object_is_entity": True},
            {"subject": "checkout-web", "predicate": "depends on", "object": "payments-api", "object_is_entity": True,
             "embedding": [0.6, 0.8, 0.0], "subject_embedding": [0.0, 0.6, 0.8]},
            {"subject": "ledger-db", "predicate": "owned by", "object": "team-ledger", "object_is_entity": True},
            {"subject": "ledger-db", "predicate": "version", "object": "15.4"},
        ], embedding_model="test-3d")  # fmt: skip
        notes = vera.register_source(group, "notes", "notes", 3)
        note = vera.record_episode(group, notes, "note.md", uuid4().bytes * 2).episode_id
        [pending] = vera.publish(
            group, note, [{"subject": "ledger-db", "predicate": "runs on", "object": "purple"}]
        )
    return Loaded(
        group=group, cmdb=cmdb, episode=episode, blue=published[0].fact_id, green=published[1].fact_id,
        pending=pending.fact_id,
    )  # fmt: skip


def _projection_jobs(world: World, group: str) -> list[tuple[str, dict[str, object]]]:
    """The project_to_graph jobs of a group, oldest first: (lock, args)."""
    with world.db.admin() as admin:
        return admin.execute(  # type: ignore[return-value]
            "select lock, args from procrastinate.procrastinate_jobs "
            "where task_name = 'vera.project_to_graph' and args ->> 'group_id' = %s order by id",
            (group,),
        ).fetchall()


def _states(graph: GraphStore, group: str) -> dict[UUID, EdgeState]:
    return {state.fact_id: state for state in graph.edge_states(group)}


def _texts(graph: GraphStore, group: str) -> str:
    """Every string property of the group's nodes and edges, joined (what the graph remembers)."""
    graph_group = graph_group_id(group)
    rows = [
        *graph._run(graph_group, "MATCH (n) WHERE n.group_id = $g RETURN properties(n) AS p", {"g": graph_group},
                    write=False),  # type: ignore[attr-defined]
        *graph._run(graph_group, "MATCH ()-[e]->() WHERE e.group_id = $g RETURN properties(e) AS p",
                    {"g": graph_group}, write=False),  # type: ignore[attr-defined]
    ]  # fmt: skip
    return "\n".join(str(value) for row in rows for value in row["p"].values() if isinstance(value, str))


def test_a_published_episode_is_projected_and_a_replay_changes_nothing(
    world: World, graph: GraphStore, projection: GraphProjection, tmp_path: Path
) -> None:
    loaded = _load(world, f"projected {graph.backend}")
    _drain(world, projection, tmp_path)
    first = projection.check(loaded.group)
    assert first.result.drift is None, first.result
    assert first.result.graph_edges == 7  # the pending claim is not there
    # billing-api, blue, green, payments-api, ledger-db, checkout-web, team-ledger, "15.4"
    assert first.result.graph_nodes == 8
    assert loaded.pending not in _states(graph, loaded.group)
    [depends] = graph._run(  # type: ignore[attr-defined]
        graph_group_id(loaded.group),
        "MATCH (s)-[e:RELATES_TO]->() WHERE e.group_id = $g AND e.name = 'DEPENDS_ON' AND s.name = 'checkout-web' "
        "RETURN e.fact_embedding AS fact, s.name_embedding AS subject",
        {"g": graph_group_id(loaded.group)}, write=False,
    )  # fmt: skip
    assert [round(x, 5) for x in depends["fact"]] == [0.6, 0.8, 0.0]
    assert [round(x, 5) for x in depends["subject"]] == [0.0, 0.6, 0.8]
    # every job again, in the order they came: nothing changes
    jobs = _projection_jobs(world, loaded.group)
    assert jobs
    for _lock, args in jobs:
        projection.project(ProjectJob.from_job_args(args))
    again = projection.check(loaded.group)
    assert (again.graph_digest, again.result.graph_nodes) == (first.graph_digest, first.result.graph_nodes)
    assert again.result.drift is None
    # the jobs left their connection in the worker's pool for the next one; if the server ended
    # it meanwhile (a restart, an idle timeout), the pool's check finds it and the next job gets another
    with world.db.admin() as admin:
        [[ended]] = admin.execute(
            "select count(*) filter (where pg_terminate_backend(pid)) from pg_stat_activity "
            "where usename = %s and datname = current_database()",
            (WORKER,),
        ).fetchall()
    assert ended >= 1
    projection.project(ProjectJob.from_job_args(jobs[0][1]))
    assert projection.check(loaded.group).result.drift is None


def test_a_superseded_fact_is_invalidated_not_deleted(
    world: World, owner_a: VeraClient, graph: GraphStore, projection: GraphProjection, tmp_path: Path
) -> None:
    loaded = _load(world, f"superseded {graph.backend}")
    _drain(world, projection, tmp_path)
    states = _states(graph, loaded.group)
    assert states[loaded.blue].valid_to == datetime(2026, 3, 1, tzinfo=UTC)
    assert states[loaded.green].valid_to is None
    then = owner_a.explore_graph(graph, "billing-api", depth=1, as_of=datetime(2026, 2, 1, tzinfo=UTC))
    now = owner_a.explore_graph(graph, "billing-api", depth=1)
    assert "blue" in {fact.object for fact in then} and "green" not in {fact.object for fact in then}
    assert "green" in {fact.object for fact in now} and "blue" not in {fact.object for fact in now}


def test_explore_through_the_graph_answers_as_sql_explore(
    world: World, owner_a: VeraClient, graph: GraphStore, projection: GraphProjection, tmp_path: Path,
    graph_backend_url: tuple[str, str],
) -> None:  # fmt: skip
    loaded = _load(world, f"parity {graph.backend}")
    _drain(world, projection, tmp_path)
    for entity in ("ledger-db", "billing-api", "checkout-web", "team-ledger"):
        for depth in (1, 2, 3):
            for as_of in (None, datetime(2026, 2, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)):
                instant = as_of or datetime.now(UTC)
                walked = owner_a.explore_graph(
                    graph, entity, depth=depth, as_of=instant, groups=[loaded.group]
                )
                expected = owner_a.explore(entity, depth=depth, as_of=instant, groups=[loaded.group])
                assert walked == expected, (entity, depth, as_of)
    # what depends on ledger-db, two hops: billing-api, then payments-api
    answer = owner_a.explore_graph(graph, "ledger-db", depth=2, groups=[loaded.group])
    depends = {(f.hop, f.subject) for f in answer if f.predicate == "DEPENDS_ON"}
    assert depends == {(1, "billing-api"), (2, "payments-api")}
    # the command line walks the same graph, as the key's principal, through the embedded
    # server's own application login (made by `vera db migrate`, which this module skips)
    create_app_login(world.db.admin_dsn, APP_ROLE, APP_LOGIN_LIMITS, exists_ok=True)
    backend, url = graph_backend_url
    env = _env(world, VERA_MEMORY__GRAPH_BACKEND=backend, VERA_MEMORY__GRAPH_URL=url,
               VERA_API_KEY=world.a.owner_key)  # fmt: skip
    shown = CliRunner().invoke(
        main, ["graph", "explore", "ledger-db", "--depth", "2", "--group", loaded.group], env=env
    )
    assert shown.exit_code == 0, shown.output
    assert "hop 1  billing-api DEPENDS_ON ledger-db  [cmdb]" in shown.stdout
    assert "hop 2  payments-api DEPENDS_ON billing-api  [cmdb]" in shown.stdout
    assert len(shown.stdout.splitlines()) == len(answer)


def test_retraction_and_erasure_remove_edges_orphans_and_every_text(
    world: World, owner_a: VeraClient, graph: GraphStore, projection: GraphProjection, tmp_path: Path
) -> None:
    loaded = _load(world, f"erased {graph.backend}")
    wiki = owner_a.register_source(loaded.group, "wiki", "wiki", 2)
    secret = owner_a.record_episode(loaded.group, wiki, "vault.md", uuid4().bytes * 2).episode_id
    owner_a.publish(loaded.group, secret, [
        {"subject": "ledger-db", "predicate": "backed up by", "object": "vault-xq7", "object_is_entity": True,
         "fact_text": "ledger-db is backed up by vault-xq7 with passphrase hunter2"}])  # fmt: skip
    # a newer value of a functional predicate, then retracted: the older one holds again
    moved = owner_a.record_episode(loaded.group, wiki, "moved.md", uuid4().bytes * 2).episode_id
    owner_a.publish(loaded.group, moved, [{"subject": "billing-api", "predicate": "runs on", "object": "red",
                                       "valid_from": "2026-05-01"}])  # fmt: skip
    _drain(world, projection, tmp_path)
    before = projection.check(loaded.group).result
    assert before.drift is None and "hunter2" in _texts(graph, loaded.group)
    assert _states(graph, loaded.group)[loaded.green].valid_to == datetime(2026, 5, 1, tzinfo=UTC)
    owner_a.erase_episode(loaded.group, secret, "a secret was pasted")
    owner_a.retract_episode(loaded.group, moved, "wrong")
    _drain(world, projection, tmp_path)
    after = projection.check(loaded.group).result
    assert after.drift is None, after
    assert (after.graph_edges, after.graph_nodes) == (before.graph_edges - 2, before.graph_nodes - 2)
    remembered = _texts(graph, loaded.group)
    assert (
        "hunter2" not in remembered and "vault-xq7" not in remembered and "red" not in remembered.split("\n")
    )
    # the value the retracted one had superseded holds again, in the graph too
    assert _states(graph, loaded.group)[loaded.green].valid_to is None


def test_review_decisions_reach_the_graph(
    world: World, owner_a: VeraClient, graph: GraphStore, projection: GraphProjection, tmp_path: Path
) -> None:
    loaded = _load(world, f"reviewed {graph.backend}")
    owner_a.review(loaded.group, loaded.pending, "reject", "rumour")
    # an agent's proposal lives in its proposer's graph until decided
    proposal = owner_a.propose("ledger-db", "runs on", "cluster orange", "I saw it in a chat", loaded.group)
    _drain(world, projection, tmp_path)
    assert loaded.pending not in _states(graph, loaded.group)
    assert proposal.fact_id in _states(graph, world.a.owner_personal)
    owner_a.review(loaded.group, proposal.fact_id, "approve", "checked")
    withdrawn = owner_a.propose("ledger-db", "runs on", "cluster teal", "a hunch", loaded.group)
    _drain(world, projection, tmp_path)
    assert withdrawn.fact_id in _states(graph, world.a.owner_personal)
    owner_a.retract_proposal(withdrawn.fact_id)
    _drain(world, projection, tmp_path)
    assert proposal.fact_id not in _states(graph, world.a.owner_personal)
    assert withdrawn.fact_id not in _states(graph, world.a.owner_personal)
    assert "cluster orange" in {fact.object for fact in _explore(world, graph, "ledger-db", loaded.group)}
    assert projection.check(loaded.group).result.drift is None
    assert projection.check(world.a.owner_personal).result.drift is None


def test_a_vector_written_later_reaches_the_graph(
    world: World, graph: GraphStore, projection: GraphProjection, tmp_path: Path
) -> None:
    loaded = _load(world, f"embedded later {graph.backend}")
    _drain(world, projection, tmp_path)
    assert _fact_embedding(graph, loaded.group, loaded.green) is None
    # what the embed job does for facts published without a vector
    with caller(world.db, world.a.owner_key, APP_LOGIN) as conn:
        assert conn.execute(
            "select vera.set_fact_embeddings(%s, %s, array['[0,0,1]']::vector[], 'test-3d')",
            (loaded.group, [loaded.green]),
        ).fetchone() == (1,)
        conn.commit()
    _drain(world, projection, tmp_path)
    assert _fact_embedding(graph, loaded.group, loaded.green) == [0.0, 0.0, 1.0]


def _fact_embedding(graph: GraphStore, group: str, fact: UUID) -> list[float] | None:
    [row] = graph._run(  # type: ignore[attr-defined]
        graph_group_id(group), "MATCH ()-[e:RELATES_TO]->() WHERE e.group_id = $g AND e.uuid = $f "
        "RETURN e.fact_embedding AS v", {"g": graph_group_id(group), "f": str(fact)}, write=False,
    )  # fmt: skip
    return None if row["v"] is None else [round(float(x), 5) for x in row["v"]]


def _explore(world: World, graph: GraphStore, entity: str, group: str) -> list[ExploredFact]:
    with client_for(world, world.a.owner_key) as vera:
        return vera.explore_graph(graph, entity, depth=1, groups=[group])


def test_rebuild_is_exact_and_check_finds_tampering(
    world: World, graph: GraphStore, projection: GraphProjection, tmp_path: Path,
    graph_backend_url: tuple[str, str],
) -> None:  # fmt: skip
    loaded = _load(world, f"rebuilt {graph.backend}")
    _drain(world, projection, tmp_path)
    projected = projection.check(loaded.group)
    graph.drop_group(loaded.group)
    report = projection.rebuild(loaded.group)
    assert (report.edges, report.nodes) == (projected.result.graph_edges, projected.result.graph_nodes)
    rebuilt = projection.check(loaded.group)
    assert rebuilt.result.drift is None and rebuilt.graph_digest == projected.graph_digest
    # tampering: an edge lost, or an edge's validity changed behind VERA's back
    graph.remove_edges(loaded.group, [loaded.green])
    lost = projection.check(loaded.group)
    assert lost.result.drift is not None and "edges: 7 in PostgreSQL, 6 in the graph" in lost.result.drift
    # the command says so too, in one line per group, and exits 1
    backend, url = graph_backend_url
    env = _env(world, VERA_MEMORY__GRAPH_BACKEND=backend, VERA_MEMORY__GRAPH_URL=url)
    checked = CliRunner().invoke(main, ["graph", "check", "--group", loaded.group], env=env)
    assert checked.exit_code == 1 and "DRIFT" in checked.output, checked.output
    rebuilt_cli = CliRunner().invoke(main, ["graph", "rebuild", "--group", loaded.group], env=env)
    assert rebuilt_cli.exit_code == 0 and "7 edges, 8 nodes" in rebuilt_cli.output, rebuilt_cli.output
    fine = CliRunner().invoke(main, ["graph", "check", "--group", loaded.group, "--json"], env=env)
    assert fine.exit_code == 0, fine.output
    assert json.loads(fine.stdout)["drift"] is None
    with _as_worker(world, None) as conn:
        recorded = conn.execute(
            "select backend, sql_edges, graph_edges, drift from vera.graph_check_results() where group_id = %s",
            (loaded.group,),
        ).fetchone()
    assert recorded == (backend, 7, 7, None)


def test_a_walk_never_reaches_another_tenants_nodes(
    world: World,
    owner_b: VeraClient,
    owner_a: VeraClient,
    graph: GraphStore,
    projection: GraphProjection,
    tmp_path: Path,
) -> None:
    loaded = _load(world, f"tenancy {graph.backend}")
    source = owner_b.register_source(world.b.organisation, "cmdb", f"cmdb {graph.backend}", 1)
    episode = owner_b.record_episode(world.b.organisation, source, "x", uuid4().bytes * 2).episode_id
    [theirs] = owner_b.publish(world.b.organisation, episode, [
        {"subject": "ledger-db", "predicate": "depends on", "object": "owner_b-vault", "object_is_entity": True},
        {"subject": "billing-api", "predicate": "depends on", "object": "ledger-db", "object_is_entity": True},
    ])[:1]  # fmt: skip
    _drain(world, projection, tmp_path)
    assert theirs.fact_id in _states(graph, world.b.organisation)
    walked = owner_a.explore_graph(graph, "ledger-db", depth=5)
    assert world.b.organisation not in {fact.group_id for fact in walked}
    assert "bravo-vault" not in {fact.object for fact in walked}
    # the graph itself, asked from A's starting entity, stays in A's group
    with world.db.admin() as admin:
        a_start = admin.execute(
            "select e.entity_id from vera.entities e where e.group_id = %s and e.canonical_name = 'ledger-db'",
            (loaded.group,),
        ).fetchone()[0]  # type: ignore[index]
    reached = {step.fact_id for step in graph.explore([(loaded.group, a_start)], 5, datetime.now(UTC))}
    assert reached and theirs.fact_id not in reached
    assert reached <= set(_states(graph, loaded.group))


def test_the_worker_metrics_show_lag_and_drift(worker_sql: Executor) -> None:
    health = database_graph_health(worker_sql)
    monitor = BacklogMonitor(lambda: [], queues=("project_to_graph",), read_graph=health)
    monitor.refresh()
    lag = monitor.registry.get_sample_value("vera_graph_projection_lag_seconds")
    drift = monitor.registry.get_sample_value("vera_graph_drift")
    reading = health()
    assert lag is not None and lag == pytest.approx(reading.projection_lag_seconds, abs=5)
    assert drift == reading.drifted_groups


def test_the_periodic_check_records_every_group(
    world: World, graph: GraphStore, projection: GraphProjection, tmp_path: Path
) -> None:
    loaded = _load(world, f"periodic {graph.backend}")
    _drain(world, projection, tmp_path)
    app = build_app(
        world.db.dsn(WORKER), objects=LocalObjectStore(tmp_path / "objects"), projection=projection
    )
    assert served_queues(app) == (*SERVED_QUEUES, GRAPH_CHECK_QUEUE)
    [periodic] = [
        task for task in app.periodic_registry.periodic_tasks.values() if task.task.name == GRAPH_CHECK_TASK
    ]
    assert periodic.cron == "*/10 * * * *"
    graph.remove_edges(loaded.group, [loaded.blue])  # drift the check must find
    app.tasks[GRAPH_CHECK_TASK](timestamp=0)
    with _as_worker(world, None) as conn:
        results = {r[0]: r[1] for r in conn.execute("select group_id, drift from vera.graph_check_results()")}
    assert loaded.group in results and results[loaded.group] is not None
    assert world.a.organisation in results  # every group with facts, the seeded ones too
    # without a graph, no periodic check and no extra queue
    plain = build_app(world.db.dsn(WORKER), objects=LocalObjectStore(tmp_path / "objects"))
    assert GRAPH_CHECK_TASK not in plain.tasks and served_queues(plain) == SERVED_QUEUES


def test_a_groups_projection_jobs_run_one_at_a_time_and_a_retraction_defers_one(
    world: World, owner_a: VeraClient
) -> None:
    loaded = _load(world, "locked jobs")
    owner_a.retract_episode(loaded.group, loaded.episode, "withdrawn")
    jobs = _projection_jobs(world, loaded.group)
    # Procrastinate runs jobs of one lock one at a time, in the order they were deferred
    assert {lock for lock, _ in jobs} == {f"graph:{loaded.group}"}
    # the retraction's job names every fact of the episode, so no earlier job can leave one behind
    named = jobs[-1][1]["fact_ids"]
    assert str(loaded.blue) in named and str(loaded.green) in named and len(named) == 7
