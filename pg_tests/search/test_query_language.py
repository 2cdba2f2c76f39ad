"""A query's vector is left out where the pinned model cannot read the query's language
(sql/functions/172_query_language.sql, vera-search/8): the clients' rule
(vera_client.domain.languages), now vera.search's too, so that a SQL caller who sends a
Vietnamese question's MiniLM vector gets the words-only ranking the clients get (XQuAD
vi -> en hybrid hit@1 0.166 with the vector, 0.371 without; docs/quality.md)."""

from __future__ import annotations

import math
from typing import Any

import psycopg
import pytest

from pg_tests.support.searching import embed, search
from pg_tests.support.seed import World, caller
from vera_client.adapters.embedders import MODEL_LANGUAGES, model_languages
from vera_client.adapters.embedders.local_minilm import MODEL as MINILM
from vera_client.domain.languages import query_language

QUERIES = [
    "",
    "   ",
    "12 34",
    "Which cluster does billing-api run on?",
    "route-planner chạy trên cụm nào?",
    "Khi hàng đợi bị nghẽn thì làm gì?",
    "Ai là người đã đặt tên cho Đại học Harvard?",
    "Tôi đi học",
    "the café of Zoë and Renée",
    "café crème brûlée à la carte",
    "Привет, как дела?",
    "東京 タワー はどこ ですか",
    "don’t stop — the 10€ deal…",
    "Straße München über",
    "CS Aerostar Bacău",
    "Novak Đoković",
    "Đà Nẵng",
    "Ăn cơm chưa?",
    "Đăng ký ở đâu",
]


@pytest.mark.parametrize("text", QUERIES)
def test_sql_tells_a_querys_language_as_the_client_does(world: World, text: str) -> None:
    with world.db.admin() as conn:
        row = conn.execute("select vera.query_language(%s)", (text,)).fetchone()
    assert row == (query_language(text),)


def test_sql_knows_the_models_languages_the_client_knows(world: World) -> None:
    models = [*MODEL_LANGUAGES, "deterministic-hash-16", "some-multilingual-model"]
    with world.db.admin() as conn:
        for model in models:
            row = conn.execute("select vera.model_languages(%s)", (model,)).fetchone()
            assert row is not None
            expected = model_languages(model)
            assert (None if row[0] is None else frozenset(row[0])) == expected, model


def _wide(text: str) -> list[float]:
    """A 384-dimension vector (MiniLM's size) that follows the words, as embed() does."""
    vector = [x for _ in range(24) for x in embed(text)]
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def _remember(conn: psycopg.Connection, text: str) -> None:
    params: dict[str, Any] = {"content": text, "embeddings": psycopg.types.json.Jsonb([_wide(text)]),
                              "model": MINILM, "source": text[:20]}  # fmt: skip
    conn.execute(
        "select * from vera.remember(content => %(content)s, embeddings => %(embeddings)s,"
        " embedding_model => %(model)s, source => %(source)s)",
        params,
    )


def test_a_query_the_pinned_model_cannot_read_is_searched_by_its_words(world: World) -> None:
    """A scope pinned to MiniLM: a Vietnamese query sent with a vector ranks as words alone
    (no similarity measured); an English one still has its vector searched."""
    with world.db.admin() as conn:
        row = conn.execute(
            "select api_key from vera.issue_api_key(vera.insert_principal('user', 'polyglot', null), 'k', null)"
        ).fetchone()
    assert row is not None
    texts = [
        "Dịch vụ route-planner chạy trên cụm k8s-hanoi-1.",
        "route-planner runs on cluster k8s-hanoi-1.",
        "Khi hàng đợi bị nghẽn, hãy tăng số bản sao.",
        "billing-api runs on cluster k8s-hanoi-2.",
        "The queue of route-planner is full on Mondays.",
    ]
    vietnamese, english = "route-planner chạy trên cụm nào?", "Which cluster does route-planner run on?"
    with caller(world.db, str(row[0])) as conn:
        for text in texts:
            _remember(conn, text)
        with_vector = search(conn, vietnamese, embedding=_wide(vietnamese), embedding_model=MINILM, k=5)
        words_only = search(conn, vietnamese, k=5)
        english_hits = search(conn, english, embedding=_wide(english), embedding_model=MINILM, k=5)
        model = conn.execute("select vera.model_reads(%s, %s), vera.model_reads(%s, %s), vera.model_reads(%s, null)",
                             (MINILM, vietnamese, MINILM, english, MINILM)).fetchone()  # fmt: skip
    assert model == (False, True, True)
    assert [(h["item_id"], h["match_confidence"]) for h in with_vector] == [
        (h["item_id"], h["match_confidence"]) for h in words_only
    ]
    assert all(h["similarity"] is None for h in with_vector)
    assert with_vector[0]["text"].startswith("Dịch vụ route-planner")
    assert all(h["similarity"] is not None for h in english_hits)
