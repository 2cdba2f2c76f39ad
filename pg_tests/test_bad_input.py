"""Bad input (issue 11): a clear error with VERA's own code, a short message,
and nothing stored."""

from __future__ import annotations

import psycopg
import pytest

from pg_tests.seed import World, caller


def test_lexical_query_runs_as_the_application_role(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        row = conn.execute("select vera.lexical_query('who owns ledger-db')::text").fetchone()
    assert row is not None
    assert "ledger" in row[0] and "owns" in row[0] and "'who'" in row[0]


MEGABYTE = "x" * 1_000_000

# (call, its arguments after the group, the code it must raise)
PROVISIONING = [
    ("create_principal", "select vera.create_principal(%s, 'user', 'Eve', 'member', %s)",
     [MEGABYTE + "@example.com"], "22001"),
    ("create_principal", "select vera.create_principal(%s, 'user', %s)", [None], "22023"),
    ("create_principal", "select vera.create_principal(%s, 'user', %s)", ["n" * 4001], "22001"),
    ("create_principal", "select vera.create_principal(%s, 'user', 'Eve', %s)", [None], "22023"),
    ("create_principal", "select vera.create_principal(%s, %s, 'Eve')", [None], "22023"),
    ("create_principal", "select vera.create_principal(%s, 'user', 'Eve', 'member', %s)", ["no-at-sign"],
     "22023"),
    ("create_group", "select vera.create_group(%s, 'workspace', %s)", ["n" * 4001], "22001"),
    ("create_api_key", "select vera.create_api_key(%s)", ["n" * 4001], "22001"),
    ("set_member_role", "select vera.set_member_role(%s, %s, %s)", ["viewer", None], "22023"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("function", "sql", "args", "code"),
    PROVISIONING,
    ids=[f"{case[0]}-{i}" for i, case in enumerate(PROVISIONING)],
)
def test_provisioning_refuses_bad_values_with_veras_code(
    world: World, function: str, sql: str, args: list[object], code: str
) -> None:
    params = [world.a.viewer if a == "viewer" else a for a in args]
    if function != "create_api_key":
        params = [world.a.organisation, *params]
    with caller(world.db, world.a.owner_key) as conn:
        before = _counts(conn)
        conn.execute("savepoint before_call")
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(sql, params)
        conn.execute("rollback to savepoint before_call")
        assert raised.value.sqlstate == code, raised.value
        message = raised.value.diag.message_primary or ""
        assert "\n" not in message and len(message) < 300
        assert _counts(conn) == before


def _counts(conn: psycopg.Connection) -> tuple[object, ...]:
    row = conn.execute(
        "select (select count(*) from vera.principals), (select count(*) from vera.groups), "
        "(select count(*) from vera.memberships), (select count(*) from vera.audit_log)"
    ).fetchone()
    assert row is not None
    return tuple(row)


# A 1 MB argument in each place (%(big)s), as the owner of organisation A (%(org)s).
ECHOING_CALLS = {
    "source_cursor/group_id": "select vera.source_cursor(%(big)s, gen_random_uuid())",
    "list_sources/group": "select vera.list_sources(%(big)s)",
    "revoke_api_key/key": "select vera.revoke_api_key(%(big)s)",
    "set_setting/name": "select vera.set_setting(%(org)s, %(big)s, '1')",
    "set_setting/value": "select vera.set_setting(%(org)s, 'ranking.calibration_min_samples', to_jsonb(%(big)s::text))",
    "register_source/kind": "select vera.register_source(%(org)s, %(big)s, 'wiki', 1)",
    "declare_predicate/name": "select vera.declare_predicate(%(org)s, '!' || %(big)s)",
    "review_claim/decision": "select vera.review_claim(%(org)s, gen_random_uuid(), %(big)s, null)",
    "review_passage/decision": "select vera.review_passage(%(org)s, gen_random_uuid(), %(big)s, null)",
    "drop_snapshot/name": "select vera.drop_snapshot(%(org)s, %(big)s)",
    "search_snapshot/snapshot": "select * from vera.search_snapshot(%(org)s, %(big)s, 'q')",
    "search/groups": "select * from vera.search('q', groups => array[%(big)s])",
    "publish_claims/predicate": (
        "select * from vera.publish_claims(%(org)s, null, "
        "jsonb_build_array(jsonb_build_object('subject', 's', 'predicate', '!' || %(big)s, 'object', 'o')))"
    ),
    "publish_claims/embedding": (
        "select * from vera.publish_claims(%(org)s, null, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'embedding', %(big)s::text)), 'm')"
    ),
    "search/weights": "select * from vera.search('q', weights => jsonb_build_object(%(big)s::text, 1))",
    "calibrate_weights/group": "select * from vera.calibrate_weights(%(big)s)",
}


@pytest.mark.parametrize("call", list(ECHOING_CALLS))
def test_a_huge_argument_gives_a_short_message(world: World, call: str) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(ECHOING_CALLS[call], {"big": MEGABYTE, "org": world.a.organisation})  # type: ignore[arg-type]
    error = raised.value
    # refused by VERA's checks, not by a mistake in the call
    assert (error.sqlstate is not None and error.sqlstate[:2] != "42") or error.sqlstate == "42501", error
    shown = "".join(
        part or ""
        for part in (error.diag.message_primary, error.diag.message_detail, error.diag.message_hint)
    )
    assert len(shown.encode()) < 500, (error.sqlstate, shown[:300])
