"""The MCP server's reads (sql/functions/210-213): get_fact, get_evidence,
explain_fact, get_entity, get_source, explore, changes and conflicts, in SQL
as the application login and through the client. Each answers as the caller:
another tenant's id gives exactly the answer of an id that exists nowhere."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest

from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World, caller
from vera_client.client import VeraClient
from vera_client.domain.errors import InvalidArgumentError, NotFoundError, PermissionDeniedError


def _call(conn: psycopg.Connection, function: str, *positional: Any, **named: Any) -> list[dict[str, Any]]:
    arguments = [f"%(p{i})s" for i in range(len(positional))] + [f"{n} => %({n})s" for n in named]
    params = {f"p{i}": value for i, value in enumerate(positional)} | named
    cursor = conn.execute(f"select * from vera.{function}({', '.join(arguments)})", params)  # type: ignore[arg-type]
    columns = [column.name for column in cursor.description or []]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


@dataclass
class Loaded:
    group: str
    cmdb: UUID
    wiki: UUID
    episode: UUID
    blue: UUID
    green: UUID
    green_again: UUID
    purple: UUID
    chain: list[UUID]
    started: datetime


@pytest.fixture(scope="module")
def loaded(owner_a: VeraClient, world: World) -> Loaded:
    """A project: billing-api ran on blue, then green (functional); a wiki says green too; a tier-3
    source says purple (pending review), the workspace's wiki says green; a chain a -> b -> c -> d of DEPENDS_ON; all committed."""
    started = datetime.now(UTC) - timedelta(seconds=1)
    group = owner_a.create_group(world.a.organisation, "project", "knowledge reads")
    owner_a.declare_predicate(group, "runs on", "functional")
    cmdb = owner_a.register_source(group, "cmdb", "cmdb", 1)
    episode = owner_a.record_episode(group, cmdb, "export", b"1" * 32, title="CMDB export").episode_id
    owner_a.store_chunks(
        group, episode, [{"text": "billing-api moved from cluster blue to cluster green in March."}]
    )
    # each span quotes its claim's subject and object (one that does not is a proposal: publish_claims)
    published = owner_a.publish(group, episode, [
        {"subject": "Billing-API", "predicate": "runs on", "object": "blue", "valid_from": "2026-01-01",
         "chunk": 0, "evidence_start": 0, "evidence_end": 35},
        {"subject": "billing-api", "predicate": "runs on", "object": "green", "valid_from": "2026-03-01",
         "chunk": 0, "evidence_start": 0, "evidence_end": 52},
        {"subject": "svc-a", "predicate": "depends on", "object": "svc-b", "object_is_entity": True},
        {"subject": "svc-b", "predicate": "depends on", "object": "svc-c", "object_is_entity": True},
        {"subject": "svc-c", "predicate": "depends on", "object": "svc-d", "object_is_entity": True},
        {"subject": "payments-api", "predicate": "depends on", "object": "billing-api", "object_is_entity": True},
    ])  # fmt: skip
    # the workspace's wiki says so too (in the project it would supersede the CMDB's value)
    wiki = owner_a.register_source(world.a.workspace, "wiki", "wiki", 2)
    wiki_page = owner_a.record_episode(world.a.workspace, wiki, "billing.md", b"2" * 32).episode_id
    [again] = owner_a.publish(world.a.workspace, wiki_page, [
        {"subject": "billing-api", "predicate": "runs on", "object": "green", "valid_from": "2026-03-01"}])  # fmt: skip
    rumours = owner_a.register_source(group, "notes", "notes", 3)
    note = owner_a.record_episode(group, rumours, "note.md", b"3" * 32).episode_id
    [purple] = owner_a.publish(
        group, note, [{"subject": "billing-api", "predicate": "runs on", "object": "purple"}]
    )
    assert purple.lifecycle == "pending_review"
    return Loaded(
        group=group, cmdb=cmdb, wiki=wiki, episode=episode, blue=published[0].fact_id,
        green=published[1].fact_id, green_again=again.fact_id, purple=purple.fact_id,
        chain=[p.fact_id for p in published[2:5]], started=started,
    )  # fmt: skip


def _b_fact(world: World) -> UUID:
    with world.db.admin() as conn:
        row = conn.execute(
            "select fact_id from vera.facts where group_id = %s", (world.b.organisation,)
        ).fetchone()
    assert row is not None
    return UUID(str(row[0]))


def _b_entity_and_source(world: World) -> tuple[UUID, UUID]:
    with world.db.admin() as conn:
        row = conn.execute(
            "select e.entity_id, s.source_id from vera.entities e join vera.sources s using (group_id) "
            "where e.group_id = %s limit 1",
            (world.b.organisation,),
        ).fetchone()
    assert row is not None
    return UUID(str(row[0])), UUID(str(row[1]))


# --- get_fact, get_evidence -------------------------------------------------------------------------


def test_a_fact_with_its_citation_and_evidence(world: World, loaded: Loaded) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        [fact] = _call(conn, "get_fact", loaded.green)
        [evidence] = _call(conn, "get_evidence", loaded.green)
        [old] = _call(conn, "get_fact", loaded.blue, groups=[loaded.group])
    assert (fact["subject"], fact["predicate"], fact["object"], fact["lifecycle"]) == (
        "Billing-API", "RUNS_ON", "green", "published",
    )  # fmt: skip
    assert fact["tier"] == 1 and fact["authority"] == pytest.approx(1.0) and fact["valid_to"] is None
    assert fact["citation"]["source"]["name"] == "cmdb"
    assert fact["citation"]["episode"]["external_id"] == "export"
    assert fact["citation"]["evidence"]["text"] == "billing-api moved from cluster blue to cluster green"
    assert old["lifecycle"] == "superseded" and old["valid_to"] is not None
    assert (evidence["source_name"], evidence["tier"], evidence["external_id"], evidence["version"]) == (
        "cmdb", 1, "export", 1,
    )  # fmt: skip
    assert evidence["chunk_text"].startswith("billing-api moved from cluster blue")
    assert (evidence["evidence_start"], evidence["evidence_end"], evidence["evidence_text"]) == (
        0, 52, "billing-api moved from cluster blue to cluster green",
    )  # fmt: skip
    assert evidence["observed_at"] is not None and evidence["recorded_at"] is not None


def test_the_timeline_of_a_fact(world: World, loaded: Loaded) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        green = _call(conn, "explain_fact", loaded.green)
        blue = _call(conn, "explain_fact", loaded.blue)
    assert [(r["relation"], r["fact_id"]) for r in green] == [
        ("fact", loaded.green), ("supporting", loaded.green_again), ("superseded", loaded.blue),
    ]  # fmt: skip
    assert green[1]["citation"]["source"]["name"] == "wiki"
    assert green[2]["citation"]["evidence"]["text"] == "billing-api moved from cluster blue"
    assert [(r["relation"], r["fact_id"]) for r in blue] == [
        ("fact", loaded.blue),
        ("superseding", loaded.green),
    ]


# --- get_entity, get_source -------------------------------------------------------------------------


def test_an_entity_its_aliases_and_its_facts_as_subject_and_object(world: World, loaded: Loaded) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        rows = _call(conn, "get_entity", "BILLING-API", groups=[loaded.group])
        then = _call(conn, "get_entity", "billing-api", groups=[loaded.group], as_of="2026-02-01")
        by_id = _call(conn, "get_entity", str(rows[0]["entity_id"]))
    assert {r["canonical_name"] for r in rows} == {"Billing-API"}
    assert {alias.casefold() for alias in rows[0]["aliases"]} == {"billing-api"}
    assert [(r["role"], r["predicate"], r["object"]) for r in rows] == [
        ("subject", "RUNS_ON", "green"), ("object", "DEPENDS_ON", "Billing-API"),
    ]  # fmt: skip
    assert [(r["role"], r["object"]) for r in then if r["role"] == "subject"] == [("subject", "blue")]
    assert {r["entity_id"] for r in by_id} == {rows[0]["entity_id"]}


def test_a_source_with_its_versions_and_freshness(world: World, loaded: Loaded) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        [source] = _call(conn, "get_source", loaded.cmdb)
    assert (source["name"], source["kind"], source["trust_tier"], source["episode_count"]) == (
        "cmdb",
        "cmdb",
        1,
        1,
    )
    assert [e["external_id"] for e in source["episodes"]] == ["export"]
    assert source["episodes"][0]["retracted"] is False and source["episodes"][0]["title"] == "CMDB export"
    assert source["last_recorded_at"] is not None and source["age_seconds"] >= 0


# --- explore ---------------------------------------------------------------------------------------


def test_explore_goes_breadth_first_one_hop_at_a_time(world: World, loaded: Loaded) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        hops = {d: _call(conn, "explore", "svc-a", d, groups=[loaded.group]) for d in (1, 2, 3, 5)}
        from_b = _call(conn, "explore", "SVC-B", 1, groups=[loaded.group])
        capped = _call(conn, "explore", "svc-a", 5, groups=[loaded.group], max_rows=2)
    assert [(r["hop"], r["fact_id"]) for r in hops[1]] == [(1, loaded.chain[0])]
    assert [(r["hop"], r["fact_id"]) for r in hops[2]] == [(1, loaded.chain[0]), (2, loaded.chain[1])]
    assert [(r["hop"], r["fact_id"]) for r in hops[3]] == [(h + 1, f) for h, f in enumerate(loaded.chain)]
    assert hops[5] == hops[3]
    # b is the object of a's fact and the subject of its own: both at hop 1, ordered by subject
    assert [(r["hop"], r["subject"]) for r in from_b] == [(1, "svc-a"), (1, "svc-b")]
    assert capped == hops[3][:2]
    assert hops[1][0]["citation"]["source"]["name"] == "cmdb"


# --- changes, conflicts ----------------------------------------------------------------------------


def test_changes_newest_first_and_conflicts_side_by_side(world: World, loaded: Loaded) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        changes = _call(conn, "changes", loaded.started, groups=[loaded.group], max_rows=1000)
        conflicts = _call(conn, "conflicts", groups=[loaded.group])
        later = _call(conn, "changes", datetime.now(UTC) + timedelta(hours=1), groups=[loaded.group])
    kinds = {(c["change"], c["fact_id"]) for c in changes}
    assert ("published", loaded.green) in kinds and ("superseded", loaded.blue) in kinds
    assert ("published", loaded.purple) not in kinds  # pending review: not published
    assert [c["at"] for c in changes] == sorted((c["at"] for c in changes), reverse=True)
    assert later == []
    assert [(c["conflict"], c["object"], c["lifecycle"]) for c in conflicts] == [
        (1, "green", "published"), (1, "purple", "pending_review"),
    ]  # fmt: skip
    assert [c["source_name"] for c in conflicts] == ["cmdb", "notes"]
    # across the project and the workspace, the wiki's green is one more value beside them
    assert "wiki" in {c["source_name"] for c in _conflicts_everywhere(world, loaded)}


def test_a_retraction_shows_in_changes(world: World, loaded: Loaded) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        before = datetime.now(UTC) - timedelta(seconds=1)
        conn.execute("select vera.retract_source(%s, %s, 'wrong')", (world.a.workspace, loaded.wiki))
        changes = _call(conn, "changes", before, groups=[world.a.workspace])
    assert ("retracted", loaded.green_again) in {(c["change"], c["fact_id"]) for c in changes}


def _conflicts_everywhere(world: World, loaded: Loaded) -> list[dict[str, Any]]:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        return _call(conn, "conflicts", groups=[loaded.group, world.a.workspace])


# --- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "positional", "named", "sqlstate", "words"),
    [
        ("get_fact", (None,), {}, "22023", "required"),
        ("get_fact", (uuid.uuid4(),), {"groups": []}, "22023", "groups"),
        ("get_evidence", (None,), {}, "22023", "required"),
        ("explain_fact", (None,), {}, "22023", "required"),
        ("get_entity", ("",), {}, "22023", "required"),
        ("get_entity", ("x" * 501,), {}, "22001", "500"),
        ("get_entity", ("x",), {"max_rows": 0}, "22023", "max_rows"),
        ("get_entity", ("x",), {"as_of": "infinity"}, "22023", "as_of"),
        ("get_source", (None,), {}, "22023", "required"),
        ("get_source", (uuid.uuid4(),), {"max_episodes": 1001}, "22023", "max_episodes"),
        ("explore", ("svc-a", 0), {}, "22023", "between 1 and 5"),
        ("explore", ("svc-a", 6), {}, "22023", "between 1 and 5"),
        ("explore", ("svc-a", None), {}, "22023", "between 1 and 5"),
        ("explore", ("svc-a", 2), {"max_rows": 1001}, "22023", "max_rows"),
        ("explore", ("svc-a", 2), {"as_of": "-infinity"}, "22023", "as_of"),
        ("changes", (None,), {}, "22023", "since"),
        ("changes", ("infinity",), {}, "22023", "since"),
        ("changes", ("2026-01-01",), {"max_rows": 0}, "22023", "max_rows"),
        ("conflicts", (), {"max_rows": 0}, "22023", "max_rows"),
    ],
)
def test_bad_arguments_get_a_clear_error(
    world: World, function: str, positional: tuple[Any, ...], named: dict[str, Any], sqlstate: str, words: str
) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as raised:
        _call(conn, function, *positional, **named)
    assert raised.value.sqlstate == sqlstate
    message = raised.value.diag.message_primary or ""
    assert words in message and len(message) < 300


@pytest.mark.parametrize(
    ("function", "positional"),
    [
        ("get_fact", (uuid.uuid4(),)),
        ("get_evidence", (uuid.uuid4(),)),
        ("explain_fact", (uuid.uuid4(),)),
        ("get_entity", ("x",)),
        ("get_source", (uuid.uuid4(),)),
        ("explore", ("x", 1)),
        ("changes", ("2026-01-01",)),
        ("conflicts", ()),
    ],
)
def test_unauthenticated_calls_are_refused(world: World, function: str, positional: tuple[Any, ...]) -> None:
    with caller(world.db, None, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as raised:
        _call(conn, function, *positional)
    assert raised.value.sqlstate == "VA005"


# --- isolation --------------------------------------------------------------------------------------


def _refusal(conn: psycopg.Connection, function: str, *positional: Any) -> tuple[str | None, str]:
    conn.execute("savepoint attempt")
    try:
        _call(conn, function, *positional)
    except psycopg.Error as error:
        conn.execute("rollback to savepoint attempt")
        return error.sqlstate, error.diag.message_primary or ""
    raise AssertionError(f"{function} answered for {positional}")


def test_another_tenants_ids_answer_as_ids_that_exist_nowhere(world: World, loaded: Loaded) -> None:
    foreign_fact = _b_fact(world)
    foreign_entity, foreign_source = _b_entity_and_source(world)
    nowhere = uuid.uuid4()
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        for function in ("get_fact", "get_evidence", "explain_fact"):
            theirs = _refusal(conn, function, foreign_fact)
            none = _refusal(conn, function, nowhere)
            assert theirs[0] == none[0] == "VN001"
            assert theirs[1].replace(str(foreign_fact), "?") == none[1].replace(str(nowhere), "?")
        theirs = _refusal(conn, "get_source", foreign_source)
        none = _refusal(conn, "get_source", nowhere)
        assert theirs[0] == none[0] == "VN001"
        assert theirs[1].replace(str(foreign_source), "?") == none[1].replace(str(nowhere), "?")
        for function, extra in (("get_entity", ()), ("explore", (3,))):
            theirs = _refusal(conn, function, str(foreign_entity), *extra)
            none = _refusal(conn, function, str(nowhere), *extra)
            assert theirs[0] == none[0] == "VN001"
            assert theirs[1].replace(str(foreign_entity), "?") == none[1].replace(str(nowhere), "?")
        conn.execute("savepoint attempt")
        with pytest.raises(psycopg.Error) as foreign_group:
            _call(conn, "changes", "2026-01-01", groups=[world.b.organisation])
        conn.execute("rollback to savepoint attempt")
        assert foreign_group.value.sqlstate == "42501"


def test_the_same_name_in_another_tenant_is_never_reached(world: World, loaded: Loaded) -> None:
    # both tenants hold payments-api (RUNS_ON cluster blue) in their organisation and workspace
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        explored = _call(conn, "explore", "payments-api", 5, max_rows=1000)
        entity = _call(conn, "get_entity", "payments-api")
        changes = _call(conn, "changes", "1900-01-01", max_rows=1000)
        conflicts = _call(conn, "conflicts", max_rows=1000)
    mine = set(world.a.groups) | {loaded.group}
    assert explored and {r["group_id"] for r in explored} <= mine
    assert {r["entity_group_id"] for r in entity} <= mine and {r["group_id"] for r in entity} - {None} <= mine
    assert {c["group_id"] for c in changes} <= mine
    assert {c["group_id"] for c in conflicts} <= mine
    # from billing-api in the project, payments-api is reached through DEPENDS_ON, in the project only
    assert world.b.organisation not in {r["group_id"] for r in explored}


# --- through the client ------------------------------------------------------------------------------


def test_the_client_reads_the_same_and_maps_errors(owner_a: VeraClient, world: World, loaded: Loaded) -> None:
    fact = owner_a.get_fact(loaded.green)
    assert (fact.subject, fact.object, fact.lifecycle, fact.tier) == ("Billing-API", "green", "published", 1)
    assert (
        owner_a.get_evidence(loaded.green).evidence_text
        == "billing-api moved from cluster blue to cluster green"
    )
    assert [(t.relation, t.fact_id) for t in owner_a.explain_fact(loaded.blue)] == [
        ("fact", loaded.blue),
        ("superseding", loaded.green),
    ]
    [entity] = owner_a.get_entity("billing-api", groups=[loaded.group])
    assert entity.canonical_name == "Billing-API" and {f.role for f in entity.facts} == {"subject", "object"}
    source = owner_a.get_source(loaded.cmdb)
    assert source.name == "cmdb" and [v.external_id for v in source.versions] == ["export"]
    assert source.versions[0].observed_at.tzinfo is not None
    explored = owner_a.explore("svc-a", depth=3, groups=[loaded.group])
    assert [e.hop for e in explored] == [1, 2, 3]
    assert all(c.at > loaded.started for c in owner_a.changes(loaded.started, groups=[loaded.group]))
    assert {c.object for c in owner_a.conflicts(groups=[loaded.group])} == {"green", "purple"}
    with pytest.raises(NotFoundError):
        owner_a.get_fact(_b_fact(world))
    with pytest.raises(InvalidArgumentError, match="between 1 and 5"):
        owner_a.explore("svc-a", depth=6)
    with pytest.raises(PermissionDeniedError):
        owner_a.conflicts(groups=[world.b.organisation])
