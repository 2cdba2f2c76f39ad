"""Input limits (issue 27): a text over its limit is 22001 naming the limit, never the
raw 23514 of a table's check constraint; the internal tsquery builder answers sensibly
for empty words instead of a syntax error (42601)."""

from __future__ import annotations

import psycopg
import pytest

from pg_tests.support.searching import search
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import SQL_ERRORS, claim, project_with_source, publish, record_episode


@pytest.fixture(scope="module")
def group(world: World) -> str:
    """A project with one published fact to vote on."""
    with caller(world.db, world.a.owner_key) as conn:
        project, source = project_with_source(conn, world.a.organisation, "limits")
        episode, _, _ = record_episode(conn, project, source, "export", "export")
        publish(conn, project, episode, [claim("ledger-db", "owned by", "team green")])
        conn.commit()
    return project


def test_a_feedback_query_over_4000_characters_is_22001_naming_the_limit(world: World, group: str) -> None:
    # a query the search answers (8,192 characters at most) but over feedback's 4,000: the hit is
    # found, then the vote's query would break the table's check (23514) unless refused first
    query = "ledger-db" + " " * 3984 + "owned by"
    assert len(query) == 4000 + 1
    with caller(world.db, world.a.owner_key) as conn:
        [hit] = [h for h in search(conn, query, groups=[group]) if h["subject"] == "ledger-db"]
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(
                "select * from vera.record_feedback(%s, %s, %s, 'up')", (hit["kind"], hit["item_id"], query)
            )
    assert raised.value.sqlstate == "22001", raised.value
    assert str(raised.value.diag.message_primary) == "query is 4001 characters; at most 4000"


def test_a_feedback_query_of_4000_characters_is_recorded(world: World, group: str) -> None:
    query = "ledger-db" + " " * 3983 + "owned by"
    assert len(query) == 4000
    with caller(world.db, world.a.owner_key) as conn:
        [hit] = [h for h in search(conn, query, groups=[group]) if h["subject"] == "ledger-db"]
        row = conn.execute(
            "select created from vera.record_feedback(%s, %s, %s, 'up')", (hit["kind"], hit["item_id"], query)
        ).fetchone()
    assert row == (True,)


@pytest.mark.parametrize(
    ("lexemes", "expected"),
    [
        ([""], None),
        (["", ""], None),
        ([" "], None),
        ([], None),
        (["", "ledger"], "'ledger'"),
        (["ledger", "", "green"], "'ledger' | 'green'"),
        (["it's"], "'it''s'"),
    ],
)
def test_any_of_ignores_empty_words(world: World, lexemes: list[str], expected: str | None) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        row = conn.execute("select vera.any_of(%s::text[])::text", (lexemes,)).fetchone()
    assert row == (expected,)


def test_any_of_with_no_word_matches_nothing(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        row = conn.execute(
            "select coalesce(to_tsvector('simple', 'ledger green') @@ vera.any_of(array['']), false)"
        ).fetchone()
    assert row == (False,)


def test_an_entity_object_over_500_characters_is_22001_not_the_entities_check(world: World) -> None:
    """An object that is an entity becomes an entity's name (at most 500 characters, as a
    subject); a literal object may have 2,000."""
    with caller(world.db, world.a.owner_key) as conn:
        project, source = project_with_source(conn, world.a.organisation, "entity-object")
        episode, _, _ = record_episode(conn, project, source, "long", "long")
        conn.execute("savepoint before_call")
        with pytest.raises(SQL_ERRORS) as raised:
            publish(
                conn, project, episode, [claim("ledger-db", "owned by", "t" * 501, object_is_entity=True)]
            )
        conn.execute("rollback to savepoint before_call")
        # a literal value of the same length is fine
        publish(conn, project, episode, [claim("ledger-db", "described as", "t" * 2000)])
    assert raised.value.sqlstate == "22001", raised.value
    assert "claim 0: object is over 500 characters" in str(raised.value)
