"""Side channels of a SQL application (issue 11, finding 1).

Row-level security filters rows after the planner has chosen how to find
them, so a role that may select a table learns other tenants' rows from
plans: EXPLAIN ANALYZE counts them ("Rows Removed by Filter" when its own
leakproof condition becomes the index condition and the policy a filter),
plain EXPLAIN estimates them from the column statistics, and a probe of a
shared index (the entity-name HNSW) visits them. The application roles hold
no privilege on any table, so every such probe is refused; what they call
instead, a definer function, shows its caller one Function Scan whose plan
does not change with what other tenants hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import psycopg
import pytest
from psycopg import errors

from pg_tests.support.databases import APP_LOGIN, Database
from pg_tests.support.searching import embed, vector_literal
from pg_tests.support.seed import World, caller, seed_world
from pg_tests.support.writes import claim, publish

# The roles whose connections a tenant's code controls: SQL applications (the
# vera_app group and the tests' application login, a member of it) and the
# gateway (an MCP/HTTP server answers untrusted agents, so treat it alike).
TENANT_FACING_ROLES = ("vera_app", APP_LOGIN, "vera_gateway")
LOGIN_ROLES = (APP_LOGIN, "vera_gateway")


def test_tenant_facing_roles_hold_no_privilege_on_any_relation(world: World) -> None:
    with world.db.admin() as conn:
        relations = [row[0] for row in conn.execute(
            "select c.oid::regclass::text from pg_class c "
            "where c.relnamespace = 'vera'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')"
        )]  # fmt: skip
        granted = conn.execute(
            """select r.rolname, c.oid::regclass::text
                 from pg_class c cross join pg_roles r
                where c.relnamespace = 'vera'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
                  and r.rolname = any (%s)
                  and (has_table_privilege(r.oid, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
                       or (c.relkind <> 'S'
                           and has_any_column_privilege(r.oid, c.oid, 'SELECT, INSERT, UPDATE, REFERENCES')))""",
            (list(TENANT_FACING_ROLES),),
        ).fetchall()
    assert "vera.facts" in relations and "vera.principals" in relations
    assert granted == []


def _probes(world: World) -> dict[str, str]:
    """The probes of the issue, aimed at tenant B, and their cousins."""
    other = world.b.organisation
    vector = vector_literal(embed("payments-api"))
    return {
        "analyze, attacker condition as the index condition": (
            f"explain (analyze) select 1 from vera.facts where group_id = '{other}' and predicate = 'RUNS_ON'"
        ),
        "estimate from the column statistics": f"explain select 1 from vera.facts where group_id = '{other}'",
        "range probe on group_id": (
            f"explain (analyze) select 1 from vera.facts where group_id > '{other[:4]}' and group_id < '{other}'"
        ),
        "principals of another tenant": (
            f"explain (analyze) select 1 from vera.principals where principal_id = '{world.b.owner}'"
        ),
        "shared entity-name HNSW": (
            "explain (analyze) select entity_id from vera.entities "
            f"order by name_embedding <=> '{vector}'::vector limit 5"
        ),
        "passages by text": (
            "explain (analyze) select 1 from vera.chunks where tsv @@ to_tsquery('simple', 'payments')"
        ),
        "copy": "copy (select * from vera.facts) to stdout",
    }


@pytest.mark.parametrize("authenticated", [False, True], ids=["unauthenticated", "as tenant A"])
@pytest.mark.parametrize("role", LOGIN_ROLES)
def test_plans_of_other_tenants_rows_are_refused(world: World, role: str, authenticated: bool) -> None:
    refused = []
    with world.db.connect(role) as conn:
        for name, probe in _probes(world).items():
            conn.execute("set enable_seqscan = off")
            if authenticated:
                if role == "vera_gateway":
                    conn.execute("select vera.authenticate_principal(%s)", (world.a.owner,))
                else:
                    conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
            try:
                conn.execute(probe)  # type: ignore[arg-type]
            except errors.InsufficientPrivilege:
                refused.append(name)
            conn.rollback()
    assert refused == list(_probes(world))


# Only what a plan of a definer function shows its caller: nodes and row
# counts. Times, buffers and planning details vary from run to run anyway.
_VOLATILE = re.compile(r"\(actual time=[^)]*\)|Buffers:.*|Planning.*|Execution Time.*|Memory:.*")


def _plan(conn: psycopg.Connection, statement: str) -> list[str]:
    rows = conn.execute(f"explain (analyze, verbose, costs off, timing off, buffers off) {statement}")  # type: ignore[arg-type]
    return [_VOLATILE.sub("", row[0]).rstrip() for row in rows if _VOLATILE.sub("", row[0]).strip()]


_API_READS = (
    "select * from vera.read_facts(of_predicate => 'RUNS_ON')",
    "select * from vera.read_facts(of_subject => 'payments-api')",
    "select rank, item_id from vera.search('payments-api runs on cluster', k => 5)",
    "select * from vera.list_sources(null)",
    "select * from vera.whoami()",
)


def test_a_function_plan_does_not_change_with_other_tenants_rows(
    make_database: Callable[..., Database],
) -> None:
    database = make_database()
    world = seed_world(database)

    def plans() -> dict[str, list[str]]:
        with database.connect() as conn:
            conn.execute("set enable_seqscan = off")
            conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
            shown = {statement: _plan(conn, statement) for statement in _API_READS}
            conn.rollback()
            return shown

    before = plans()
    assert all(len(plan) >= 1 for plan in before.values())
    for plan in before.values():
        shown = [line.strip().split(":")[0] for line in plan if not line.startswith("Function Scan")]
        assert set(shown) <= {"Output", "Function Call"}, plan
    with caller(database, world.b.owner_key) as conn:
        publish(
            conn,
            world.b.organisation,
            None,
            [claim(f"service-{n}", "runs on", f"cluster {n}", functional=True) for n in range(300)]
            + [claim("payments-api", "runs on", "cluster green", functional=True)],
        )
        conn.commit()
    with database.admin() as conn:
        conn.execute("analyze")
    assert plans() == before


def test_the_channel_is_real_for_a_role_that_may_select(world: World) -> None:
    """Why the privileges go: the test inspector may select the tables (as the
    application role could before), and the first probe counts tenant B's rows."""
    with world.db.admin() as conn:
        foreign = conn.execute(
            "select count(*) from vera.facts where group_id = %s and predicate = 'RUNS_ON'",
            (world.b.organisation,),
        ).fetchone()[0]  # type: ignore[index]
    assert foreign > 0
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("set enable_seqscan = off")
        plan = "\n".join(
            row[0]
            for row in conn.execute(_probes(world)["analyze, attacker condition as the index condition"])
        )  # type: ignore[arg-type]
    assert f"Rows Removed by Filter: {foreign}" in plan, plan
