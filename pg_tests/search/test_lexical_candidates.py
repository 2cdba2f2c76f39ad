"""The lexical half's candidates (sql/functions/177_lexical_candidates.sql): a round of
facts that one frequent word holds is cut at the budget (vera.lexical_budget) and reads
the parts of the facts' full-text index that should hold its rows, or the word's whole
posting list when most parts would. BM25's scores: test_bm25.py; MaxScore's exact top n
against a brute force: test_term_stats.py."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

import pytest

from pg_tests.support.seed import World, caller
from pg_tests.support.statistics import clear_statistics, without_autovacuum
from pg_tests.support.writes import claim, project_with_source, publish, record_episode

# A frequent word in a group of its own: 2,000 facts hold "alpha" once, 600 of them "beta" too
# (BM25 ties them all: facts are not length-normalised), so each search's rounds are cut at the
# budget (vera.lexical_budget: 250 facts read).
FREQUENT_FACTS = 2000


def _group_of_facts(world: World, name: str, first_word: str, text_sql: str, count: int) -> tuple[str, UUID]:
    """A new project of tenant A with a source, one published fact holding first_word, and count
    more written straight into vera.facts, whose fact_text is text_sql (an expression of i, the
    copy's number): a group and its source."""
    with caller(world.db, world.a.owner_key) as conn:
        group, source = project_with_source(conn, world.a.organisation, name)
        episode, _, _ = record_episode(conn, group, source, name, name)
        publish(conn, group, episode, [claim(first_word, "is", "fact 0")])
        conn.commit()
    with world.db.admin() as admin:
        admin.execute(
            f"""
            insert into vera.facts (group_id, subject_entity_id, predicate, object_value, fact_text,
                                    tier, authority, verification, lifecycle, source_id, episode_id)
            select f.group_id, f.subject_entity_id, f.predicate, 'fact ' || i, {text_sql},
                   1, 1.0, 'auto', 'published', f.source_id, f.episode_id
              from vera.facts f, generate_series(1, %s) i
             where f.group_id = %s
            """,
            (count, group),
        )
    return group, source


@pytest.fixture
def frequent(world: World) -> Iterator[str]:
    group, source = _group_of_facts(
        world, "bm25 cut", "alpha",
        "'alpha fact ' || lpad(i::text, 4, '0') || case when i %% 10 < 3 then ' beta' else '' end",
        FREQUENT_FACTS - 1,
    )  # fmt: skip
    yield group
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.erase_source(%s, %s, 'test done')", (group, source))
        conn.commit()


def _cut_list(world: World, group: str, word: str) -> list[UUID]:
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select item_id from vera.search(%s, groups => %s, k => 40, candidates => 40,"
            " weights => '{\"relevance\": 1}')",
            (word, [group]),
        ).fetchall()
        conn.rollback()
    return [row[0] for row in rows]


def _first_read(world: World, group: str, word: str, parts: list[str] | None) -> list[UUID]:
    """The 40 facts a cut round keeps, computed apart: of the first 250 facts holding the word in
    these parts (all when None), in the table's order, the first 40 in the order of equal scores."""
    with world.db.admin() as conn:
        rows = conn.execute(
            """
            with read as (
                select * from vera.facts f
                 where f.group_id = %(group)s and f.tsv @@ to_tsquery('simple', %(word)s)
                   and (%(parts)s::text[] is null or right(f.fact_id::text, 1) = any (%(parts)s))
                 order by f.ctid limit 250)
            select fact_id from read
             order by vera.fact_order_key(fact_text, predicate, object_value, valid_from), fact_id limit 40
            """,
            {"group": group, "word": word, "parts": parts},
        ).fetchall()
    return [row[0] for row in rows]


def test_a_cut_round_of_a_frequent_word_reads_its_first_parts(world: World, frequent: str) -> None:
    """2,000 facts hold "alpha": the round reads the parts that should hold its 250 rows (three of
    the sixteen: 1.5 x 250 x 16 / 2,000), in the index's posting lists of those parts only."""
    hits = _cut_list(world, frequent, "alpha")
    assert len(hits) == 40
    assert {str(hit)[-1] for hit in hits} <= {"0", "1", "2"}
    assert hits == _first_read(world, frequent, "alpha", ["0", "1", "2"])


def test_a_cut_round_that_needs_most_parts_reads_the_words_whole_list(world: World, frequent: str) -> None:
    """600 facts hold "beta": more than parts_by_key parts would hold its 250 rows, so the round
    reads the word's posting list without parts, the first 250 in the table's order."""
    hits = _cut_list(world, frequent, "beta")
    assert len(hits) == 40
    assert hits == _first_read(world, frequent, "beta", None)


# A group of passages searched before any statistics of vera.chunks exist: 2,000 passages, 100 of
# them holding "needle"
UNANALYZED_PASSAGES = 2000


def test_a_passage_round_reads_the_word_index_in_a_database_never_analyzed(world: World) -> None:
    """A database searched before autovacuum first analyzed it (a first load, then questions at
    once): without statistics the planner priced a passage's keyed words (vera.passage_lexemes, a
    regular expression over its whole tsvector) as a few cheap built-ins, and its generic plan of
    a round read every passage of the table and keyed it again for each length class (2,000
    passages: 240 ms a round statement, against 4 through the index). A round reads passages
    through the word index whatever the statistics: no sequential scan of vera.chunks here."""
    with caller(world.db, world.a.owner_key) as conn:
        group, source = project_with_source(conn, world.a.organisation, "never analyzed")
        episode, _, _ = record_episode(conn, group, source, "unanalyzed", "unanalyzed")
        conn.commit()
    with world.db.admin() as admin, without_autovacuum(admin, ["vera.chunks"]):
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, i, case when i %% 20 = 0 then 'needle ' else '' end
                                 || (select string_agg('w' || ((i * 7 + j * 13) %% 500), ' ')
                                       from generate_series(1, 40 + i %% 60) j)
                 from generate_series(1, %s) i""",
            (group, episode, UNANALYZED_PASSAGES),
        )
        clear_statistics(admin, "vera.chunks")
        # a session of its own: a statement's generic plan is made at its first run in a session
        with caller(world.db, world.a.owner_key) as conn:
            before = conn.execute("select pg_stat_get_xact_numscans('vera.chunks'::regclass)").fetchone()
            hits = conn.execute(
                "select item_id from vera.search('needle', groups => %s, k => 10, candidates => 40,"
                " weights => '{\"relevance\": 1}')",
                ([group],),
            ).fetchall()
            after = conn.execute("select pg_stat_get_xact_numscans('vera.chunks'::regclass)").fetchone()
            conn.rollback()
    assert len(hits) == 10
    assert before is not None and after is not None
    assert after[0] - before[0] == 0, f"{after[0] - before[0]} sequential scans of vera.chunks"


def test_a_fact_round_reads_the_word_index_in_a_table_of_a_few_thousand_facts(world: World) -> None:
    """In a generic plan a round's tsquery is a parameter, whose match the planner takes for a fixed
    share of the rows; with visibility's "valid_from <= the reference" beside it, a round over a
    table of a few thousand facts, freshly analyzed, read them through the valid-time index
    (group first: every fact of the group, each one's keyed words tested by a regular expression),
    60-110 ms a round statement on 3,005 facts, and load_mix.py's searches at 250 ms. A round
    reads its facts through the word index: few index entries, and no sequential read."""
    group, _ = _group_of_facts(
        world, "a few thousand", "needle",
        "case when i %% 20 = 0 then 'needle fact ' else 'other fact ' end || i", FREQUENT_FACTS,
    )  # fmt: skip
    with world.db.admin() as admin:
        admin.execute("analyze vera.facts")
    # a session of its own: a statement's generic plan is made at its first run in a session
    with caller(world.db, world.a.owner_key) as conn:
        hits = conn.execute(
            "select item_id from vera.search('needle', groups => %s, k => 10, candidates => 40,"
            " weights => '{\"relevance\": 1}')",
            ([group],),
        ).fetchall()
        sequential, index_entries = conn.execute(
            """select pg_stat_get_xact_tuples_returned('vera.facts'::regclass),
                      (select sum(pg_stat_get_xact_tuples_returned(i.indexrelid))
                         from pg_index i where i.indrelid = 'vera.facts'::regclass)"""
        ).fetchone()  # type: ignore[misc]
        conn.rollback()
    assert len(hits) == 10
    assert sequential == 0, f"{sequential} facts read sequentially"
    # the 101 facts holding "needle" through the word index, and the candidates by key; not the
    # group's 2,001 through the valid-time index
    assert index_entries < 500, f"{index_entries} index entries of vera.facts read"
