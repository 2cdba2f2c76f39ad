"""The passages' full-text index (sql/functions/174_passage_lexemes.sql, migration 0021): each word
of a passage keyed by its group and one key for its length band, the lexical rounds' queries over
it, and the shortest passages of a frequent word read band by band. The rounds themselves (MaxScore,
the cut of a frequent word): test_term_stats.py."""

from __future__ import annotations

from uuid import UUID

import psycopg

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, functional_project, publish, record_episode, register_source


def _project(world: World, name: str) -> tuple[str, UUID]:
    """A project of tenant A with one source and episode, for the passages a test loads directly."""
    with caller(world.db, world.a.owner_key) as conn:
        group = functional_project(conn, world.a.organisation, name)
        source = register_source(conn, group, "bulk", 1)
        episode, _, _ = record_episode(conn, group, source, "bulk.md", "b")
        publish(conn, group, episode, [claim("bulk-api", "mentions", "nothing")])
        conn.commit()
    return group, episode


def _store(admin: psycopg.Connection, group: str, episode: UUID, first: int, texts: str, count: int,
           lifecycle: str = "published") -> None:  # fmt: skip
    """count passages from ordinal first on, the text of passage i the SQL expression texts."""
    admin.execute(
        f"""insert into vera.chunks (group_id, episode_id, ordinal, text, lifecycle)
            select %s, %s, %s + i, {texts}, %s from generate_series(0, %s - 1) i""",
        (group, episode, first, lifecycle, count),
    )


def test_a_passage_is_keyed_by_its_group_words_and_length_band(world: World) -> None:
    """The keys are "<group> <lexeme>" and "<group> length <band>"; the bands rise with the length,
    four to each doubling; a passage without words has no keys; and the function the rounds call,
    inlined by the planner, is the index's expression: a query over it reads the index."""
    with world.db.admin() as admin:
        keys = admin.execute(
            "select vera.passage_lexemes('g:1', 3, 'red:1 blue:2 o''k:3'::tsvector)::text"
        ).fetchone()[0]  # type: ignore[index]
        band = admin.execute("select vera.passage_length_band(3)").fetchone()[0]  # type: ignore[index]
        # (a tsvector lists its lexemes sorted)
        assert keys == f"'g:1 blue' 'g:1 length {band}' 'g:1 o''k' 'g:1 red'"
        assert admin.execute(
            "select vera.passage_lexemes('g:1', 0, ''::tsvector) = ''::tsvector"
        ).fetchone() == (True,)
        bands = [row[0] for row in admin.execute(
            "select vera.passage_length_band(w) from generate_series(0, 5000) w order by w")]  # fmt: skip
        assert bands == sorted(bands) and bands[0] == bands[1] == 0
        for power in range(1, 12):
            band = admin.execute("select vera.passage_length_band(%s)", (2**power,)).fetchone()[0]  # type: ignore[index]
            assert band in (4 * power - 1, 4 * power)
        admin.execute("begin")
        admin.execute("set local enable_seqscan = off")
        plan = "\n".join(row[0] for row in admin.execute(
            "explain (costs off) select c.chunk_id from vera.chunks c"
            " where vera.passage_lexemes(c.group_id, c.words, c.tsv)"
            "       @@ vera.passage_lexeme_query('{g:1}', '{red}', '{blue}', '{green}', 3, 5)"))  # fmt: skip
        # the facts' index too: both key their words by group through one function (vera.group_keyed_words)
        facts_plan = "\n".join(row[0] for row in admin.execute(
            "explain (costs off) select f.fact_id from vera.facts f"
            " where vera.group_lexemes(f.group_id, f.fact_id, f.tsv) @@ vera.group_lexeme_query('{g:1}', '{red}')"))  # fmt: skip
        admin.execute("rollback")
        assert "chunks_group_lexemes_idx" in plan, plan
        assert "facts_group_lexemes_idx" in facts_plan, facts_plan


def test_a_round_query_keeps_each_group_its_own_words_and_bands(world: World) -> None:
    """A passage matches a round's query when its own group holds the terms: another group's
    passage holding the same words does not, and neither does one of the group outside the bands,
    holding a word left out, or holding no later word the query asks for."""
    group, episode = _project(world, "lexemes-query")
    other, other_episode = _project(world, "lexemes-query-other")
    with world.db.admin() as admin:
        # 2, 4 and 6 distinct words: bands 4, 8 and 10
        _store(admin, group, episode, 1,
               "'alpha beta ' || coalesce((select string_agg('x' || j, ' ') from generate_series(1, i * 2) j), '')",
               3)  # fmt: skip
        _store(admin, group, episode, 10, "'alpha gamma'", 1)
        _store(admin, group, episode, 20, "'alpha delta'", 1)
        _store(admin, other, other_episode, 1, "'alpha beta'", 1)

        def matched(groups: list[str], *args: object) -> set[tuple[str, int]]:
            return set(admin.execute(
                "select c.group_id, c.ordinal from vera.chunks c"
                " where vera.passage_lexemes(c.group_id, c.words, c.tsv) @@ vera.passage_lexeme_query(%s, %s, %s, %s, %s, %s)"
                "   and c.group_id = any (%s)",
                (groups, *args, [group, other])).fetchall())  # fmt: skip

        assert matched([group], ["alpha"], None, None, None, None) == {(group, 1), (group, 2), (group, 3), (group, 10),
                                                                        (group, 20)}  # fmt: skip
        assert matched([group, other], ["alpha"], ["beta"], None, None, None) == {
            (group, 1), (group, 2), (group, 3), (other, 1)}  # fmt: skip
        assert matched([group], ["alpha"], None, ["beta", "delta"], None, None) == {(group, 10)}
        assert matched([group], ["alpha"], ["beta"], None, 0, 5) == {(group, 1)}
        assert matched([group], ["alpha"], ["beta"], None, 8, 9) == {(group, 2)}
        assert matched([group], ["alpha"], ["beta"], None, 8, 10) == {(group, 2), (group, 3)}
        assert admin.execute(
            'select vera.passage_lexeme_query(%s, \'{"", " "}\', null, null, null, null)', ([group],)
        ).fetchone() == (None,)


def test_the_shortest_passages_read_by_band_are_those_of_a_sort_of_all(world: World) -> None:
    """vera.shortest_passages reads a frequent word's passages band by band, shortest first, until
    the bands read hold as many as wanted: whatever the number wanted and wherever the reading
    starts (half the average length), it returns the same rows as a sort of all of them by length
    and id. Passages waiting for review are not read (the shortest of all waits), nor another
    group's, nor those holding a word left out."""
    group, episode = _project(world, "lexemes-shortest")
    other, other_episode = _project(world, "lexemes-shortest-other")
    with world.db.admin() as admin:
        # 900 passages of 1 to 1,800 distinct words (two each), longest and shortest mixed in the
        # table's order; a hundred of them hold "later" too, a hundred "left"
        _store(admin, group, episode, 1,
               "'common ' || case when i %% 9 = 0 then 'later ' when i %% 9 = 1 then 'left ' else '' end"
               " || coalesce((select string_agg('x' || j, ' ') from generate_series(1, (i * 7919) %% 900 * 2) j), '')",
               900)  # fmt: skip
        _store(admin, group, episode, 5000, "'common'", 3, lifecycle="pending_review")
        _store(admin, other, other_episode, 1, "'common'", 5)

        def shortest(wanted: int, and_any: list[str] | None, none_of: list[str] | None,
                     average: float | None) -> list[UUID]:  # fmt: skip
            return [row[0] for row in admin.execute(
                "select c.chunk_id from vera.chunks c"
                " where c.ctid = any (vera.shortest_passages(%s, '{common}', %s, %s, null, %s, %s))"
                " order by c.words, c.chunk_id",
                ([group], and_any, none_of, wanted, average)).fetchall()]  # fmt: skip

        def sorted_all(wanted: int, and_any: list[str] | None, none_of: list[str] | None) -> list[UUID]:
            return [row[0] for row in admin.execute(
                "select c.chunk_id from vera.chunks c"
                " where c.group_id = %s and c.tsv @@ 'common'::tsquery and c.lifecycle = 'published'"
                "   and (%s::text[] is null or c.tsv @@ vera.any_of(%s))"
                "   and not coalesce(c.tsv @@ vera.any_of(%s), false)"
                " order by c.words, c.chunk_id limit %s",
                (group, and_any, and_any, none_of, wanted)).fetchall()]  # fmt: skip

        checked = 0
        for wanted in (1, 3, 40, 250, 800, 2000):
            for average in (None, 0.0, 10.0, 200.0, 5000.0):
                for and_any, none_of in ((None, None), (["later"], None), (None, ["later", "left"])):
                    expected = sorted_all(wanted, and_any, none_of)
                    assert shortest(wanted, and_any, none_of, average) == expected, (wanted, average, and_any)
                    checked += len(expected)
        assert checked > 0
        assert shortest(0, None, None, 200.0) == []
        bands = admin.execute(
            "select count(distinct vera.passage_length_band(words)) from vera.chunks where group_id = %s",
            (group,),
        ).fetchone()[0]  # type: ignore[index]
        assert bands > 20  # the reading crossed many bands
