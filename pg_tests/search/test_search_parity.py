"""Every client gets the same answers, on the demo data: plain SQL ranks exactly as the
Python client once it passes the query embedding the client computes (the model the groups
pinned, vera.pinned_models()), and searches by words alone without one; and a hit's score
does not depend on how many hits are asked for."""

from __future__ import annotations

import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.databases import Database
from pg_tests.support.lumen import Lumen, load_lumen
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.bootstrap import build_providers
from vera_client.client import VeraClient
from vera_client.config import VeraSettings

QUESTIONS = [
    "who owns ledger-db?",
    "Which cluster does billing-api run on?",
    "How do I restart billing-api after a failed deploy?",
    "what depends on route-planner?",
]


@pytest.fixture(scope="module")
def lumen(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Lumen:
    return load_lumen(db, tmp_path_factory.mktemp("objects"))


@pytest.fixture(scope="module")
def client(db: Database, lumen: Lumen) -> VeraClient:
    providers = build_providers(VeraSettings(embedder={"provider": "local"}))  # as `vera demo` searches
    with client_for(db, lumen.key, providers=providers) as vera:
        yield vera  # type: ignore[misc]


def _sql_search(db: Database, key: str, question: str, vector: str | None, k: int = 10) -> list[tuple]:
    with db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        [(model,)] = conn.execute("select embedding_model from vera.pinned_models()").fetchall()
        rows = conn.execute(
            "select kind::text, item_id, score from vera.search(%s, %s::vector, k => %s, embedding_model => %s)",
            (question, vector, k, model if vector else None),
        ).fetchall()
        conn.rollback()
    return rows


@pytest.fixture(scope="module")
def embedder() -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder()


@pytest.mark.parametrize("question", QUESTIONS)
def test_sql_given_the_query_embedding_ranks_exactly_as_the_client(
    db: Database, lumen: Lumen, client: VeraClient, embedder: LocalMiniLMEmbedder, question: str
) -> None:
    by_client = [(h.kind, h.item_id, h.score) for h in client.search(question, k=10)]
    vector = "[" + ",".join(str(x) for x in embedder.embed([question])[0]) + "]"
    by_sql = _sql_search(db, lumen.key, question, vector)
    assert by_client and [row[:2] for row in by_sql] == [row[:2] for row in by_client]
    assert [row[2] for row in by_sql] == pytest.approx([row[2] for row in by_client], abs=1e-6)


def test_sql_without_an_embedding_searches_by_words_alone(
    db: Database, lumen: Lumen, client: VeraClient
) -> None:
    """What docs/sql-api.md says differs: no vector half, so another order (the client's first
    hit for "who owns ledger-db?" is not first by words alone)."""
    question = "who owns ledger-db?"
    by_client = [(h.kind, h.item_id) for h in client.search(question, k=10)]
    by_words = [row[:2] for row in _sql_search(db, lumen.key, question, None)]
    assert by_words and by_words != by_client
    assert by_words[0] != by_client[0]


@pytest.mark.parametrize("question", QUESTIONS[:2])
def test_a_hits_score_is_the_same_for_every_k_up_to_ten(client: VeraClient, question: str) -> None:
    """Relevance is min-max normalised over the candidates; their pool is at least 40 per
    half (4 x k above k = 10), so k = 1..10 searches the same pool."""
    reference = {h.item_id: h.score for h in client.search(question, k=10)}
    for k in (1, 2, 3, 5, 8):
        hits = client.search(question, k=k)
        assert len(hits) == min(k, len(reference))
        # equal but for recency, which ages by the microseconds between two calls
        assert [h.score for h in hits] == pytest.approx([reference[h.item_id] for h in hits], abs=1e-5), k


def test_with_candidates_given_a_hits_score_is_the_same_for_every_k(client: VeraClient) -> None:
    question = "who owns ledger-db?"
    wide = {h.item_id: h.score for h in client.search(question, k=30, candidates=60)}
    for k in (2, 5, 15):
        narrow = client.search(question, k=k, candidates=60)
        assert [h.score for h in narrow] == pytest.approx([wide[h.item_id] for h in narrow], abs=1e-5), k
