"""Which queries an embedding model can read: the language gate of the vector leg."""

from __future__ import annotations

import pytest

from vera_client.adapters.embedders import model_languages
from vera_client.adapters.embedders.local_minilm import MODEL as MINILM
from vera_client.domain.languages import model_reads, query_language


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Where does billing-api run?", "en"),
        ("Who owns the café near Zoë?", "en"),  # a few borrowed letters do not make it foreign
        ("route-planner chạy trên cụm nào?", "vi"),
        ("Khi hàng đợi bị nghẽn thì làm gì?", "vi"),
        ("Ai phụ trách ledger-db?", "vi"),
        ("Wo läuft der Dienst für Größe?", "other"),
        # breve and đ alone are Romanian's and Serbian's too; beside a tone mark on a vowel, Vietnamese
        ("CS Aerostar Bacău", "en"),
        ("Novak Đoković", "other"),
        ("Đà Lạt", "vi"),
        ("Đăng ký", "vi"),
        ("Ăn cơm chưa?", "vi"),
        ("Где работает сервис?", "other"),
        ("", "en"),
        ("42 ?!", "en"),
    ],
)
def test_query_language(text: str, language: str) -> None:
    assert query_language(text) == language


def test_an_english_model_does_not_embed_vietnamese_queries_a_multilingual_one_does() -> None:
    assert model_languages(MINILM) == {"en"}
    assert model_reads(model_languages(MINILM), "Where does billing-api run?")
    assert not model_reads(model_languages(MINILM), "route-planner chạy trên cụm nào?")
    assert model_languages("text-embedding-3-small") is None
    assert model_reads(model_languages("text-embedding-3-small"), "route-planner chạy trên cụm nào?")
