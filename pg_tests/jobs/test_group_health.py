"""A group's health for its admins (sql/functions/265_group_health.sql): the jobs of the
groups the caller administers, per queue and state with the stalled ones, and their graph
checks. Procrastinate's tables have no row-level security, so the function's own filter is
all that keeps another tenant's jobs out of the counts: the tests put jobs of both tenants
(and one of no group) in the queue and check that each tenant counts exactly its own, that a
tenant's answer does not move when the other's queue grows, and that viewers, members and
strangers are refused alike."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import errors

from pg_tests.support.seed import World, caller
from vera_client.api import health as health_api
from vera_client.client import VeraClient
from vera_client.domain.errors import InvalidArgumentError, PermissionDeniedError

pytestmark = pytest.mark.pg


def _job(admin: psycopg.Connection, queue: str, group: str | None, *, status: str = "todo",
         later: bool = False, worker: int | None = None) -> int:  # fmt: skip
    row = admin.execute(
        "insert into procrastinate.procrastinate_jobs (queue_name, task_name, args, status, scheduled_at, worker_id)"
        " values (%s, 'vera.' || %s, case when %s::text is null then '{}' else"
        " jsonb_build_object('group_id', %s::text, 'fact_ids', '[]'::jsonb) end, %s,"
        " case when %s then now() + interval '1 hour' end, %s)"
        " returning id",
        (queue, queue, group, group, status, later, worker),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _worker(admin: psycopg.Connection, silent_for: str) -> int:
    row = admin.execute(
        "insert into procrastinate.procrastinate_workers (last_heartbeat) values (now() - %s::interval)"
        " returning id",
        (silent_for,),
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture(scope="module")
def queued(world: World) -> Iterator[dict[str, Any]]:
    """A's organisation: 2 embed jobs due, 1 scheduled for later, 2 graph jobs running (one of a
    worker silent for two hours, one of a worker silent for five minutes: both stalled at the
    default 30 seconds), 1 extract job of its workspace due. B's organisation: 4 embed jobs due
    and 1 running of the silent worker. One job of no group."""
    with world.db.admin() as admin:
        admin.execute("set search_path = procrastinate, public")  # its triggers name its tables unqualified
        silent, quiet = _worker(admin, "2 hours"), _worker(admin, "5 minutes")
        a, b = world.a.organisation, world.b.organisation
        ids = [
            _job(admin, "embed", a), _job(admin, "embed", a), _job(admin, "embed", a, later=True),
            _job(admin, "project_to_graph", a, status="doing", worker=silent),
            _job(admin, "project_to_graph", a, status="doing", worker=quiet),
            _job(admin, "extract", world.a.workspace),
            *(_job(admin, "embed", b) for _ in range(4)),
            _job(admin, "project_to_graph", b, status="doing", worker=silent),
            _job(admin, "calibration", None),
        ]  # fmt: skip
        admin.execute(
            "insert into vera.graph_checks (group_id, backend, checked_at, sql_edges, graph_edges, sql_nodes,"
            " graph_nodes, sql_digest, graph_digest, drift) values"
            " (%s, 'falkordb', now(), 3, 2, 4, 4, 'x', 'y', 'edges differ: 1 missing'),"
            " (%s, 'falkordb', now(), 5, 5, 6, 6, 'z', 'z', null)",
            (a, b),
        )
    yield {"silent": silent, "quiet": quiet}
    with world.db.admin() as admin:
        admin.execute("set search_path = procrastinate, public")
        admin.execute("delete from procrastinate.procrastinate_jobs where id = any(%s)", (ids,))
        admin.execute("delete from procrastinate.procrastinate_workers where id in (%s, %s)", (silent, quiet))
        admin.execute("delete from vera.graph_checks where group_id in (%s, %s)", (a, b))


def _counts(rows: list[health_api.GroupJobs]) -> dict[tuple[str, str, str], tuple[int, int]]:
    return {(r.group_id, r.queue, r.state): (r.jobs, r.stalled) for r in rows}


def test_an_owner_counts_its_own_groups_jobs_and_no_other(
    world: World, queued: dict[str, Any], owner_a: VeraClient, owner_b: VeraClient
) -> None:
    a, b = world.a.organisation, world.b.organisation
    assert _counts(owner_a.group_jobs()) == {
        (a, "embed", "scheduled"): (1, 0),
        (a, "embed", "todo"): (2, 0),
        (world.a.workspace, "extract", "todo"): (1, 0),
        (a, "project_to_graph", "doing"): (2, 2),
    }
    assert _counts(owner_b.group_jobs()) == {
        (b, "embed", "todo"): (4, 0),
        (b, "project_to_graph", "doing"): (1, 1),
    }
    # the same, one group named; a group never named in a job answers nothing
    assert _counts(owner_a.group_jobs(world.a.workspace)) == {(world.a.workspace, "extract", "todo"): (1, 0)}
    assert owner_a.group_jobs(world.a.owner_personal) == []
    due = {r.state: r.oldest_due for r in owner_a.group_jobs(a) if r.queue == "embed"}
    assert due["todo"] is not None and due["scheduled"] is not None and due["scheduled"] > due["todo"]


def test_another_tenants_queue_growing_leaves_an_answer_alike(
    world: World, queued: dict[str, Any], owner_a: VeraClient
) -> None:
    before = _counts(owner_a.group_jobs())
    with world.db.admin() as admin:
        admin.execute("set search_path = procrastinate, public")
        extra = [_job(admin, "embed", world.b.organisation) for _ in range(3)]
        extra.append(_job(admin, "embed", world.b.workspace, status="doing", worker=queued["silent"]))
    try:
        assert _counts(owner_a.group_jobs()) == before
    finally:
        with world.db.admin() as admin:
            admin.execute("set search_path = procrastinate, public")
            admin.execute("delete from procrastinate.procrastinate_jobs where id = any(%s)", (extra,))


def test_a_job_is_stalled_by_the_threshold_asked(
    world: World, queued: dict[str, Any], owner_a: VeraClient
) -> None:
    """The quiet worker's heartbeat is five minutes old: its job is stalled at a threshold below
    that and not above; the silent worker's (two hours) at any threshold allowed."""
    key = (world.a.organisation, "project_to_graph", "doing")
    assert _counts(owner_a.group_jobs(world.a.organisation, stalled_after=3600))[key] == (2, 1)
    assert _counts(owner_a.group_jobs(world.a.organisation, stalled_after=60))[key] == (2, 2)
    for bad in (0.5, 3601.0):
        with pytest.raises(InvalidArgumentError):
            owner_a.group_jobs(stalled_after=bad)


def test_graph_checks_are_the_callers_groups_only(
    world: World, queued: dict[str, Any], owner_a: VeraClient, owner_b: VeraClient
) -> None:
    [mine] = owner_a.group_graph_checks()
    assert (mine.group_id, mine.sql_edges, mine.graph_edges, mine.drift) == (
        world.a.organisation, 3, 2, "edges differ: 1 missing",
    )  # fmt: skip
    [theirs] = owner_b.group_graph_checks()
    assert (theirs.group_id, theirs.drift) == (world.b.organisation, None)
    health = owner_a.group_health()
    assert health.graph_checks == [mine] and _counts(health.jobs) == _counts(owner_a.group_jobs())


@pytest.mark.parametrize("function", ["group_jobs", "group_graph_checks"])
def test_viewers_members_and_strangers_are_refused_alike(
    world: World, queued: dict[str, Any], function: str
) -> None:
    """42501 for a viewer of the group, a member of it, an owner of another tenant, and a group
    that exists nowhere, with the same words but the group's name."""
    cases = [
        (world.a.viewer_key, world.a.organisation),
        (world.b.owner_key, world.a.organisation),
        (world.a.owner_key, world.b.organisation),
        (world.a.owner_key, "g:does-not-exist"),
    ]
    messages = []
    for key, group in cases:
        with caller(world.db, key) as conn, pytest.raises(errors.InsufficientPrivilege) as refused:
            conn.execute(f"select * from vera.{function}(%s)", (group,))
        messages.append(str(refused.value).split("\n")[0].replace(group, "<group>"))
    assert len(set(messages)) == 1, messages
    with world.db.connect("vera_gateway") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.service,))
        with pytest.raises(errors.InsufficientPrivilege):  # a member of the workspace, not its admin
            conn.execute(f"select * from vera.{function}(%s)", (world.a.workspace,))
        conn.rollback()
    with caller(world.db, None) as conn, pytest.raises(psycopg.Error) as unauthenticated:
        conn.execute(f"select * from vera.{function}()")
    assert unauthenticated.value.sqlstate == "VA005"


def test_without_a_group_named_a_viewer_reads_only_the_groups_it_administers(
    world: World, queued: dict[str, Any]
) -> None:
    """A's viewer administers only its own personal scope (every principal owns one): asked
    for every group it administers, it is answered that scope's jobs (none), never the
    organisation's it views."""
    with caller(world.db, world.a.viewer_key) as conn:
        [administered] = conn.execute("select vera.administrable_groups()").fetchone()  # type: ignore[misc]
        assert administered and world.a.organisation not in administered
        assert conn.execute("select * from vera.group_jobs()").fetchall() == []
        assert conn.execute("select * from vera.group_graph_checks()").fetchall() == []


def test_the_client_raises_the_typed_refusal(
    world: World, queued: dict[str, Any], owner_b: VeraClient
) -> None:
    with pytest.raises(PermissionDeniedError):
        owner_b.group_health(world.a.organisation)
