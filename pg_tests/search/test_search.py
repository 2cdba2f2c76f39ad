"""vera.search (sql/functions/180_search.sql, with stage 1 in 179_search_candidates.sql):
one call, lexical + vector candidates fused by reciprocal rank, valid time, tenancy, the
vector half's per-group scans, and answers to bad input. The parts have their own modules:
test_vector_targets.py, test_lexical_candidates.py (and test_bm25.py), test_blend.py."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.search_corpus import RUNBOOK, VIETNAMESE, Corpus, build_corpus, embedded_claim
from pg_tests.support.searching import MODEL, embed, search, texts, vector_literal
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import publish, record_episode, register_source


@pytest.fixture(scope="module")
def corpus(world: World) -> Corpus:
    return build_corpus(world)


def _signals(hit: dict[str, Any]) -> dict[str, float]:
    return {
        name: hit[name]
        for name in ("relevance", "authority", "verification", "recency", "feedback", "confidence")
    }


def test_lexical_search_returns_facts_and_passages_with_signals_and_citations(
    world: World, corpus: Corpus
) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        hits = search(conn, "billing pods restart", groups=[corpus.group])
    assert hits, "the runbook passage must be found"
    top = hits[0]
    assert top["kind"] == "passage"
    assert top["text"] == RUNBOOK
    assert top["rank"] == 1
    citation = top["citation"]
    assert citation["source"]["name"] == "wiki"
    assert citation["episode"]["external_id"] == "runbook.md"
    assert citation["chunk"]["heading"] == "Restart"
    assert citation["tier"] == 2
    # the score is the default blend of the seven signals
    signals = _signals(top)
    expected = (0.40 * signals["relevance"] + 0.18 * signals["authority"] + 0.12 * signals["verification"]
                + 0.12 * signals["recency"] + 0.08 * signals["feedback"] + 0.10 * signals["confidence"])  # fmt: skip
    assert top["score"] == pytest.approx(expected, abs=1e-5)
    # relevance is the hit's own match confidence: its lexical match through the words-only model
    # (no vector searched), not a rank among the candidates (171_match_confidence.sql)
    assert top["similarity"] is None and top["lexical_match"] > 0
    assert signals["relevance"] == top["match_confidence"]
    with caller(world.db, world.a.viewer_key) as conn:
        calibrated = conn.execute(
            "select vera.match_confidence(%s, null)", (top["lexical_match"],)
        ).fetchone()
    assert calibrated == (pytest.approx(top["match_confidence"]),)
    assert signals["authority"] == pytest.approx(0.85)
    assert signals["feedback"] == pytest.approx(0.5)
    assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1))
    assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)


def test_a_fact_hit_carries_its_triple_and_provenance(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        hits = search(conn, "who owns billing-api", groups=[corpus.group])
    owned = next(hit for hit in hits if hit["predicate"] == "OWNED_BY")
    assert owned["kind"] == "fact"
    assert (owned["subject"], owned["object"]) == ("billing-api", "Payments Team")
    assert owned["citation"]["source"]["name"] == "cmdb"
    assert owned["citation"]["tier"] == 1
    assert owned["citation"]["verification"] == "auto"
    assert owned["authority"] == pytest.approx(1.0)
    assert owned["verification"] == pytest.approx(0.8)


def test_a_vietnamese_question_finds_the_vietnamese_passage_first(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        hits = search(conn, "thanh toán ở đâu", groups=[corpus.group])
    assert texts(hits)[:1] == [VIETNAMESE]


def test_folded_spelling_alone_finds_nothing(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        assert search(conn, "toan dich", groups=[corpus.group]) == []
        assert texts(search(conn, "toán dịch", groups=[corpus.group])) == [VIETNAMESE]


def test_vector_only_and_hybrid(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        by_vector = search(conn, embedding=embed(RUNBOOK), groups=[corpus.group], k=3)
        hybrid = search(conn, "restart billing pods", embedding=embed(RUNBOOK), groups=[corpus.group], k=3)
    assert by_vector[0]["text"] == RUNBOOK
    assert hybrid[0]["text"] == RUNBOOK
    # the query vector is the passage's own: similarity 1, and every query word matched
    assert hybrid[0]["similarity"] == pytest.approx(1.0)
    assert hybrid[0]["relevance"] == hybrid[0]["match_confidence"] > by_vector[0]["match_confidence"] > 0.5


def test_rrf_fuses_ranks_from_both_halves(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        both = search(conn, "billing-api runs on", embedding=embed("billing-api owned by Payments Team"),
                      groups=[corpus.group], k=20, weights=Jsonb({"relevance": 1}))  # fmt: skip
        lexical = search(
            conn, "billing-api runs on", groups=[corpus.group], k=20, weights=Jsonb({"relevance": 1})
        )
    owned = next(hit for hit in both if hit["predicate"] == "OWNED_BY")
    # relevance only: the vector half's rank-1 item ranks near the top of the fused list
    assert owned["rank"] <= 2
    assert [hit["score"] for hit in lexical] == [hit["relevance"] for hit in lexical]


def test_as_of_now_shows_the_current_value_and_as_of_before_the_migration_the_old_one(
    world: World, corpus: Corpus
) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        now = [h["object"] for h in search(conn, "billing-api runs on", groups=[corpus.group])
               if h["predicate"] == "RUNS_ON"]  # fmt: skip
        before = [h for h in search(conn, "billing-api runs on", groups=[corpus.group], as_of="2026-05-01")
                  if h["predicate"] == "RUNS_ON"]  # fmt: skip
    assert now == ["k8s-new"]
    assert [h["object"] for h in before] == ["k8s-old"]
    assert before[0]["citation"]["valid_to"].startswith("2026-09-01")
    assert before[0]["citation"]["lifecycle"] == "superseded"


def test_pending_retracted_and_others_proposals_are_hidden(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        seen = {(h["predicate"], h["object"]) for h in search(conn, "billing-api", groups=None, k=50)}
    assert ("DEPLOYS_WITH", "jenkins") not in seen  # pending review (tier 3)
    assert ("WRITTEN_IN", "cobol") not in seen  # retracted
    assert ("RUNS_ON", "heroku") not in seen  # someone else's proposal
    assert ("RUNS_ON", "k8s-new") in seen


def test_a_proposal_is_visible_in_its_proposers_own_scope(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        mine = search(conn, "billing-api runs on heroku", groups=[corpus.personal])
        shared = search(conn, "billing-api runs on heroku", groups=[corpus.group])
    assert [(h["object"], h["citation"]["lifecycle"]) for h in mine] == [("heroku", "proposal")]
    assert mine[0]["authority"] == pytest.approx(0.40)
    assert mine[0]["citation"]["source"]["name"] == "chat"
    assert mine[0]["citation"]["proposed_for"] == corpus.group
    assert "heroku" not in [h["object"] for h in shared]


def test_other_tenants_never_see_the_corpus(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.b.owner_key) as conn:
        assert search(conn, "billing pods restart", k=50) == []
        assert search(conn, embedding=embed(RUNBOOK), k=50) == []
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="cannot read group"):
            search(conn, "billing", groups=[corpus.group])


def test_unauthenticated_callers_are_refused(world: World, corpus: Corpus) -> None:
    with caller(world.db, None) as conn, pytest.raises(psycopg.Error) as error:
        search(conn, "billing")
    assert error.value.sqlstate == "VA005"


@pytest.mark.parametrize(
    ("arguments", "sqlstate", "message"),
    [
        ({"query": "   "}, "22023", "query text or a query embedding"),
        ({"query": None}, "22023", "query text or a query embedding"),
        ({"query": "billing", "k": 0}, "22023", "k must be between 1 and 1000"),
        ({"query": "billing", "k": 100000}, "22023", "k must be between 1 and 1000"),
        ({"query": "billing", "as_of": "infinity"}, "22023", "as_of must be a finite timestamp"),
        ({"query": "billing", "candidates": 0}, "22023", "candidates must be between"),
        ({"query": "billing", "k_rrf": -1}, "22023", "k_rrf must be between"),
        ({"query": "billing", "groups": []}, "22023", "at least one group"),
        ({"query": "billing", "weights": Jsonb({"relevance": -1})}, "22023", "non-negative"),
        ({"query": "billing", "weights": Jsonb({"popularity": 1})}, "22023", 'unknown weight "popularity"'),
        ({"query": "billing", "weights": Jsonb({"relevance": 0})}, "22023", "at least one weight"),
        ({"query": "x" * 8193}, "22001", "at most 8192"),
        ({"query": "billing", "lexical_weight": float("nan")}, "22023", "lexical_weight and vector_weight"),
        ({"query": "billing", "vector_weight": float("inf")}, "22023", "lexical_weight and vector_weight"),
        ({"query": "billing", "lexical_weight": 0, "vector_weight": 0}, "22023", "not both 0"),
    ],
)
def test_bad_arguments_get_a_clear_error(
    world: World, corpus: Corpus, arguments: dict[str, Any], sqlstate: str, message: str
) -> None:
    with caller(world.db, world.a.viewer_key) as conn, pytest.raises(psycopg.Error, match=message) as error:
        search(conn, **arguments)
    assert error.value.sqlstate == sqlstate


def test_many_candidates_keep_the_search_breadth_in_range(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        hits = search(
            conn, "billing", embedding=embed("billing"), groups=[corpus.group], k=5, candidates=5000
        )
    assert 0 < len(hits) <= 5


def test_unknown_words_punctuation_and_distant_instants_give_empty_results(
    world: World, corpus: Corpus
) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        assert search(conn, "xylophone quokka", groups=[corpus.group]) == []
        assert search(conn, "?!... ---", groups=[corpus.group]) == []
        assert search(conn, "billing-api", groups=[corpus.group], as_of="1900-01-01") == []
        future = search(conn, "billing-api runs on", groups=[corpus.group], as_of="2400-01-01")
    assert [h["object"] for h in future if h["predicate"] == "RUNS_ON"] == ["k8s-new"]


def test_a_passage_of_a_replaced_version_is_hidden_now_and_visible_before(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', 'versions')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        wiki = register_source(conn, group, "wiki", 2)
        first, _, _ = record_episode(conn, group, wiki, "page.md", "one", observed_at="2026-01-01")
        conn.execute(
            "select vera.store_chunks(%s, %s, %s)", (group, first, Jsonb([{"text": "zebra crossing"}]))
        )
        second, _, _ = record_episode(conn, group, wiki, "page.md", "two", observed_at="2026-06-01")
        conn.execute(
            "select vera.store_chunks(%s, %s, %s)", (group, second, Jsonb([{"text": "zebra stripes"}]))
        )
        assert texts(search(conn, "zebra", groups=[group])) == ["zebra stripes"]
        before = search(conn, "zebra", groups=[group], as_of="2026-03-01")
        assert texts(before) == ["zebra crossing"]
        assert before[0]["citation"]["valid_to"].startswith("2026-06-01")


def _towards(step: float) -> list[float]:
    """A unit vector at a cosine distance from the first axis that grows with step."""
    norm = (1 + step * step) ** 0.5
    return [1 / norm, step / norm] + [0.0] * 14


def _group_whose_nearest_passages_are_not_current(
    conn: psycopg.Connection[Any], world: World, name: str, far: int = 0
) -> str:
    """A new group of tenant A whose passages nearest to _towards(0.0) are of a replaced version
    (six) and of a retracted record (three); then eight current ones ("kept 0", "kept 1", ...,
    nearest first), and far current ones."""
    group: str = conn.execute(
        "select vera.create_group(%s, 'project', %s)", (world.a.organisation, name)
    ).fetchone()[0]  # type: ignore[index]
    wiki = register_source(conn, group, "wiki", 2)

    def store(record: str, content: str, texts_and_steps: list[tuple[str, float]]) -> UUID:
        episode, _, _ = record_episode(conn, group, wiki, record, content)
        chunks = [{"text": text, "embedding": _towards(step)} for text, step in texts_and_steps]
        conn.execute("select vera.store_chunks(%s, %s, %s, %s)", (group, episode, Jsonb(chunks), MODEL))
        return episode

    store("old.md", "v1", [(f"replaced {n}", 0.01 * n) for n in range(6)])
    store("old.md", "v2", [("far away", 50.0)])
    gone = store("gone.md", "v1", [(f"retracted {n}", 0.01 * n) for n in range(3)])
    conn.execute("select vera.retract_episode(%s, %s, 'wrong page')", (group, gone))
    store("kept.md", "v1", [(f"kept {n}", 0.5 + 0.1 * n) for n in range(8)])
    if far:
        store("far.md", "v1", [(f"far {n}", 100.0 + n) for n in range(far)])
    return group


def test_a_small_groups_vector_half_skips_passages_not_current_and_still_fills_its_list(
    world: World,
) -> None:
    """A group without an HNSW index of its own is searched exactly: its passages sorted by
    distance, then checked for being current in that order until the list is full. The list of
    five holds the five nearest current passages, in order of distance."""
    with caller(world.db, world.a.owner_key) as conn:
        group = _group_whose_nearest_passages_are_not_current(conn, world, "exact vectors")
        hits = search(conn, embedding=_towards(0.0), groups=[group], k=5, candidates=5)
    assert texts(hits) == [f"kept {n}" for n in range(5)]


def test_a_large_groups_scan_runs_again_when_its_first_rows_are_not_current(world: World) -> None:
    """A group with an HNSW index of its own returns its scan's first n published passages raw;
    the current ones among them are kept. Here the nine nearest are not current, so the first
    scan (n = 5 rows) keeps none, and the group is scanned again with a larger limit: the list
    holds the five nearest current passages, as one scan filtered by the joins would give."""
    with caller(world.db, world.a.owner_key) as conn:
        # far passages enough for the planner to read the group's HNSW index rather than sort them all
        group = _group_whose_nearest_passages_are_not_current(conn, world, "indexed vectors", far=3000)
        conn.commit()
    with world.db.admin() as admin:
        due = admin.execute(
            "select statements from vera.missing_vector_indexes(10) where group_id = %s and table_name = 'chunks'",
            (group,),
        ).fetchall()
        assert len(due) == 1
        for statement in due[0][0]:
            admin.execute(statement)  # CREATE INDEX CONCURRENTLY: autocommit
        assert admin.execute(
            "select vera.group_vector_index_ready('chunks', %s, 16)", (group,)
        ).fetchone() == (True,)
        index = admin.execute(
            "select format('vera.chunks_16_%%s_hnsw_idx', translate(%s, ':', '_'))::regclass::oid", (group,)
        ).fetchone()[0]  # type: ignore[index]
    with caller(world.db, world.a.owner_key) as conn:
        hits = search(conn, embedding=_towards(0.0), groups=[group], k=5, candidates=5)
        scans = conn.execute("select pg_stat_get_xact_numscans(%s)", (index,)).fetchone()[0]  # type: ignore[index]
    assert texts(hits) == [f"kept {n}" for n in range(5)]
    assert scans == 2  # the first scan, and the one again


def test_the_vector_half_reads_the_tables_where_a_group_holds_documents(world: World) -> None:
    """The vector half skips a table where the statistics count no document of the group; what
    the caller's own open transaction wrote counts (found before its commit), and a passage
    whose episode is retracted leaves the passages' table out again."""
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', 'vector tables')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        cmdb = register_source(conn, group, "cmdb", 1, kind="cmdb")
        export, _, _ = record_episode(conn, group, cmdb, "hosts.csv", "v1")
        publish(conn, group, export, [embedded_claim("ledger-db", "runs on", "rack-7")], MODEL)
        hits = search(conn, embedding=embed("ledger-db runs on rack-7"), groups=[group])
        assert [(h["kind"], h["text"]) for h in hits] == [("fact", "ledger-db runs on rack-7")]

        wiki = register_source(conn, group, "wiki", 2)
        page, _, _ = record_episode(conn, group, wiki, "racks.md", "racks")
        text = "Rack seven holds the ledger database and its replica."
        conn.execute(
            "select vera.store_chunks(%s, %s, %s, %s)",
            (group, page, Jsonb([{"text": text, "embedding": embed(text)}]), MODEL),
        )
        hits = search(conn, embedding=embed(text), groups=[group])
        assert [h["kind"] for h in hits] == ["passage", "fact"]
        assert hits[0]["text"] == text

        conn.execute("select vera.retract_episode(%s, %s, 'wrong page')", (group, page))
        hits = search(conn, embedding=embed(text), groups=[group])
        assert [h["kind"] for h in hits] == ["fact"]


BULK_QUERY = "pod runs on bulk"


@pytest.fixture(scope="module")
def bulk(world: World) -> None:
    """10,000 nearly identical facts in tenant B's organisation, 100 in A's
    workspace, all close to BULK_QUERY: a plain HNSW scan's nearest rows are all B's."""
    with caller(world.db, world.b.owner_key) as conn:
        source = register_source(conn, world.b.organisation, "bulk", 1)
        episode, _, _ = record_episode(conn, world.b.organisation, source, "bulk", "bulk")
        publish(conn, world.b.organisation, episode, [embedded_claim("pod", "runs on", "bulk-0")], MODEL)
        conn.commit()
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.workspace, "small", 1)
        episode, _, _ = record_episode(conn, world.a.workspace, source, "small", "small")
        publish(conn, world.a.workspace, episode, [embedded_claim("pod", "runs on", "small-0")], MODEL)
        conn.commit()
    with world.db.admin() as admin:
        # A's rows lie beyond B's first 500 neighbours of the query
        for group, count, offset in ((world.b.organisation, 9999, 0), (world.a.workspace, 99, 500)):
            admin.execute(
                """
                insert into vera.facts (group_id, subject_entity_id, predicate, object_value, fact_text, embedding,
                                        tier, authority, verification, lifecycle, source_id, episode_id)
                select f.group_id, f.subject_entity_id, 'RUNS_ON', 'bulk-' || i, 'pod runs on bulk ' || i,
                       (%s::vector(16) + ('[' || array_to_string(array_fill(0.0001 * (i + %s), array[16]), ',')
                                          || ']')::vector)::vector,
                       1, 1.0, 'auto', 'published', f.source_id, f.episode_id
                  from vera.facts f, generate_series(1, %s) i
                 where f.group_id = %s and f.object_value like '%%-0'
                """,
                (vector_literal(embed(BULK_QUERY)), offset, count, group),
            )
        # the index a developer would add first: one HNSW index over every tenant's rows
        admin.execute(
            "create index facts_shared_16_idx on vera.facts using hnsw ((embedding::vector(16)) vector_cosine_ops)"
            " where vector_dims(embedding) = 16"
        )
        admin.execute("analyze vera.facts")


def test_a_small_tenant_still_gets_k_vector_hits(world: World, bulk: None) -> None:
    """HNSW filters after the index scan: a tenant with 1% of the rows must still get k hits."""
    query = vector_literal(embed(BULK_QUERY))
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("set local hnsw.iterative_scan = off")
        conn.execute("set local enable_seqscan = off")
        # the naive query a developer would write starves
        naive = conn.execute(
            "select count(*) from (select 1 from vera.facts f where vector_dims(f.embedding) = 16"
            " order by f.embedding::vector(16) <=> %s::vector limit 10) s",
            (query,),
        ).fetchone()[0]  # type: ignore[index]
        assert naive < 10
        hits = search(conn, embedding=embed(BULK_QUERY), groups=[world.a.workspace], k=10)
    assert len(hits) == 10
    assert {hit["group_id"] for hit in hits} == {world.a.workspace}


def test_a_large_group_gets_its_own_index_and_is_searched_through_it(world: World, bulk: None) -> None:
    with world.db.admin() as admin:
        due = admin.execute("select group_id, table_name, dim, vector_rows, statements"
                            " from vera.missing_vector_indexes(1000)").fetchall()  # fmt: skip
        assert [(g, t, d, n) for g, t, d, n, _ in due] == [(world.b.organisation, "facts", 16, 10000)]
        for statement in due[0][4]:
            admin.execute(statement)  # CREATE INDEX CONCURRENTLY: autocommit, outside any transaction
        assert admin.execute(
            "select vera.group_vector_index_ready('facts', %s, 16)", (world.b.organisation,)
        ).fetchone() == (True,)
        assert admin.execute("select count(*) from vera.missing_vector_indexes(1000)").fetchone() == (0,)
        # a third of B's rows leave valid time: the index scan must keep going past them
        admin.execute(
            "update vera.facts set lifecycle = 'superseded', valid_to = '2026-01-01', valid_from = '2025-01-01'"
            " where group_id = %s and object_value ~ '^bulk-[0-9]*[0-2]$'",
            (world.b.organisation,),
        )
        plan = admin.execute(
            "explain select 1 from vera.facts f where f.group_id = %s and vector_dims(f.embedding) = 16"
            " order by (f.embedding::vector(16) <=> %s::vector) limit 40",
            (world.b.organisation, vector_literal(embed(BULK_QUERY))),
        ).fetchall()
        assert "facts_16_o_" in str(plan)
    with caller(world.db, world.b.owner_key) as conn:
        hits = search(conn, embedding=embed(BULK_QUERY), groups=[world.b.organisation], k=40,
                      weights=Jsonb({"relevance": 1}))  # fmt: skip
    assert len(hits) == 40
    assert all(hit["object"][-1] not in "012" for hit in hits if hit["object"].startswith("bulk-"))
    with world.db.admin() as admin:
        exact = admin.execute(
            "select fact_id from vera.facts f where f.group_id = %s and lifecycle = 'published'"
            " order by (f.embedding::vector(16) <=> %s::vector) + 0 limit 40",
            (world.b.organisation, vector_literal(embed(BULK_QUERY))),
        ).fetchall()
    recall = len({row[0] for row in exact} & {hit["item_id"] for hit in hits}) / 40
    assert recall >= 0.9


def test_maintenance_refuses_a_nonsense_threshold(world: World) -> None:
    with (
        world.db.admin() as admin,
        pytest.raises(psycopg.Error, match="min_rows must be at least 1") as error,
    ):
        admin.execute("select * from vera.missing_vector_indexes(0)")
    assert error.value.sqlstate == "22023"


def test_the_lexical_query_keeps_every_word_with_its_diacritics(world: World) -> None:
    """No stopword list: BM25 weighs "the" by how common it is (nearly nothing). A Vietnamese
    query also holds its adjacent word pairs (vera-search/10)."""
    with world.db.admin() as conn:
        rows = conn.execute(
            "select vera.lexical_query(q)::text from unnest(array["
            "'Where does the Billing-API run?', 'Dịch vụ của tôi', 'the of and', 'IT', '?!', '']) q"
        ).fetchall()
        defaults = conn.execute("select vera.default_weights()").fetchone()[0]  # type: ignore[index]
    assert [row[0] for row in rows] == [
        "'api' | 'billing' | 'billing-api' | 'does' | 'run' | 'the' | 'where'",
        "'của' | 'của_tôi' | 'dịch' | 'dịch_vụ' | 'tôi' | 'vụ' | 'vụ_của'",
        "'and' | 'of' | 'the'",
        "'it'",
        None,
        None,
    ]
    assert sum(value for name, value in defaults.items() if name != "half_life") == pytest.approx(1.0)
    assert defaults["half_life"] == "30 days"
