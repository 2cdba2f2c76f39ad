"""BM25 of the lexical half (sql/functions/170_ranking.sql, 177_lexical_candidates.sql) on a
corpus small enough to compute by hand: three passages, a two-word query, the
statistics before and after a retraction takes one passage out.

    idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))
    score(d) = sum over query terms t in d of
               idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
    k1 = 1.2; b = 0.75 for passages, 0 for facts; |d| = distinct words of d
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import project_with_source, record_episode

K1, B = 1.2, 0.75
PASSAGES = {
    "d1": "apple banana apple",  # 2 distinct words, apple twice
    "d2": "banana cherry",  # 2 distinct words
    "d3": "cherry date elderberry fig",  # 4 distinct words
}
QUERY = "Apple cherry?"

# What the lexical half does with its statistics (vera.search_candidates): the
# weights of the query terms, then each passage's score, as the superuser.
_SCORES = """
with stats as (
    select k.kind, s.term, s.documents, s.tokens
      from unnest('{fact,passage}'::vera.item_kind[]) k(kind)
     cross join lateral vera.term_statistics(%(groups)s, k.kind, vera.query_terms(%(query)s)) s
), weights as (
    select w.* from vera.bm25_weights((select array_agg(kind) from stats), (select array_agg(term) from stats),
                                      (select array_agg(documents) from stats), (select array_agg(tokens) from stats)) w
     where w.kind = 'passage'
), ranked as (
    select array_agg(term order by postings, term) as terms, array_agg(postings order by postings, term) as postings,
           array_agg(idf order by postings, term) as idfs,
           array_agg(most_held order by postings, term) as most_held, min(average_length) as average_length
      from weights
)
select l.item_id, l.score
  from ranked r
 cross join lateral vera.lexical_candidates('passage', %(groups)s, r.terms, r.postings, r.idfs, r.most_held,
                                            r.average_length,
                                            now(), null, null, 10, %(groups)s) l
"""


def _idf(documents: int, frequency: int) -> float:
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


def _score(tokens: list[str], idfs: dict[str, float], average: float) -> float:
    total = 0.0
    for term, idf in idfs.items():
        tf = tokens.count(term)
        if tf:
            total += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(set(tokens)) / average))
    return total


def _expected(texts: dict[str, str]) -> dict[str, float]:
    """The formula over the passages given: N, df and avgdl counted here, in Python."""
    documents = {name: text.split() for name, text in texts.items()}
    average = sum(len(set(tokens)) for tokens in documents.values()) / len(documents)
    query = ["apple", "cherry"]
    idfs = {t: _idf(len(documents), sum(t in tokens for tokens in documents.values())) for t in query}
    scores = {name: _score(tokens, idfs, average) for name, tokens in documents.items()}
    return {name: score for name, score in scores.items() if score > 0}


@pytest.fixture
def corpus(world: World) -> Any:
    """A project holding the three passages, each in its own episode (committed; removed after)."""
    with caller(world.db, world.a.owner_key) as conn:
        group, source = project_with_source(conn, world.a.organisation, "bm25 by hand")
        episodes: dict[str, UUID] = {}
        chunks: dict[UUID, str] = {}
        for name, text in PASSAGES.items():
            episodes[name], _, _ = record_episode(conn, group, source, name, text)
            stored = conn.execute(
                "select chunk_id from vera.store_chunks(%s, %s, %s, null)",
                (group, episodes[name], Jsonb([{"text": text}])),
            ).fetchone()
            chunks[stored[0]] = name  # type: ignore[index]
        conn.commit()
    yield group, episodes, chunks
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.erase_source(%s, %s, 'test done')", (group, source))
        conn.commit()


def _scores(world: World, group: str, chunks: dict[UUID, str]) -> dict[str, float]:
    with world.db.admin() as conn:
        rows = conn.execute(_SCORES, {"groups": [group], "query": QUERY}).fetchall()  # type: ignore[arg-type]
    return {chunks[item]: score for item, score in rows}


def _statistics(world: World, group: str) -> dict[str, tuple[int, int]]:
    with world.db.admin() as conn:
        rows = conn.execute(
            "select term, documents, tokens from vera.term_statistics(%s, 'passage', %s)",
            ([group], ["apple", "banana", "cherry", "fig"]),
        ).fetchall()
    return {term: (documents, tokens) for term, documents, tokens in rows}


def test_scores_follow_the_formula_by_hand(world: World, corpus: Any) -> None:
    group, _, chunks = corpus
    assert _statistics(world, group) == {
        "": (3, 8), "apple": (1, 2), "banana": (2, 2), "cherry": (2, 2), "fig": (1, 1)
    }  # fmt: skip
    scores = _scores(world, group, chunks)
    # N = 3, avgdl = 8 / 3: idf(apple) = ln(1 + 2.5 / 1.5), idf(cherry) = ln(1 + 1.5 / 2.5)
    assert scores == pytest.approx({"d1": 1.450638, "d2": 0.523548, "d3": 0.390192}, abs=1e-6)
    assert scores == pytest.approx(_expected(PASSAGES), rel=1e-12)
    assert list(scores) == ["d1", "d2", "d3"]  # the lexical list's order


def test_a_retraction_changes_the_statistics_and_the_scores(world: World, corpus: Any) -> None:
    group, episodes, chunks = corpus
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.retract_episode(%s, %s, 'wrong')", (group, episodes["d3"]))
        conn.commit()
    assert _statistics(world, group) == {
        "": (2, 4),
        "apple": (1, 2),
        "banana": (2, 2),
        "cherry": (1, 1),
        "fig": (0, 0),
    }
    scores = _scores(world, group, chunks)
    # N = 2, avgdl = 2: both idfs are ln 2; d2 = ln 2 * 2.2 / (1 + 1.2) = ln 2 exactly
    assert scores == pytest.approx({"d1": 0.953077, "d2": math.log(2)}, abs=1e-6)
    remaining = {name: text for name, text in PASSAGES.items() if name != "d3"}
    assert scores == pytest.approx(_expected(remaining), rel=1e-12)


def test_a_passage_that_no_longer_counts_is_not_a_candidate_either(world: World, corpus: Any) -> None:
    """d3 (retracted) drops out of the list; the others keep their order."""
    group, episodes, chunks = corpus
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.retract_episode(%s, %s, 'wrong')", (group, episodes["d3"]))
        hits = conn.execute(
            "select item_id from vera.search(%s, groups => %s) where kind = 'passage'", (QUERY, [group])
        ).fetchall()
        conn.rollback()
    assert [chunks[row[0]] for row in hits] == ["d1", "d2"]


def test_the_empty_and_unknown_queries_score_nothing(world: World, corpus: Any) -> None:
    group, _, _ = corpus
    with world.db.admin() as conn:
        for query in ("", "?!", "kiwi"):
            rows = conn.execute(_SCORES, {"groups": [group], "query": query}).fetchall()  # type: ignore[arg-type]
            assert rows == [], query


def test_a_passages_stored_length_is_its_distinct_words_after_every_write(world: World, corpus: Any) -> None:
    """vera.chunks.words (0019_passage_words), the length the passages' rounds score with, is
    generated from tsv after chunks_set_tsv sets it: the distinct words, a Vietnamese text's word
    pairs left out, on insert and on every update of the text; no statement can set it."""
    group, _, chunks = corpus
    lengths = "select chunk_id, words from vera.chunks where group_id = %s"
    with world.db.admin() as conn:
        stored = {chunks[c]: w for c, w in conn.execute(lengths, (group,)).fetchall()}
        assert stored == {"d1": 2, "d2": 2, "d3": 4}
        d2 = next(c for c, name in chunks.items() if name == "d2")
        conn.execute(
            "update vera.chunks set text = %s where group_id = %s and chunk_id = %s",
            ("Thành phố Hồ Chí Minh là thành phố lớn", group, d2),
        )
        words, lexemes, pairs = conn.execute(
            "select words, length(tsv), length(ts_filter(tsv, '{c}')) from vera.chunks"
            " where group_id = %s and chunk_id = %s",
            (group, d2),
        ).fetchone()  # type: ignore[misc]
        assert pairs > 0 and (words, lexemes - pairs) == (7, 7)
        with pytest.raises(psycopg.errors.GeneratedAlways):
            conn.execute("update vera.chunks set words = 1 where chunk_id = %s", (d2,))


def test_a_passages_words_stay_in_its_row_and_a_rewrite_moves_older_ones_in(
    world: World, corpus: Any
) -> None:
    """A lexical round reads every passage's tsvector: a long passage's (over 2 kB) is kept in its
    row (storage main, 0020_passage_words_inline), not in the TOAST table, where reading it cost a
    probe and a page per passage. The migration changes the rule alone; a passage stored before it
    stays out of its row until `vacuum full vera.chunks` (docs/operations.md) moves it in, its
    length unchanged. (The table as before 0020 is made by setting tsv's storage back to the
    default; the storage is main again at the end whatever happens.)"""
    group, _, chunks = corpus
    d3 = next(c for c, name in chunks.items() if name == "d3")
    long_text = " ".join(f"word{i} other{i}" for i in range(120))
    toasted = "select pg_column_toast_chunk_id(tsv) is not null, words, length(tsv) from vera.chunks where chunk_id = %s"
    set_text = "update vera.chunks set text = %s where group_id = %s and chunk_id = %s"
    migration = (Path(__file__).parents[2] / "sql/migrations/0020_passage_words_inline.sql").read_text()
    with world.db.admin() as conn:
        conn.autocommit = True
        try:
            conn.execute(set_text, (long_text, group, d3))
            assert conn.execute(toasted, (d3,)).fetchone() == (False, 240, 240)
            conn.execute("alter table vera.chunks alter column tsv set storage extended")  # as before 0020
            conn.execute(set_text, (long_text + " x", group, d3))
            assert conn.execute(toasted, (d3,)).fetchone() == (True, 241, 241)
            conn.execute(migration)
            assert conn.execute(toasted, (d3,)).fetchone() == (True, 241, 241)
            conn.execute("vacuum full vera.chunks")
            assert conn.execute(toasted, (d3,)).fetchone() == (False, 241, 241)
        finally:
            conn.execute("alter table vera.chunks alter column tsv set storage main")


def test_the_passage_score_with_the_stored_length_is_bm25_to_the_last_bit(world: World, corpus: Any) -> None:
    """vera.bm25_passage_score (the rounds') equals vera.bm25_document_score (the brute force's,
    stage 2's) bit for bit, for few and for many query terms (over ten, where the planner joins
    the query's terms the other way round and the sum takes them in another order)."""
    group, _, _ = corpus
    vocabulary = ["apple", "banana", "cherry", "date", "elderberry", "fig"] + [f"x{i}" for i in range(14)]
    with world.db.admin() as conn:
        conn.execute(
            "update vera.chunks set text = text || ' apple fig cherry date banana banana' where group_id = %s",
            (group,),
        )
        for size in (1, 2, 3, 6, 11, 16, 20):
            terms = vocabulary[:size]
            idfs = [0.3 + 0.7 * ((i * 7) % 11) for i in range(size)]
            rows = conn.execute(
                """select a.score, b.score
                     from vera.chunks c
                    cross join lateral vera.bm25_document_score('passage', c.tsv, %(terms)s, %(idfs)s, 3.7) a
                    cross join lateral vera.bm25_passage_score(c.tsv, c.words, %(terms)s, %(idfs)s, 3.7) b
                    where c.group_id = %(group)s""",
                {"terms": terms, "idfs": idfs, "group": group},
            ).fetchall()
            assert len(rows) == 3 and all(a == b for a, b in rows), (size, rows)


# Texts whose words the text form of a tsvector quotes or escapes, or that hold none.
ODD_TEXTS = [
    "it's O'Brien's 'quoted' word",
    "back\\slash and a\\\\b",
    "Tháng 3 năm 2020: giá tăng 5% (ước tính)",
    "tabs\tand\nnew lines  and   spaces",
    "emoji 🙂 and ü and 中文",
    "!!! ???",
    "",
]


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_the_facts_index_keys_every_word_by_its_group_and_part(world: World, text: str) -> None:
    """vera.group_lexemes (the facts' full-text index, migrations 0004 and 0005) is the text's words,
    each once behind its group id and a space, and each once more followed by a space and the part
    (the fact id's last hex digit): no word lost, split or merged by the quoting."""
    group = world.a.organisation
    fact = UUID("0190c2a0-0000-7000-8000-00000000000b")
    with world.db.admin() as conn:
        got, words = conn.execute(
            "select tsvector_to_array(vera.group_lexemes(%(group)s, %(fact)s, to_tsvector('simple', %(text)s))),"
            " tsvector_to_array(to_tsvector('simple', %(text)s))",
            {"group": group, "fact": fact, "text": text},
        ).fetchone()  # type: ignore[misc]
    assert sorted(got) == sorted(
        [f"{group} {word}" for word in words] + [f"{group} {word} b" for word in words]
    )


@pytest.mark.parametrize("parts", [None, ["0", "1"]])
def test_the_facts_rounds_read_the_group_word_index(world: World, parts: list[str] | None) -> None:
    """The round's condition (vera.group_lexemes, inlined) is the index's expression: if the two
    drift apart, the lexical half falls back to reading every fact of the group."""
    with world.db.admin() as conn:
        conn.execute("set enable_seqscan = off")
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "explain select f.fact_id from vera.facts f where vera.group_lexemes(f.group_id, f.fact_id, f.tsv)"
                " @@ vera.group_lexeme_query(%s, '{ledger}', '{api}', %s)",
                ([world.a.organisation, world.b.organisation], parts),
            )
        )
    assert "facts_group_lexemes_idx" in plan, plan


def test_the_group_word_index_statistics_stay_hidden_from_login_roles(world: World) -> None:
    """ANALYZE keeps the index expression's most common elements ("<group_id> <word>": other
    tenants' group ids and words) in pg_statistic; pg_stats shows them to no login role."""
    with world.db.admin() as admin:
        admin.execute("analyze vera.facts")
        assert admin.execute(
            "select count(*) from pg_stats where tablename = 'facts_group_lexemes_idx'"
        ).fetchone() == (1,)
    with world.db.connect() as conn:
        assert conn.execute(
            "select count(*) from pg_stats where tablename = 'facts_group_lexemes_idx'"
        ).fetchone() == (0,)
