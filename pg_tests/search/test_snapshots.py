"""Snapshots (sql/functions/200_snapshots.sql): a copy taken in one
REPEATABLE READ transaction answers later exactly as search answered then,
and refuses to answer once its pins no longer hold."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.clients import client_for
from pg_tests.support.databases import INSPECTOR
from pg_tests.support.searching import MODEL, embed, vector_literal
from pg_tests.support.searching import search as live_search
from pg_tests.support.seed import World
from pg_tests.support.writes import claim, publish, record_episode, register_source
from vera_client.domain.context import ASSEMBLER_VERSION
from vera_client.domain.errors import SnapshotPolicyChangedError, SnapshotStaleError

QUERY = "where does billing-api run"


@pytest.fixture(scope="module")
def group(world: World) -> str:
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        project = conn.execute(
            "select vera.create_group(%s, 'project', 'snapshots')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        conn.execute("select vera.declare_predicate(%s, 'runs on', 'functional')", (project,))
        cmdb = register_source(conn, project, "cmdb", 1)
        episode, _, _ = record_episode(conn, project, cmdb, "export", "v1")
        publish(conn, project, episode, [
            claim("billing-api", "runs on", "k8s-old", valid_from="2026-01-01",
                  fact_text="billing-api runs on k8s-old", embedding=embed("billing-api runs on k8s-old")),
            claim("billing-api", "owned by", "payments", fact_text="billing-api owned by payments",
                  embedding=embed("billing-api owned by payments")),
        ], MODEL)  # fmt: skip
        conn.execute(
            "select vera.store_chunks(%s, %s, %s, %s)",
            (project, episode, Jsonb([{"text": "billing-api runbook: restart the pods",
                                       "embedding": embed("billing-api runbook: restart the pods")}]), MODEL),
        )  # fmt: skip
        conn.commit()
    return project


def _rows(cursor: psycopg.Cursor[Any]) -> list[dict[str, Any]]:
    columns = [column.name for column in cursor.description or []]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def _search_snapshot(
    conn: psycopg.Connection, group: str, name: str, query: str = QUERY
) -> list[dict[str, Any]]:
    return _rows(conn.execute(
        "select * from vera.search_snapshot(%s, %s, %s, %s::vector)",
        (group, name, query, vector_literal(embed(query))),
    ))  # fmt: skip


def _authenticated(conn: psycopg.Connection, key: str, isolation: str = "read committed") -> None:
    conn.execute(f"begin isolation level {isolation}")  # type: ignore[arg-type]
    conn.execute("select vera.authenticate(%s)", (key,))


def test_a_snapshot_answers_as_search_did_when_it_was_taken(world: World, group: str) -> None:
    with world.db.connect(INSPECTOR, autocommit=True) as conn:
        _authenticated(conn, world.a.owner_key, "repeatable read")
        live = live_search(conn, QUERY, embedding=embed(QUERY), groups=[group])
        created = _rows(conn.execute("select * from vera.create_snapshot(%s, 'before-migration')", (group,)))[
            0
        ]
        assert created["item_count"] == 3
        conn.execute("commit")

        # later writes: a new value supersedes the old one, a vote, new weights
        _authenticated(conn, world.a.owner_key)
        source = conn.execute(
            "select source_id from vera.sources where group_id = %s and name = 'cmdb'", (group,)
        ).fetchone()[0]  # type: ignore[index]
        episode = conn.execute(
            "select episode_id from vera.episodes where group_id = %s and source_id = %s", (group, source)
        ).fetchone()[0]  # type: ignore[index]
        publish(conn, group, episode, [claim("billing-api", "runs on", "k8s-new", fact_text="billing-api runs on k8s-new",
                                             embedding=embed("billing-api runs on k8s-new"))], MODEL)  # fmt: skip
        conn.execute("commit")

        _authenticated(conn, world.a.owner_key)
        now = live_search(conn, QUERY, embedding=embed(QUERY), groups=[group])
        frozen = _search_snapshot(conn, group, "before-migration")
        conn.execute("commit")

    assert "billing-api runs on k8s-new" in [hit["text"] for hit in now]
    assert frozen == live
    listed = None
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.viewer_key)
        listed = _rows(conn.execute("select * from vera.list_snapshots(%s)", (group,)))
        conn.execute("commit")
    assert [(s["name"], s["sealed"], s["item_count"], s["embedding_dim"]) for s in listed] == [
        ("before-migration", True, 3, 16)
    ]
    assert listed[0]["weights"]["relevance"] == pytest.approx(0.32)


def test_a_snapshot_needs_repeatable_read(world: World, group: str) -> None:
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.owner_key)
        with pytest.raises(psycopg.Error, match="REPEATABLE READ") as error:
            conn.execute("select * from vera.create_snapshot(%s, 'rc')", (group,))
        assert error.value.sqlstate == "25000"
        conn.execute("rollback")


def test_snapshot_names_are_unique_and_unknown_ones_are_reported(world: World, group: str) -> None:
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.owner_key, "repeatable read")
        conn.execute("select * from vera.create_snapshot(%s, 'twice')", (group,))
        with pytest.raises(psycopg.errors.UniqueViolation, match="already has a snapshot named twice"):
            conn.execute("select * from vera.create_snapshot(%s, 'twice')", (group,))
        conn.execute("rollback")
        _authenticated(conn, world.a.owner_key)
        with pytest.raises(psycopg.Error, match="no snapshot named nope") as error:
            _search_snapshot(conn, group, "nope")
        assert error.value.sqlstate == "VN001"
        conn.execute("rollback")


def _take(world: World, group: str, name: str) -> None:
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.owner_key, "repeatable read")
        conn.execute("select * from vera.create_snapshot(%s, %s)", (group, name))
        conn.execute("commit")


def _refusal(world: World, group: str, name: str) -> psycopg.Error:
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.viewer_key)
        with pytest.raises(psycopg.Error) as error:
            _search_snapshot(conn, group, name)
        conn.execute("rollback")
    return error.value


def test_an_unsealed_snapshot_fails_closed(world: World, group: str) -> None:
    _take(world, group, "interrupted")
    with world.db.admin() as admin:  # what a copy that never completed leaves behind
        admin.execute("update vera.snapshots set sealed_at = null where name = 'interrupted'")
    error = _refusal(world, group, "interrupted")
    assert error.sqlstate == "VS002"
    assert "not sealed" in str(error)


def test_a_snapshot_of_another_search_version_fails_closed(world: World, group: str) -> None:
    _take(world, group, "old-code")
    with world.db.admin() as admin:  # as if taken before vera-search/5 gave the candidate pool a floor
        admin.execute("update vera.snapshots set search_version = 'vera-search/4' where name = 'old-code'")
    with world.db.admin() as admin:
        [(running,)] = admin.execute("select vera.search_version()").fetchall()
    assert running != "vera-search/4"
    error = _refusal(world, group, "old-code")
    assert error.sqlstate == "VS001"
    assert f"search version vera-search/4, this database runs {running}" in str(error)


def test_a_snapshot_of_another_embedding_model_fails_closed(world: World, group: str) -> None:
    _take(world, group, "old-model")
    with world.db.admin() as admin:
        admin.execute("update vera.snapshots set embedding_model = 'retired-model' where name = 'old-model'")
    error = _refusal(world, group, "old-model")
    assert error.sqlstate == "VS001"
    assert "embedding model retired-model" in str(error)


def test_other_tenants_cannot_search_or_list_a_snapshot(world: World, group: str) -> None:
    _take(world, group, "private")
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.b.owner_key)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            _search_snapshot(conn, group, "private")
        conn.execute("rollback")
        _authenticated(conn, world.b.owner_key)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select * from vera.list_snapshots(%s)", (group,))
        conn.execute("rollback")


def test_dropping_a_snapshot_removes_its_copies(world: World, group: str) -> None:
    _take(world, group, "to-drop")
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.owner_key)
        conn.execute("select vera.drop_snapshot(%s, 'to-drop')", (group,))
        conn.execute("commit")
    with world.db.admin() as admin:
        assert admin.execute(
            "select count(*) from vera.snapshot_items i join vera.snapshots s using (group_id, snapshot_id)"
            " where s.name = 'to-drop'"
        ).fetchone() == (0,)


# -- pins: the ontology, the policy and the assembler (issue 30) --------------------------------------


def _pin_changes(world: World, group: str, name: str) -> list[tuple[str, str]]:
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.viewer_key)
        rows = conn.execute(
            "select pin, code from vera.snapshot_pin_changes(%s, %s)", (group, name)
        ).fetchall()
        conn.execute("commit")
    return [(pin, code) for pin, code in rows]


def _listed(world: World, group: str, name: str) -> dict[str, Any]:
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.viewer_key)
        listed = _rows(conn.execute("select * from vera.list_snapshots(%s)", (group,)))
        conn.execute("commit")
    return next(s for s in listed if s["name"] == name)


def _as_owner(world: World, statement: str, params: tuple[Any, ...]) -> None:
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.owner_key)
        conn.execute(statement, params)
        conn.execute("commit")


def test_a_snapshot_pins_the_ontology_the_policy_and_the_assembler(world: World, group: str) -> None:
    _take(world, group, "pinned")
    pins = _listed(world, group, "pinned")["pins"]
    assert {"RUNS_ON": "functional", "OWNED_BY": "multi"}.items() <= pins["ontology"].items()
    assert pins["policy"]["grading"] == "vera-grading/1"
    assert pins["policy"]["tier_authority"] == pytest.approx({"1": 1.0, "2": 0.85, "3": 0.7, "4": 0.4})
    assert pins["policy"]["settings"] == {
        "er.candidate_limit": 5, "er.semantic_candidate": 0.55, "er.semantic_link": 0.86,
        "er.trigram_link": 0.85, "judge.contradiction": False,
    }  # fmt: skip
    # the pins the search already had, in the same object
    with world.db.admin() as admin:
        assert (pins["search_version"],) == admin.execute("select vera.search_version()").fetchone()
    assert pins["embedding"] == {"model": MODEL, "dim": 16}
    assert _listed(world, group, "pinned")["stale_pins"] == []
    assert _pin_changes(world, group, "pinned") == []


def test_the_database_pins_the_assembler_the_client_runs(world: World) -> None:
    with world.db.admin() as admin:
        assert admin.execute("select vera.assembler_version()").fetchone() == (ASSEMBLER_VERSION,)


def test_a_snapshot_whose_ontology_changed_fails_closed_and_new_predicates_do_not_matter(
    world: World, group: str
) -> None:
    _as_owner(world, "select vera.declare_predicate(%s, 'deployed by', 'multi')", (group,))
    _take(world, group, "ontology")
    # a predicate declared since changes no pinned one
    _as_owner(world, "select vera.declare_predicate(%s, 'monitored by', 'multi')", (group,))
    assert _pin_changes(world, group, "ontology") == []

    _as_owner(world, "select vera.declare_predicate(%s, 'deployed by', 'functional')", (group,))
    error = _refusal(world, group, "ontology")
    assert error.sqlstate == "VS003"
    assert "predicate DEPLOYED_BY was multi, is now functional" in str(error)
    assert _pin_changes(world, group, "ontology") == [("ontology", "VS003")]
    assert _listed(world, group, "ontology")["stale_pins"] == ["ontology"]
    # a snapshot taken under the new ontology answers
    _take(world, group, "ontology-now")
    assert _pin_changes(world, group, "ontology-now") == []
    _as_owner(world, "select vera.declare_predicate(%s, 'deployed by', 'multi')", (group,))


def test_a_snapshot_whose_policy_changed_fails_closed_until_it_holds_again(world: World, group: str) -> None:
    _take(world, group, "policy")
    _as_owner(world, "select vera.set_setting(%s, 'er.trigram_link', '0.9')", (group,))
    try:
        error = _refusal(world, group, "policy")
        assert error.sqlstate == "VS004"
        assert "setting er.trigram_link was 0.85, is now 0.9" in str(error)
        assert _listed(world, group, "policy")["stale_pins"] == ["policy"]
    finally:
        _as_owner(world, "select vera.set_setting(%s, 'er.trigram_link', null)", (group,))
    # the pin compares values: back at 0.85, the snapshot answers again
    assert _pin_changes(world, group, "policy") == []

    # the grading rules of another version (as if taken before the rules changed)
    with world.db.admin() as admin:
        admin.execute(
            "update vera.snapshots set pins = jsonb_set(pins, '{policy,grading}', '\"vera-grading/0\"')"
            " where name = 'policy'"
        )
    error = _refusal(world, group, "policy")
    assert error.sqlstate == "VS004"
    assert 'grading was "vera-grading/0", is now "vera-grading/1"' in str(error)


def test_a_snapshot_of_another_assembler_fails_closed(world: World, group: str) -> None:
    _take(world, group, "old-assembler")
    with world.db.admin() as admin:
        admin.execute(
            "update vera.snapshots set pins = jsonb_set(pins, '{assembler}', '\"vera-context/0\"')"
            " where name = 'old-assembler'"
        )
    error = _refusal(world, group, "old-assembler")
    assert error.sqlstate == "VS005"
    assert "context assembler vera-context/0, this database runs vera-context/1" in str(error)


def test_a_snapshot_without_pins_fails_closed_and_every_changed_pin_is_named(
    world: World, group: str
) -> None:
    _take(world, group, "pinless")
    with world.db.admin() as admin:  # what a snapshot taken before 0009_snapshot_pins has
        admin.execute("update vera.snapshots set pins = null where name = 'pinless'")
    error = _refusal(world, group, "pinless")
    assert error.sqlstate == "VS001"
    assert "taken before snapshots pinned their ontology, policy and assembler version" in str(error)

    _take(world, group, "two-changes")
    with world.db.admin() as admin:
        admin.execute(
            "update vera.snapshots set pins = jsonb_set(jsonb_set(pins, '{assembler}', '\"vera-context/0\"'),"
            " '{ontology,RUNS_ON}', '\"multi\"') where name = 'two-changes'"
        )
    error = _refusal(world, group, "two-changes")
    assert error.sqlstate == "VS003"  # the first pin checked names the code; the message names both
    assert "ontology: predicate RUNS_ON was multi, is now functional" in str(error)
    assert "assembler: taken with context assembler vera-context/0" in str(error)
    assert _pin_changes(world, group, "two-changes") == [("ontology", "VS003"), ("assembler", "VS005")]


def test_the_client_raises_a_typed_error_naming_the_pin(world: World, group: str) -> None:
    _take(world, group, "typed")
    with world.db.admin() as admin:
        admin.execute(
            "update vera.snapshots set pins = jsonb_set(pins, '{policy,tier_authority,3}', '0.5') where name = 'typed'"
        )
    with client_for(world, world.a.viewer_key) as vera:
        with pytest.raises(SnapshotPolicyChangedError, match=r"tier 3 authority was 0\.5") as raised:
            vera.search_snapshot(group, "typed", QUERY)
        assert isinstance(raised.value, SnapshotStaleError)
        assert [s.stale_pins for s in vera.list_snapshots(group) if s.name == "typed"] == [["policy"]]


def test_other_tenants_cannot_read_pins(world: World, group: str) -> None:
    _take(world, group, "private-pins")
    for call in ("select vera.live_pins(%s)", "select * from vera.snapshot_pin_changes(%s, 'private-pins')"):
        with world.db.connect(autocommit=True) as conn:
            _authenticated(conn, world.b.owner_key)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(call, (group,))
            conn.execute("rollback")
    with world.db.connect(autocommit=True) as conn:
        _authenticated(conn, world.a.viewer_key)
        with pytest.raises(psycopg.Error, match="no snapshot named nope") as error:
            conn.execute("select * from vera.snapshot_pin_changes(%s, 'nope')", (group,))
        assert error.value.sqlstate == "VN001"
        conn.execute("rollback")
