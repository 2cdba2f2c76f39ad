"""Bad input (issue 11): a clear error with VERA's own code, a short message,
and nothing stored."""

from __future__ import annotations

import psycopg
import pytest

from pg_tests.support.searching import DIM, MODEL
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import record_episode, register_source


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
    ("create_group", "select vera.create_group(%s, %s, 'Platform')", [None], "22023"),
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


STORED = (
    "principals", "groups", "memberships", "audit_log", "sources", "episodes", "chunks", "facts",
    "entities", "predicates",
)  # fmt: skip


def _counts(conn: psycopg.Connection) -> tuple[object, ...]:
    row = conn.execute(
        "select " + ", ".join(f"(select count(*) from vera.{table})" for table in STORED)  # type: ignore[arg-type]
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
    "record_feedback/vote": "select * from vera.record_feedback('fact', gen_random_uuid(), 'q', %(big)s)",
    "authenticate/key": "select vera.authenticate(%(big)s)",
    "store_chunks/group": "select * from vera.store_chunks(%(big)s, gen_random_uuid(), '[]')",
    "create_snapshot/name": "select * from vera.create_snapshot(%(org)s, %(big)s)",
    "set_member_role/group": "select vera.set_member_role(%(big)s, gen_random_uuid(), 'member')",
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


@pytest.fixture(scope="module")
def project(world: World) -> dict[str, object]:
    """A project of tenant A with a tier-1 source and one episode, committed."""
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        group = conn.execute(
            "select vera.create_group(%s, 'project', 'bad input')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        source = register_source(conn, group, "wiki", 1)
        episode, _, _ = record_episode(conn, group, source, "page", "content")
        conn.commit()
    return {"group": group, "source": source, "episode": episode}


ZERO = "[" + ",".join(["0"] * DIM) + "]"
SHA = "sha256('x'::bytea)"

# Each refused with the code, nothing stored: %(group)s, %(source)s, %(episode)s, %(big)s (1 MB), %(zero)s.
NONSENSE = {
    "record_episode/observed_at infinity": (
        f"select * from vera.record_episode(%(group)s, %(source)s, 'e', {SHA}, observed_at => 'infinity')",
        "22023",
    ),
    "record_episode/observed_at -infinity": (
        f"select * from vera.record_episode(%(group)s, %(source)s, 'e', {SHA}, observed_at => '-infinity')",
        "22023",
    ),
    "record_episode/observed_at 200 years ahead": (
        f"select * from vera.record_episode(%(group)s, %(source)s, 'e', {SHA}, observed_at => now() + interval '200 years')",
        "22023",
    ),
    "record_episode/observed_at year 294276": (
        f"select * from vera.record_episode(%(group)s, %(source)s, 'e', {SHA}, observed_at => '294276-12-31 23:59:59+00')",
        "22023",
    ),
    "create_api_key/expires_at infinity": (
        "select * from vera.create_api_key('forever', 'infinity')",
        "22023",
    ),
    "register_source/config of a megabyte": (
        "select vera.register_source(%(group)s, 'markdown', 'huge config', 2, null,"
        " jsonb_build_object('root', %(big)s::text))",
        "22001",
    ),
    "record_episode/blank external_id": (
        f"select * from vera.record_episode(%(group)s, %(source)s, '   ', {SHA})",
        "22023",
    ),
    "record_episode/uri": (
        f"select * from vera.record_episode(%(group)s, %(source)s, 'e', {SHA}, uri => %(big)s)",
        "22001",
    ),
    "record_episode/title": (
        f"select * from vera.record_episode(%(group)s, %(source)s, 'e', {SHA}, title => %(big)s)",
        "22001",
    ),
    "record_episode/object_key": (
        f"select * from vera.record_episode(%(group)s, %(source)s, 'e', {SHA}, object_key => %(big)s)",
        "22001",
    ),
    "record_episode/mime": (
        f"select * from vera.record_episode(%(group)s, %(source)s, 'e', {SHA}, mime => %(big)s)",
        "22001",
    ),
    "store_chunks/heading": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'heading', %(big)s::text)))",
        "22001",
    ),
    "register_source/uri": (
        "select vera.register_source(%(group)s, 'wiki', 'other', 1, uri => %(big)s)",
        "22001",
    ),
    "retract_episode/reason": ("select vera.retract_episode(%(group)s, %(episode)s, %(big)s)", "22001"),
    "erase_episode/reason": ("select vera.erase_episode(%(group)s, %(episode)s, %(big)s)", "22001"),
    "retract_source/reason": ("select vera.retract_source(%(group)s, %(source)s, %(big)s)", "22001"),
    "review_claim/note": (
        "select * from vera.review_claim(%(group)s, gen_random_uuid(), 'approve', %(big)s)",
        "22001",
    ),
    "review_passage/note": (
        "select * from vera.review_passage(%(group)s, gen_random_uuid(), 'approve', %(big)s)",
        "22001",
    ),
    "declare_predicate/description": (
        "select vera.declare_predicate(%(group)s, 'owned by', 'multi', %(big)s)",
        "22001",
    ),
    "publish_claims/zero embedding": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'embedding', %(zero)s::jsonb)), %(model)s)",
        "VE002",
    ),
    "publish_claims/zero subject embedding": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'subject_embedding', %(zero)s::jsonb)), %(model)s)",
        "VE002",
    ),
    "publish_claims/valid_from infinity": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'valid_from', 'infinity')))",
        "22023",
    ),
    "publish_claims/valid_from year 10000": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'valid_from', '10000-01-01 00:00+00')))",
        "22023",
    ),
    "publish_claims/valid_to year 294276": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'valid_to', '294276-12-31 23:59:59+00')))",
        "22023",
    ),
    "publish_claims/valid_to infinity": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'valid_to', 'infinity')))",
        "22023",
    ),
    # found by test_sql_properties.py: these broke a table's check constraint (23514) or float8's range (22003)
    "publish_claims/evidence_end before evidence_start": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'evidence_start', 5, 'evidence_end', 2)))",
        "22023",
    ),
    "publish_claims/valid_to before the observation time": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'valid_to', '2000-01-01')))",
        "22023",
    ),
    "publish_claims/valid_from a number read as a time zone": (
        "select * from vera.publish_claims(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'subject', 's', 'predicate', 'p', 'object', 'o', 'valid_from', -16.0)))",
        "22023",
    ),
    "search/lexical_weight below float8's reach": (
        "select * from vera.search('payments', lexical_weight => 5e-324, groups => array[%(group)s])",
        "22023",
    ),
    "store_chunks/char_end before char_start": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'char_start', 5, 'char_end', 2)))",
        "22023",
    ),
    "store_chunks/time_scope not an array": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'time_scope', '1995'::jsonb)))",
        "22023",
    ),
    "store_chunks/time_scope range not a pair": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'time_scope', '[[\"1995-01-01\"]]'::jsonb)))",
        "22023",
    ),
    "store_chunks/time_scope end not a date": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'time_scope', '[[\"1995-01-01\", \"the year after\"]]'::jsonb)))",
        "22007",
    ),
    "store_chunks/time_scope end a number": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'time_scope', '[[1995, null]]'::jsonb)))",
        "22023",
    ),
    "store_chunks/time_scope ends before it starts": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'time_scope', '[[\"1996-01-01\", \"1995-01-01\"]]'::jsonb)))",
        "22023",
    ),
    "store_chunks/time_scope of too many ranges": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'time_scope', (select jsonb_agg(jsonb_build_array(null, null)) "
        "from generate_series(1, 1001)))))",
        "54000",
    ),
    "store_chunks/time_scope_version without a time_scope": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'time_scope_version', 1)))",
        "22023",
    ),
    "set_setting/a number beyond float8": (
        "select vera.set_setting(%(group)s, 'er.trigram_link', '1e400')",
        "22023",
    ),
    "set_setting/a number below float8": (
        "select vera.set_setting(%(group)s, 'er.trigram_link', '1e-400')",
        "22023",
    ),
    "store_chunks/zero embedding": (
        "select * from vera.store_chunks(%(group)s, %(episode)s, jsonb_build_array(jsonb_build_object("
        "'text', 't', 'embedding', %(zero)s::jsonb)), %(model)s)",
        "VE002",
    ),
    "set_fact_embeddings/zero": (
        "select vera.set_fact_embeddings(%(group)s, array[gen_random_uuid()], array[%(zero)s::vector], %(model)s)",
        "VE002",
    ),
    "search/zero query embedding": (
        "select * from vera.search(null, %(zero)s::vector, groups => array[%(group)s])",
        "22023",
    ),
    "search_snapshot/zero query embedding": (
        "select * from vera.search_snapshot(%(group)s, 'any', null, %(zero)s::vector)",
        "22023",
    ),
    "record_feedback/zero query embedding": (
        "select * from vera.record_feedback('fact', gen_random_uuid(), 'q', 'up', %(zero)s::vector)",
        "22023",
    ),
    "search/zero query embedding with text": (
        "select * from vera.search('owned', %(zero)s::vector, groups => array[%(group)s])",
        "22023",
    ),
}


@pytest.mark.parametrize("call", list(NONSENSE))
def test_nonsense_is_refused_and_nothing_is_stored(
    world: World, project: dict[str, object], call: str
) -> None:
    sql, code = NONSENSE[call]
    params = {**project, "big": MEGABYTE, "zero": ZERO, "model": MODEL}
    with caller(world.db, world.a.owner_key) as conn:
        before = _counts(conn)
        conn.execute("savepoint before_call")
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(sql, params)  # type: ignore[arg-type]
        conn.execute("rollback to savepoint before_call")
        assert raised.value.sqlstate == code, raised.value
        assert len((raised.value.diag.message_primary or "").encode()) < 500
        assert _counts(conn) == before


@pytest.mark.parametrize(
    "observed_at",
    ["4714-11-24 00:00+00 BC", "0044-03-15 BC", "1700-01-26", "1900-01-01 00:00+00", "1970-01-01",
     "2026-06-01 12:00+02"],
)  # fmt: skip
def test_sane_observation_times_are_accepted(
    world: World, project: dict[str, object], observed_at: str
) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        row = conn.execute(
            f"select created from vera.record_episode(%(group)s, %(source)s, 'dated', {SHA}, "
            "observed_at => %(at)s::timestamptz, uri => %(uri)s)",
            {**project, "at": observed_at, "uri": "https://example.com/" + "p" * 1900},
        ).fetchone()
        assert row == (True,)
