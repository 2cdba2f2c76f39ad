"""The passages' full-text index (sql/functions/174_passage_lexemes.sql, migration 0021): each word
of a passage keyed by its group and length class, and the lexical rounds' queries over it. The rounds themselves
(MaxScore, the cut of a frequent word): test_term_stats.py."""

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


def _store(admin: psycopg.Connection, group: str, episode: UUID, first: int, texts: str, count: int) -> None:
    """count passages from ordinal first on, the text of passage i the SQL expression texts."""
    admin.execute(
        f"""insert into vera.chunks (group_id, episode_id, ordinal, text)
            select %s, %s, %s + i, {texts} from generate_series(0, %s - 1) i""",
        (group, episode, first, count),
    )


def test_a_passage_is_keyed_by_its_group_length_class_and_words(world: World) -> None:
    """The keys are "<group> <class> <lexeme>", the class the octave of the passage's length (0 up to
    31 words, 7 from 2,048); a passage without words has none; and the function the rounds call,
    inlined by the planner, is the index's expression: a query over it reads the index (the facts'
    index too, whose keys come from the same function)."""
    with world.db.admin() as admin:
        keys = admin.execute(
            "select vera.passage_lexemes('g:1', 3, 'red:1 blue:2 o''k:3'::tsvector)::text"
        ).fetchone()
        assert keys == ("'g:1 0 blue' 'g:1 0 o''k' 'g:1 0 red'",)
        classes = admin.execute(
            "select array_agg(vera.passage_length_class(w) order by w)"
            " from unnest('{1,31,32,63,64,255,256,2047,2048,100000}'::integer[]) w"
        ).fetchone()
        assert classes == ([0, 0, 1, 1, 2, 3, 4, 6, 7, 7],)
        assert admin.execute(
            "select vera.passage_lexemes('g:1', 0, ''::tsvector) = ''::tsvector"
        ).fetchone() == (True,)
        admin.execute("begin")
        admin.execute("set local enable_seqscan = off")
        plan = "\n".join(row[0] for row in admin.execute(
            "explain (costs off) select c.chunk_id from vera.chunks c"
            " where vera.passage_lexemes(c.group_id, c.words, c.tsv)"
            "       @@ (vera.passage_lexeme_queries('{g:1}', '{red}', '{blue}', '{green}'))[3]"))  # fmt: skip
        facts_plan = "\n".join(row[0] for row in admin.execute(
            "explain (costs off) select f.fact_id from vera.facts f"
            " where vera.group_lexemes(f.group_id, f.fact_id, f.tsv) @@ vera.group_lexeme_query('{g:1}', '{red}')"))  # fmt: skip
        admin.execute("rollback")
        assert "chunks_group_lexemes_idx" in plan, plan
        assert "facts_group_lexemes_idx" in facts_plan, facts_plan


def test_a_round_query_keeps_each_group_and_class_its_own_words(world: World) -> None:
    """A passage matches a round's queries when its own group holds the terms: another group's
    passage holding the same words does not, and neither does one of the group holding a word left
    out or holding no later word the query asks for. Each class's query matches only the passages
    of that length class."""
    group, episode = _project(world, "lexemes-query")
    other, other_episode = _project(world, "lexemes-query-other")
    with world.db.admin() as admin:
        _store(admin, group, episode, 1, "'alpha beta ' || i", 3)
        _store(admin, group, episode, 10, "'alpha gamma'", 1)
        _store(admin, group, episode, 20, "'alpha delta'", 1)
        _store(admin, other, other_episode, 1, "'alpha beta'", 1)
        # 40 distinct words: class 1 (32-63 words)
        _store(
            admin,
            group,
            episode,
            30,
            "'alpha ' || (select string_agg('w' || j, ' ') from generate_series(1, 39) j)",
            1,
        )

        def matched(
            groups: list[str], *args: object, length_class: int | None = None
        ) -> set[tuple[str, int]]:
            return set(admin.execute(
                "select c.group_id, c.ordinal from vera.chunks c"
                " where exists (select from unnest(vera.passage_lexeme_queries(%s, %s, %s, %s))"
                "                            with ordinality q(query, position)"
                "                where vera.passage_lexemes(c.group_id, c.words, c.tsv) @@ q.query"
                "                  and (%s::integer is null or q.position = %s::integer + 1))"
                "   and c.group_id = any (%s)",
                (groups, *args, length_class, length_class, [group, other])).fetchall())  # fmt: skip

        assert matched([group], ["alpha"], None, None) == {
            (group, 1),
            (group, 2),
            (group, 3),
            (group, 10),
            (group, 20),
            (group, 30),
        }
        assert matched([group], ["alpha"], None, None, length_class=1) == {(group, 30)}
        assert (group, 30) not in matched([group], ["alpha"], None, None, length_class=0)
        assert matched([group, other], ["alpha"], ["beta"], None) == {
            (group, 1),
            (group, 2),
            (group, 3),
            (other, 1),
        }
        assert matched([other], ["alpha"], ["beta"], None) == {(other, 1)}
        assert matched([group], ["alpha"], None, ["beta", "delta", "w1"]) == {(group, 10)}
        assert matched([group], ["alpha"], ["gamma", "delta"], ["delta"]) == {(group, 10)}
        assert admin.execute(
            "select vera.passage_lexeme_queries(%s, %s, null, null)", ([group], ["", " "])
        ).fetchone() == ([None] * 8,)


def test_a_word_of_two_thousand_characters_is_stored_and_found(world: World) -> None:
    """to_tsvector keeps a word of up to 2,047 bytes and a key may hold 2,046: keyed beside its group
    in full, a word of 2,040 characters made a passage's or a fact's write fail. The indexes key a
    word by its first 500 characters (vera.index_word), in the stored keys and the query's alike: the
    write succeeds, a search for the word finds both, and a word sharing only those 500 characters
    scores nothing for it."""
    long_word = "w" + "x" * 2039
    twin = "w" + "x" * 1999 + "y" * 40
    group, episode = _project(world, "lexemes-long")
    with world.db.admin() as admin:
        _store(admin, group, episode, 1, f"'the {long_word} passage'", 1)
        _store(admin, group, episode, 2, f"'the {twin} passage'", 1)
    with caller(world.db, world.a.owner_key) as conn:
        publish(
            conn,
            group,
            episode,
            [claim("long-word", "spells", "it", fact_text=f"long-word spells {long_word}")],
        )
        hits = conn.execute(
            "select kind, text, lexical_match from vera.search(%s, groups => %s, k => 10)",
            (long_word, [group]),
        ).fetchall()
        conn.rollback()
    found = {(kind, long_word in text, twin in text) for kind, text, _ in hits}
    assert ("passage", True, False) in found and ("fact", True, False) in found, hits
    # the twin is no answer: it holds no word of the query
    assert all(long_word in text for _, text, _ in hits), hits
