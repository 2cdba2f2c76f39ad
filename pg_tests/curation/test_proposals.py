"""An agent's own claims (sql/functions/214_proposals.sql): propose,
retract_proposal, list_proposals. A proposal goes through the write path, so
the contamination guard holds exactly as in publish_claims: the claim waits in
the proposer's u: scope and in the named scope's review queue, and nobody else
finds it until a reviewer approves it."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, functional_project, publish, record_episode, register_source
from vera_client.client import VeraClient
from vera_client.domain.errors import InvalidArgumentError, NotFoundError, PermissionDeniedError


def _call(conn: psycopg.Connection, function: str, *positional: Any) -> list[dict[str, Any]]:
    arguments = ", ".join(f"%(p{i})s" for i in range(len(positional)))
    params = {f"p{i}": value for i, value in enumerate(positional)}
    cursor = conn.execute(f"select * from vera.{function}({arguments})", params)  # type: ignore[arg-type]
    columns = [column.name for column in cursor.description or []]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def _propose(
    conn: psycopg.Connection, group: str, obj: str = "red", evidence: str = "I saw it in #ops"
) -> dict[str, Any]:
    [proposal] = _call(conn, "propose", "billing-api", "runs on", obj, evidence, group)
    return proposal


@pytest.fixture(scope="module")
def service_key(world: World) -> str:
    """A key of tenant A's service account, a member of A's workspace only."""
    with world.db.admin() as conn:
        row = conn.execute(
            "select api_key from vera.issue_api_key(%s, 'proposals test', null)", (world.a.service,)
        )
        key = row.fetchone()
    assert key is not None
    return str(key[0])


def test_a_proposal_waits_in_the_proposers_scope_with_its_evidence(world: World) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        group = functional_project(conn, world.a.organisation, "proposals")
        proposal = _propose(conn, group)
        waiting = _call(conn, "pending_reviews", group)
        mine = _call(conn, "list_proposals", 100)
        [fact] = _call(conn, "get_fact", proposal["fact_id"])
        [evidence] = _call(conn, "get_evidence", proposal["fact_id"])
        in_scope = _call(conn, "read_facts", None, None, [group])
        searched = conn.execute(
            "select count(*) from vera.search('billing-api red', groups => %s)", ([world.a.owner_personal],)
        ).fetchone()
    assert (proposal["group_id"], proposal["proposed_for"], proposal["lifecycle"]) == (
        world.a.owner_personal, group, "proposal",
    )  # fmt: skip
    # the contamination guard: nothing landed in the shared scope
    assert in_scope == []
    assert [(w["fact_id"], w["origin"]["evidence"]) for w in waiting] == [
        (proposal["fact_id"], "I saw it in #ops")
    ]
    assert [(p["fact_id"], p["lifecycle"], p["evidence"], p["proposed_for"]) for p in mine] == [
        (proposal["fact_id"], "proposal", "I saw it in #ops", group),
    ]  # fmt: skip
    assert (fact["object"], fact["tier"], fact["verification"]) == ("red", 4, "pending")
    assert fact["citation"]["source"]["name"] == "proposals"
    assert (evidence["source_name"], evidence["chunk_text"]) == ("proposals", "I saw it in #ops")
    assert searched is not None and searched[0] >= 1  # the proposer finds its own proposal


def test_only_the_proposer_and_the_scopes_admins_see_it(world: World, service_key: str) -> None:
    with caller(world.db, service_key, role=APP_LOGIN) as conn:
        proposal = _propose(conn, world.a.workspace, "vermilion")
        conn.commit()
    try:
        with caller(world.db, world.a.viewer_key, role=APP_LOGIN) as conn:
            conn.execute("savepoint s")
            with pytest.raises(psycopg.Error) as viewer:
                _call(conn, "get_fact", proposal["fact_id"])
            conn.execute("rollback to savepoint s")
            found = conn.execute("select count(*) from vera.search('vermilion')").fetchone()
        with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
            waiting = _call(conn, "pending_reviews", world.a.workspace)
            [reviewed] = _call(conn, "get_fact", proposal["fact_id"])
        with (
            caller(world.db, world.b.owner_key, role=APP_LOGIN) as conn,
            pytest.raises(psycopg.Error) as other,
        ):
            _call(conn, "retract_proposal", proposal["fact_id"])
    finally:
        with caller(world.db, service_key, role=APP_LOGIN) as conn:
            _call(conn, "retract_proposal", proposal["fact_id"])
            conn.commit()
    assert viewer.value.sqlstate == "VN001"
    assert found is not None and found[0] == 0
    assert proposal["fact_id"] in {w["fact_id"] for w in waiting}
    # the scope's admin reads the proposal made for it (its names from the origin)
    assert (reviewed["subject"], reviewed["object"], reviewed["lifecycle"]) == (
        "billing-api",
        "vermilion",
        "proposal",
    )
    assert other.value.sqlstate == "VN001"


def test_approval_publishes_a_copy_and_the_proposal_says_accepted(world: World) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        group = functional_project(conn, world.a.organisation, "approved proposals")
        proposal = _propose(conn, group, "teal")
        [decided] = _call(conn, "review_claim", group, proposal["fact_id"], "approve", None)
        [state] = _call(conn, "list_proposals", 10)
        published = _call(conn, "read_facts", "billing-api", "runs on", [group])
    assert decided["result_group_id"] == group
    assert state["lifecycle"] == "accepted"
    assert [(f["object"], f["verification"]) for f in published] == [("teal", "human_verified")]


def test_a_competing_proposal_shows_in_conflicts(world: World) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        group = functional_project(conn, world.a.organisation, "conflicting proposals")
        source = register_source(conn, group, "cmdb", 1)
        episode, _, _ = record_episode(conn, group, source, "export", "green")
        publish(conn, group, episode, [claim("billing-api", "runs on", "green")])
        proposal = _propose(conn, group, "red")
        conflicts = _call(conn, "conflicts", 10, [group])
    assert [(c["object"], c["lifecycle"]) for c in conflicts] == [("green", "published"), ("red", "proposal")]
    assert conflicts[1]["fact_id"] == proposal["fact_id"] and conflicts[1]["source_name"] == "proposals"


def test_retracting_a_proposal_goes_through_the_retraction_path(world: World) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        group = functional_project(conn, world.a.organisation, "retracted proposals")
        proposal = _propose(conn, group)
        [retracted] = _call(conn, "retract_proposal", proposal["fact_id"])
        waiting = _call(conn, "pending_reviews", group)
        [state] = _call(conn, "list_proposals", 10)
        [source] = _call(conn, "get_source", proposal["source_id"])
        conn.execute("savepoint s")
        with pytest.raises(psycopg.Error) as again:
            _call(conn, "retract_proposal", proposal["fact_id"])
        conn.execute("rollback to savepoint s")
    assert retracted["lifecycle"] == "retracted" and state["lifecycle"] == "retracted"
    assert waiting == []
    assert [e["retracted"] for e in source["episodes"]] == [True]
    assert again.value.sqlstate == "22023"


@pytest.mark.parametrize(
    ("arguments", "sqlstate"),
    [
        (("", "runs on", "red", "seen", "GROUP"), "22023"),
        (("billing-api", "runs on", "  ", "seen", "GROUP"), "22023"),
        (("billing-api", "runs on", "red", "", "GROUP"), "22023"),
        (("billing-api", "!!!", "red", "seen", "GROUP"), "22023"),
        (("billing-api", "runs on", "red", "seen", None), "22023"),
        (("billing-api", "runs on", "red", "seen", "PERSONAL"), "22023"),
        (("x" * 501, "runs on", "red", "seen", "GROUP"), "22001"),
        (("billing-api", "runs on", "x" * 2001, "seen", "GROUP"), "22001"),
        (("billing-api", "runs on", "red", "x" * 20001, "GROUP"), "22001"),
        (("billing-api", "runs on", "red", "seen", "FOREIGN"), "42501"),
    ],
)
def test_bad_proposals_are_refused(world: World, arguments: tuple[Any, ...], sqlstate: str) -> None:
    stand_ins = {
        "GROUP": world.a.organisation,
        "PERSONAL": world.a.owner_personal,
        "FOREIGN": world.b.organisation,
    }
    resolved = tuple(stand_ins.get(a, a) if isinstance(a, str) else a for a in arguments)
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as raised:
        _call(conn, "propose", *resolved)
    assert raised.value.sqlstate == sqlstate
    assert len(raised.value.diag.message_primary or "") < 300


def test_viewers_list_bounds_and_anonymous_callers(world: World) -> None:
    with caller(world.db, world.a.viewer_key, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as viewer:
        _propose(conn, world.a.organisation)
    assert viewer.value.sqlstate == "42501"
    for bad in (0, 1001, None):
        with (
            caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn,
            pytest.raises(psycopg.Error) as raised,
        ):
            _call(conn, "list_proposals", bad)
        assert raised.value.sqlstate == "22023"
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as nowhere:
        _call(conn, "retract_proposal", uuid.uuid4())
    assert nowhere.value.sqlstate == "VN001"
    for function, arguments in (
        ("propose", ("a", "b", "c", "d", world.a.organisation)),
        ("retract_proposal", (uuid.uuid4(),)),
        ("list_proposals", (10,)),
    ):
        with caller(world.db, None, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as anonymous:
            _call(conn, function, *arguments)
        assert anonymous.value.sqlstate == "VA005"


def test_the_client_proposes_lists_and_retracts(owner_a: VeraClient, world: World) -> None:
    group = owner_a.create_group(world.a.organisation, "project", "client proposals")
    proposal = owner_a.propose("ledger-db", "owned by", "team ledger", "the on-call page says so", group)
    assert proposal.lifecycle == "proposal" and proposal.proposed_for == group
    assert proposal.fact_id in {p.fact_id for p in owner_a.list_proposals()}
    assert owner_a.retract_proposal(proposal.fact_id).lifecycle == "retracted"
    with pytest.raises(InvalidArgumentError):
        owner_a.retract_proposal(proposal.fact_id)
    with pytest.raises(NotFoundError):
        owner_a.retract_proposal(uuid.uuid4())
    with pytest.raises(PermissionDeniedError):
        owner_a.propose("a", "b", "c", "d", world.b.organisation)
