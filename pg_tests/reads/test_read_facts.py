"""vera.read_facts (sql/functions/185_read_facts.sql): how a SQL application,
which may not select the tables, lists the facts that hold at an instant."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, functional_project, publish, record_episode, register_source

APPLICATION = APP_LOGIN


def _read(conn: psycopg.Connection, **arguments: Any) -> list[dict[str, Any]]:
    named = ", ".join(f"{name} => %({name})s" for name in arguments)
    cursor = conn.execute(f"select * from vera.read_facts({named})", arguments)  # type: ignore[arg-type]
    names = [column.name for column in cursor.description or []]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _project(conn: psycopg.Connection, world: World, name: str) -> str:
    group = functional_project(conn, world.a.organisation, name)
    source = register_source(conn, group, "cmdb", 1, kind="cmdb")
    episode, _, _ = record_episode(conn, group, source, "export", "x")
    publish(conn, group, episode, [
        claim("Billing-API", "runs on", "blue", valid_from="2026-01-01"),
        claim("billing-api", "runs on", "green", valid_from="2026-03-01"),
        claim("ledger-db", "owned by", "team ledger", valid_from="2026-01-01"),
    ])  # fmt: skip
    return group


def test_the_current_value_now_and_the_old_one_as_of_then(world: World) -> None:
    with caller(world.db, world.a.owner_key, role=APPLICATION) as conn:
        group = _project(conn, world, "read now and then")
        now = _read(conn, of_subject="BILLING-API", of_predicate="runs on", groups=[group])
        then = _read(
            conn, of_subject="billing-api", of_predicate="RUNS_ON", groups=[group], as_of="2026-02-01"
        )
    assert [(f["subject"], f["predicate"], f["object"], f["lifecycle"]) for f in now] == [
        ("Billing-API", "RUNS_ON", "green", "published")
    ]
    assert [(f["object"], f["lifecycle"]) for f in then] == [("blue", "superseded")]
    assert then[0]["valid_to"] is not None and then[0]["group_id"] == group


def test_every_fact_of_the_named_groups_in_order_and_bounded(world: World) -> None:
    with caller(world.db, world.a.owner_key, role=APPLICATION) as conn:
        group = _project(conn, world, "read all")
        every = _read(conn, groups=[group])
        first = _read(conn, groups=[group], max_rows=1)
        everywhere = _read(conn, max_rows=1000)
    assert [(f["subject"], f["object"]) for f in every] == [
        ("Billing-API", "green"),
        ("ledger-db", "team ledger"),
    ]
    assert first == every[:1]
    assert {f["group_id"] for f in everywhere} <= set(world.a.groups) | {group}
    assert group in {f["group_id"] for f in everywhere}


@pytest.mark.parametrize(
    ("arguments", "sqlstate"),
    [
        ({"max_rows": 0}, "22023"),
        ({"max_rows": 1001}, "22023"),
        ({"max_rows": None}, "22023"),
        ({"as_of": "infinity"}, "22023"),
        ({"of_predicate": "!!!"}, "22023"),
        ({"of_subject": "x" * 501}, "22001"),
        ({"of_predicate": "P" * 101}, "22001"),
        ({"groups": []}, "22023"),
    ],
)
def test_bad_arguments_get_a_clear_error(world: World, arguments: dict[str, Any], sqlstate: str) -> None:
    with (
        caller(world.db, world.a.owner_key, role=APPLICATION) as conn,
        pytest.raises(psycopg.Error) as raised,
    ):
        _read(conn, **arguments)
    assert raised.value.sqlstate == sqlstate
    assert len(str(raised.value)) < 300


def test_another_tenants_group_is_refused_and_unauthenticated_calls_too(world: World) -> None:
    with (
        caller(world.db, world.a.owner_key, role=APPLICATION) as conn,
        pytest.raises(psycopg.Error) as foreign,
    ):
        _read(conn, groups=[world.a.organisation, world.b.organisation])
    assert foreign.value.sqlstate == "42501"
    with caller(world.db, None, role=APPLICATION) as conn, pytest.raises(psycopg.Error) as anonymous:
        _read(conn)
    assert anonymous.value.sqlstate == "VA005"
