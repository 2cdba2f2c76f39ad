"""A hit's match confidence (sql/functions/171_match_confidence.sql): an absolute probability
that it answers, read from its own lexical match and similarity through the calibrated
logistic model, so that a search can say that nothing known answers (no_good_match). On the
demo data (examples/lumen, as `vera demo` loads it, searched as the demo's client searches)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.databases import Database
from pg_tests.support.lumen import Lumen, load_lumen
from vera_client.bootstrap import build_providers
from vera_client.client import VeraClient
from vera_client.config import VeraSettings

NONSENSE = "quantum banana submarine recipe"


@pytest.fixture(scope="module")
def lumen(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Lumen:
    return load_lumen(db, tmp_path_factory.mktemp("objects"))


@pytest.fixture(scope="module")
def demo(db: Database, lumen: Lumen) -> Iterator[VeraClient]:
    providers = build_providers(VeraSettings(embedder={"provider": "local"}))  # as `vera demo` searches
    with client_for(db, lumen.key, providers=providers) as vera:
        yield vera


def test_a_nonsense_query_has_no_good_match(demo: VeraClient) -> None:
    """The issue's case: min-max relevance gave the best candidate 1.00 whatever it was."""
    hits = demo.search(NONSENSE, k=10)
    assert hits, "the vector half always finds neighbours"
    assert hits.no_good_match
    assert all(hit.confidence < 0.5 and not hit.good_match for hit in hits), [
        (hit.text, hit.confidence) for hit in hits
    ]
    assert all(hit.signals.relevance == pytest.approx(hit.confidence) for hit in hits)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Who owns route-planner?", "Logistics Core"),
        ("How do I restart billing-api after a failed deploy?", "rollout restart"),
        ("Which service depends on route-planner?", "tracking-gateway depends on route-planner"),
        ("route-planner chạy trên cụm nào?", "k8s-hanoi-1"),
    ],
)
def test_a_question_the_demo_answers_has_a_good_match(demo: VeraClient, question: str, answer: str) -> None:
    hits = demo.search(question, k=5)
    assert not hits.no_good_match
    good = [hit for hit in hits if hit.good_match]
    assert any(answer in hit.text for hit in good), [(hit.text, hit.confidence) for hit in hits]


def test_a_hits_confidence_does_not_depend_on_the_other_candidates(demo: VeraClient) -> None:
    """The same hit with 1 candidate per half or 40: the same confidence and relevance (a
    min-max over the candidates gave the lone candidate 1.00)."""
    question = "Which database engine does ledger-db use?"
    wide = demo.search(question, k=10, candidates=40)
    narrow = demo.search(question, k=1, candidates=1)
    [alone] = narrow
    same = next(hit for hit in wide if hit.item_id == alone.item_id)
    assert alone.confidence == pytest.approx(same.confidence)
    assert alone.signals.relevance == pytest.approx(same.signals.relevance)
    assert (alone.lexical_match, alone.similarity) == pytest.approx((same.lexical_match, same.similarity))


@pytest.mark.parametrize(
    "question",
    ["Which database engine does ledger-db use?", "Who owns route-planner?", "How do I restart billing-api?"],
)
def test_a_hits_measures_are_the_same_to_the_last_bit_whichever_half_found_it(
    demo: VeraClient, question: str
) -> None:
    """Stage 1 takes a candidate's BM25 score from the lexical round that found it and its distance
    from the vector half that found it, and reads its row only for what the other half did not
    measure (sql/functions/179_search_candidates.sql): both ways give the same values, bit for bit.
    With 2 candidates per half, 3 or more hits include at least two that one half alone found; with
    40, the demo's items are in both lists."""
    wide = {hit.item_id: hit for hit in demo.search(question, k=100, candidates=40)}
    narrow = demo.search(question, k=4, candidates=2)
    assert len(narrow) >= 3
    for hit in narrow:
        same = wide[hit.item_id]
        assert (hit.lexical_match, hit.similarity, hit.confidence) == (
            same.lexical_match, same.similarity, same.confidence
        ), hit.text  # fmt: skip
    assert any(hit.lexical_match for hit in narrow) and any(hit.similarity for hit in narrow)


def test_sql_shows_the_measures_and_the_model_reads_them(db: Database, lumen: Lumen) -> None:
    with db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (lumen.key,))
        rows = conn.execute(
            "select match_confidence, good_match, lexical_match, similarity, relevance,"
            " vera.match_confidence(lexical_match, similarity), vera.good_match_threshold()"
            " from vera.search('ledger-db credentials rotation', k => 5)"
        ).fetchall()
        conn.rollback()
    assert rows
    for confidence, good, lexical, similarity, relevance, recomputed, threshold in rows:
        assert similarity is None and lexical is not None  # words only: no query vector passed
        assert confidence == pytest.approx(recomputed) == pytest.approx(relevance)
        assert good == (confidence >= threshold)


def test_the_model_is_monotone_and_its_threshold_documented(db: Database) -> None:
    with db.connect() as conn:
        [(threshold, calibration)] = conn.execute(
            "select vera.good_match_threshold(), vera.match_calibration()"
        ).fetchall()
        assert threshold == 0.5
        assert set(calibration) == {"hybrid", "lexical", "vector"}

        def confidence(
            lexical: float | None, similarity: float | None, lw: float = 1, vw: float = 1
        ) -> float:
            row = conn.execute("select vera.match_confidence(%s, %s, %s, %s)", (lexical, similarity, lw, vw))
            return float(row.fetchone()[0])  # type: ignore[index]

        assert confidence(None, None) == 0
        assert confidence(0.0, 0.1) < confidence(0.5, 0.1) < confidence(1.0, 0.1)
        assert confidence(0.5, 0.1) < confidence(0.5, 0.5) < confidence(0.5, 0.9)
        assert confidence(None, 0.2) < confidence(None, 0.8)
        assert confidence(0.2, None) < confidence(1.0, None)
        # a half weighted 0 is left out: the other half's model alone
        assert confidence(1.0, 0.3, lw=0) == pytest.approx(confidence(None, 0.3))
        assert confidence(1.0, 0.3, vw=0) == pytest.approx(confidence(1.0, None))
        # in [0, 1] at the extremes (the logistic is clamped where exp would overflow)
        assert 0 <= confidence(1e300, 1e300) <= 1 and 0 <= confidence(-1e300, -1.0) <= 1
