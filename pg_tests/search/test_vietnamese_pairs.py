"""Vietnamese text is indexed and searched by its adjacent word pairs too
(sql/functions/173_lexical_terms.sql, migrations 0015 and 0016, vera-search/10 and
/11): a Vietnamese phrase matches the text that holds it by its syllable pairs; English
text and queries get none, nor do words with punctuation between them or Romanian and
Serbian names; pairs count in no document length, so English statistics are those of
words alone; the stored tsvectors, the query's terms and the BM25 statistics agree; and
migrations 0015 and 0016 bring rows stored before them to the same state, twice run the
same as once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pg_tests.support.databases import ROOT, Database
from pg_tests.support.searching import search
from pg_tests.support.seed import World, caller, seed_world
from pg_tests.support.writes import claim, project_with_source, publish, record_episode

MIGRATION = ROOT / "sql" / "migrations" / "0015_vietnamese_pairs.sql"
REFINEMENT = ROOT / "sql" / "migrations" / "0016_vietnamese_pair_weights.sql"

VIETNAMESE = "Thành phố Hồ Chí Minh là thành phố lớn nhất Việt Nam"
ENGLISH = "Ho Chi Minh City, once Sài Gòn, is the largest city of Vietnam"


def lexemes(conn: psycopg.Connection, text: str) -> dict[str, list[int]]:
    rows = conn.execute(
        "select u.lexeme, u.positions from unnest(vera.lexical_tsvector(%s)) u", (text,)
    ).fetchall()
    return {lexeme: list(positions) for lexeme, positions in rows}


def pairs(tsv: dict[str, list[int]]) -> set[str]:
    return {lexeme for lexeme in tsv if "_" in lexeme}


def test_vietnamese_text_holds_its_adjacent_syllable_pairs(world: World) -> None:
    with world.db.admin() as conn:
        tsv = lexemes(conn, VIETNAMESE)
        words = conn.execute(
            "select u.lexeme, u.positions from unnest(to_tsvector('simple', %s)) u", (VIETNAMESE,)
        ).fetchall()
    # every word as before, with its positions
    assert {lexeme: list(positions) for lexeme, positions in words}.items() <= tsv.items()
    assert pairs(tsv) == {
        "thành_phố", "phố_hồ", "hồ_chí", "chí_minh", "minh_là", "là_thành",
        "phố_lớn", "lớn_nhất", "nhất_việt", "việt_nam",
    }  # fmt: skip
    # a pair sits at its first word's positions, once per occurrence: its term frequency
    assert tsv["thành_phố"] == [1, 7]
    assert tsv["việt_nam"] == [11]


def test_english_text_and_queries_get_no_pairs(world: World) -> None:
    with world.db.admin() as conn:
        for text in (ENGLISH, "Which cluster does billing-api run on?", "the café of Zoë", ""):
            tsv = lexemes(conn, text)
            assert pairs(tsv) == set(), text
            same = conn.execute(
                "select vera.lexical_tsvector(%(t)s) = to_tsvector('simple', %(t)s)", {"t": text}
            ).fetchone()
            assert same == (True,), text
        terms = conn.execute("select vera.query_terms(%s)", ("Which city is the largest?",)).fetchone()
        assert terms == (["city", "is", "largest", "the", "which"],)


def test_a_vietnamese_querys_terms_are_its_words_and_pairs(world: World) -> None:
    with world.db.admin() as conn:
        terms = conn.execute("select vera.query_terms(%s)", ("Thành phố nào lớn nhất?",)).fetchone()
    assert terms == (
        sorted(["thành", "phố", "nào", "lớn", "nhất", "thành_phố", "phố_nào", "nào_lớn", "lớn_nhất"]),
    )


def _texts(hits: list[dict[str, Any]]) -> list[str]:
    return [hit["text"] for hit in hits]


def test_a_vietnamese_phrase_matches_by_its_syllable_pairs(world: World) -> None:
    """Both facts hold the query's three words; the one holding them apart holds "phố"
    twice, so unigram BM25 ranks it first (facts are not length-normalised): the one
    holding the phrase comes first by its pairs, thành_phố and phố_được."""
    apart = "Phố cổ được xây trong thành cũ, phố nhỏ"
    phrase = "Thành phố được xây bên sông"
    with caller(world.db, world.a.owner_key) as conn:
        group, source = project_with_source(conn, world.a.organisation, "vi-pairs")
        episode, _, _ = record_episode(conn, group, source, "notes", "v1")
        publish(conn, group, episode, [
            claim("phố cổ", "has", "thành cũ", fact_text=apart),
            claim("thành phố", "has", "sông", fact_text=phrase),
            claim("Sài Gòn", "is", "a city", fact_text=ENGLISH),
        ])  # fmt: skip
        hits = search(conn, "thành phố được", groups=[group], k=3)
        stored = dict(
            conn.execute(
                "select fact_text, tsvector_to_array(tsv) from vera.facts where group_id = %s", (group,)
            ).fetchall()
        )
        conn.rollback()
    with world.db.admin() as admin:
        words_only = admin.execute(
            "select vera.bm25_score('fact', to_tsvector('simple', t), array['thành', 'phố', 'được'],"
            " array[1.0, 1.0, 1.0], 1) from unnest(array[%s, %s]) t",
            (apart, phrase),
        ).fetchall()
    assert words_only[0][0] > words_only[1][0]  # by the words alone, the one holding them apart
    assert _texts(hits)[:2] == [phrase, apart]
    assert "thành_phố" in stored[phrase]
    assert "thành_phố" not in stored[apart] and "phố_cổ" in stored[apart]
    assert [t for t in stored[ENGLISH] if "_" in t] == []


def test_passages_hold_the_pairs_of_their_heading_and_text(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, source = project_with_source(conn, world.a.organisation, "vi-passages")
        episode, _, _ = record_episode(conn, group, source, "page", "v1")
        conn.execute(
            "select * from vera.store_chunks(%s, %s, %s)",
            (group, episode, Jsonb([{"heading": "Lịch sử", "text": "Thành phố được thành lập năm 1698"},
                                    {"heading": "History", "text": "The city was founded in 1698"}])),
        )  # fmt: skip
        rows = conn.execute(
            "select text, tsvector_to_array(tsv) from vera.chunks where group_id = %s", (group,)
        ).fetchall()
        conn.rollback()
    stored = dict(rows)
    assert {"lịch_sử", "sử_thành", "thành_phố", "năm_1698"} <= set(
        stored["Thành phố được thành lập năm 1698"]
    )
    assert [t for t in stored["The city was founded in 1698"] if "_" in t] == []


def test_pairs_join_only_words_with_white_space_between_them(world: World) -> None:
    with world.db.admin() as conn:
        apart = lexemes(conn, "Đây là thành, phố (Hà) Nội; thành-phố lớn")
        together = lexemes(conn, "Đây là thành phố\tHà  Nội")
    assert pairs(apart) == {"đây_là", "là_thành", "phố_lớn"}
    assert pairs(together) == {"đây_là", "là_thành", "thành_phố", "phố_hà", "hà_nội"}


def test_romanian_and_serbian_names_get_no_pairs(world: World) -> None:
    """Breve and đ alone are Romanian's and Serbian's too: a Vietnamese text has a tone mark."""
    with world.db.admin() as conn:
        for text in ("CS Aerostar Bacău", "Novak Đoković", "Bucureşti şi Bacău"):
            assert pairs(lexemes(conn, text)) == set(), text
            language = conn.execute("select vera.query_language(%s)", (text,)).fetchone()
            assert language is not None and language[0] != "vi", text
        assert pairs(lexemes(conn, "Đăng ký ở Đà Lạt")) == {"đăng_ký", "ký_ở", "ở_đà", "đà_lạt"}


def test_pairs_count_in_no_document_length(world: World) -> None:
    """Pairs have weight C, words D; a document's length is its words': the same BM25 score
    and the same corpus length as its words alone give, so that Vietnamese paragraphs do not
    lengthen the average English ones are normalised against."""
    with world.db.admin() as conn:
        weights = conn.execute(
            "select u.lexeme like '%%!_%%' escape '!', array_agg(distinct w)"
            " from unnest(vera.lexical_tsvector(%s)) u, unnest(u.weights) w group by 1 order by 1",
            (VIETNAMESE,),
        ).fetchall()
        assert weights == [(False, ["D"]), (True, ["C"])]
        scores = conn.execute(
            "select vera.bm25_score('fact', vera.lexical_tsvector(%(t)s), array['thành', 'việt'],"
            " array[1.0, 2.0], 5), vera.bm25_score('fact', to_tsvector('simple', %(t)s),"
            " array['thành', 'việt'], array[1.0, 2.0], 5)",
            {"t": VIETNAMESE},
        ).fetchone()
        assert scores is not None and scores[0] == scores[1]
    with caller(world.db, world.a.owner_key) as conn:
        group, source = project_with_source(conn, world.a.organisation, "vi-length")
        episode, _, _ = record_episode(conn, group, source, "notes", "v1")
        publish(conn, group, episode, [
            claim("thành phố", "is", "lớn", fact_text=VIETNAMESE),
            claim("Saigon", "is", "a city", fact_text=ENGLISH),
        ])  # fmt: skip
        conn.commit()
    with world.db.admin() as admin:
        corpus = admin.execute(
            "select documents, tokens from vera.term_stats where group_id = %s and kind = 'fact' and term = ''",
            (group,),
        ).fetchone()
        words = admin.execute(
            "select length(to_tsvector('simple', %s)) + length(to_tsvector('simple', %s))",
            (VIETNAMESE, ENGLISH),
        ).fetchone()
        pair_terms = admin.execute(
            "select count(*) from vera.term_stats where group_id = %s and term like '%%!_%%' escape '!'",
            (group,),
        ).fetchone()
    assert words is not None and corpus == (2, words[0])
    assert pair_terms is not None and pair_terms[0] == 10  # the pairs are terms, with their own statistics


def test_the_stored_tsvector_follows_the_text_and_is_never_given(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, source = project_with_source(conn, world.a.organisation, "vi-derived")
        episode, _, _ = record_episode(conn, group, source, "notes", "v1")
        [fact] = publish(
            conn, group, episode, [claim("hà nội", "is", "thủ đô", fact_text="Hà Nội là thủ đô")]
        )
        conn.commit()
    with world.db.admin() as admin:
        fact_id = fact["fact_id"]
        admin.execute(
            "update vera.facts set tsv = to_tsvector('simple', 'nonsense') where fact_id = %s", (fact_id,)
        )
        kept = admin.execute(
            "select tsv = vera.lexical_tsvector(fact_text), 'hà_nội' = any (tsvector_to_array(tsv))"
            " from vera.facts where fact_id = %s",
            (fact_id,),
        ).fetchone()
        assert kept == (True, True)
        admin.execute(
            "update vera.facts set fact_text = 'Hà Nội là thủ đô của Việt Nam' where fact_id = %s", (fact_id,)
        )
        changed = admin.execute(
            "select 'việt_nam' = any (tsvector_to_array(tsv)) from vera.facts where fact_id = %s", (fact_id,)
        ).fetchone()
        assert changed == (True,)


# ---------------------------------------------------------------- migration 0015

STATISTICS = """
    with docs as (
        select f.group_id, 'fact'::vera.item_kind as kind, f.tsv from vera.facts f
         where f.lifecycle in ('published', 'superseded', 'proposal')
        union all
        select c.group_id, 'passage', c.tsv from vera.chunks c
          join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
         where c.lifecycle in ('published', 'proposal') and e.status <> 'retracted'
    )
    select d.group_id, d.kind, u.lexeme, count(*), sum(cardinality(u.positions)) from docs d, unnest(d.tsv) u
     group by 1, 2, 3
    union all
    select d.group_id, d.kind, '', count(*), sum(length(d.tsv) - length(ts_filter(d.tsv, '{c}')))
      from docs d group by 1, 2
"""


def recounted(admin: psycopg.Connection, groups: list[str]) -> set[tuple[Any, ...]]:
    rows = admin.execute(STATISTICS).fetchall()
    return {tuple(map(str, row)) for row in rows if row[0] in groups}


def stored_statistics(admin: psycopg.Connection, groups: list[str]) -> set[tuple[Any, ...]]:
    rows = admin.execute(
        "select group_id, kind, term, documents, tokens from vera.term_stats where group_id = any (%s)",
        (groups,),
    ).fetchall()
    return {tuple(map(str, row)) for row in rows}


def as_before_0015(admin: psycopg.Connection) -> None:
    """Every row as vera-search/9 stored it (to_tsvector('simple'), no pairs), the statistics
    recounted from those: the state migration 0015 starts from."""
    admin.execute("alter table vera.facts disable trigger facts_set_tsv")
    admin.execute("alter table vera.chunks disable trigger chunks_set_tsv")
    admin.execute("update vera.facts set tsv = to_tsvector('simple', fact_text)")
    admin.execute("update vera.chunks set tsv = to_tsvector('simple', coalesce(heading, '') || ' ' || text)")
    admin.execute("alter table vera.facts enable trigger facts_set_tsv")
    admin.execute("alter table vera.chunks enable trigger chunks_set_tsv")
    admin.execute("delete from vera.term_stats")
    admin.execute(
        f"insert into vera.term_stats (group_id, kind, term, documents, tokens) select * from ({STATISTICS}) s"
    )


def migrate_0015(admin: psycopg.Connection) -> None:
    """0015 as an upgrade from vera-search/9 runs it: before the triggers that set tsv exist."""
    admin.execute("alter table vera.facts disable trigger facts_set_tsv")
    admin.execute("alter table vera.chunks disable trigger chunks_set_tsv")
    admin.execute(Path(MIGRATION).read_text())  # type: ignore[arg-type]
    admin.execute("alter table vera.facts enable trigger facts_set_tsv")
    admin.execute("alter table vera.chunks enable trigger chunks_set_tsv")


def migrate_0016(admin: psycopg.Connection) -> None:
    admin.execute(Path(REFINEMENT).read_text())  # type: ignore[arg-type]


def test_migrations_0015_and_0016_bring_rows_stored_before_them_to_the_rule(make_database) -> None:
    database: Database = make_database()
    world = _small_world(database)
    with database.admin(autocommit=False) as admin:
        as_before_0015(admin)
        admin.commit()
        pair_rows = admin.execute(
            "select count(*) from vera.facts where exists (select from unnest(tsv) u where u.lexeme like '%!_%' escape '!')"
        ).fetchone()
        assert pair_rows == (0,)
        migrate_0015(admin)
        admin.commit()
        # 0015's pairs: weight D, across punctuation, for a Romanian name too; counted in length
        crossing = admin.execute(
            "select count(*) filter (where 'phố_sài' = any (tsvector_to_array(tsv))),"
            " count(*) filter (where 'aerostar_bacău' = any (tsvector_to_array(tsv))),"
            " count(*) filter (where length(ts_filter(tsv, '{c}')) > 0) from vera.facts"
        ).fetchone()
        assert crossing == (2, 2, 0)
        assert stored_statistics(admin, world) == recounted(admin, world)
        migrate_0016(admin)
        admin.commit()
        stale = admin.execute(
            """select (select count(*) from vera.facts where tsv is distinct from vera.lexical_tsvector(fact_text)),
                      (select count(*) from vera.chunks
                        where tsv is distinct from vera.lexical_tsvector(coalesce(heading, '') || ' ' || text)),
                      (select count(*) from vera.facts
                        where exists (select from unnest(tsv) u where u.lexeme like '%!_%' escape '!')),
                      (select count(*) from vera.facts
                        where 'phố_sài' = any (tsvector_to_array(tsv))
                           or 'aerostar_bacău' = any (tsvector_to_array(tsv)))"""
        ).fetchone()
        assert stale is not None and stale[:2] == (0, 0) and stale[2] > 0 and stale[3] == 0
        assert stored_statistics(admin, world) == recounted(admin, world)
        # the corpus rows count words alone: as to_tsvector('simple') counts them, before any pair
        words_only = admin.execute(
            "select group_id, sum(length(to_tsvector('simple', fact_text)))::text from vera.facts"
            " where group_id = any (%s) group by 1",
            (world,),
        ).fetchall()
        corpus = admin.execute(
            "select group_id, tokens::text from vera.term_stats where group_id = any (%s) and kind = 'fact' and term = ''",
            (world,),
        ).fetchall()
        assert sorted(corpus) == sorted(words_only)
        snapshot = stored_statistics(admin, world)
        migrate_0016(admin)  # again: nothing changes, nothing is counted twice
        admin.commit()
        assert stored_statistics(admin, world) == snapshot
        forced = admin.execute(
            "select bool_and(relforcerowsecurity) from pg_class"
            " where oid in ('vera.facts'::regclass, 'vera.chunks'::regclass, 'vera.episodes'::regclass)"
        ).fetchone()
        assert forced == (True,)
        enabled = admin.execute(
            "select array_agg(tgenabled::text) from pg_trigger where tgname in ('facts_set_tsv', 'chunks_set_tsv')"
        ).fetchone()
        assert enabled == (["O", "O"],)


def _small_world(database: Database) -> list[str]:
    """Two tenants' groups with Vietnamese and English facts and passages; their group ids."""
    world = seed_world(database)
    groups = []
    for tenant in (world.a, world.b):
        with caller(database, tenant.owner_key) as conn:
            group, source = project_with_source(conn, tenant.organisation, "before-0015")
            episode, _, _ = record_episode(conn, group, source, "page", "v1")
            publish(conn, group, episode, [
                claim("thành phố", "is", "lớn", fact_text=VIETNAMESE),
                claim("Saigon", "is", "a city", fact_text=ENGLISH),
                claim("ho chi minh", "is", "thành phố", fact_text="Đây là thành phố, Sài Gòn cũ"),
                claim("CS Aerostar Bacău", "is", "a club", fact_text="CS Aerostar Bacău"),
            ])  # fmt: skip
            conn.execute(
                "select * from vera.store_chunks(%s, %s, %s)",
                (group, episode, Jsonb([{"heading": "Lịch sử", "text": "Thành phố được thành lập năm 1698"},
                                        {"text": "The city was founded in 1698"}])),
            )  # fmt: skip
            conn.commit()
            groups.append(group)
    return groups


def test_pairs_follow_query_language_whatever_text_skips_its_word_split(world: World) -> None:
    """lexical_tsvector asks vera.query_language only of text holding a mark that 'vi' needs (in
    NFD: hook above, dot below, horn, breve, đ): the shortcut (issue 31: a scientific abstract's µ
    or ° cost its passage 1-3 ms of word split) never changes which text gets pairs."""
    texts = [
        VIETNAMESE, ENGLISH, "the café of Zoë and Renée", "café crème brûlée à la carte",
        "Привет, как дела?", "東京 タワー はどこ ですか", "don’t stop — the 10€ deal…", "Straße München über",
        "CS Aerostar Bacău", "Novak Đoković", "Đà Nẵng", "Ăn cơm chưa?", "Đăng ký ở đâu", "Tôi đi học",
        "route-planner chạy trên cụm nào?", "5–10 µg of CO₂ at 37 °C (p ≤ 0.05)", "Ai là người đã đặt tên",
        "Việt Nam", "Hà Nội là thủ đô", "mười năm trước",
    ]  # fmt: skip
    with world.db.admin() as conn:
        for text in texts:
            [(language,)] = conn.execute("select vera.query_language(%s)", (text,)).fetchall()
            assert bool(pairs(lexemes(conn, text))) == (language == "vi"), text
