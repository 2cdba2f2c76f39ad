"""Embedders (vera_client.adapters.embedders): the offline hashing one and the
local all-MiniLM-L6-v2 on ONNX Runtime with its real model."""

from __future__ import annotations

import math
from functools import cache

import pytest

from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.domain.ports import Embedder


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@cache
def _minilm() -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder(threads=2)


@pytest.mark.parametrize("embedder", [DeterministicEmbedder(), DeterministicEmbedder(16)])
def test_deterministic_vectors_are_stable_normalised_and_word_based(embedder: DeterministicEmbedder) -> None:
    port: Embedder = embedder
    first, again, sharing, other, empty = port.embed(
        ["billing-api runs on k8s", "billing-api runs on k8s", "billing-api k8s", "lunch menu", ""]
    )
    assert first == again and len(first) == port.dim
    assert math.isclose(math.sqrt(sum(x * x for x in first)), 1.0)
    assert math.isclose(math.sqrt(sum(x * x for x in empty)), 1.0)
    assert _cosine(first, sharing) > _cosine(first, other)
    assert port.model == f"deterministic-hash-{port.dim}"


def test_minilm_gives_normalised_384_dimension_vectors() -> None:
    embedder = _minilm()
    vectors = embedder.embed(["Where does the billing service run?", "Dịch vụ thanh toán chạy ở đâu?"])
    assert (embedder.model, embedder.dim) == ("all-MiniLM-L6-v2", 384)
    assert [len(v) for v in vectors] == [384, 384]
    for vector in vectors:
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-5)


def test_minilm_scores_paraphrases_above_unrelated_sentences() -> None:
    anchor, paraphrase, unrelated, also_unrelated = _minilm().embed([
        "The billing service is deployed on the Hanoi Kubernetes cluster.",
        "Billing runs on the k8s cluster in Hanoi.",
        "The cafeteria serves noodle soup on Fridays.",
        "Quarterly revenue grew by twelve percent.",
    ])  # fmt: skip
    close = _cosine(anchor, paraphrase)
    assert close > 0.5
    assert close > _cosine(anchor, unrelated) + 0.2
    assert close > _cosine(anchor, also_unrelated) + 0.2


def test_minilm_batches_give_the_same_vectors_as_single_texts() -> None:
    texts = ["short", "a somewhat longer sentence about invoices and ledgers", "x " * 400]
    together = LocalMiniLMEmbedder(threads=2, batch_size=2).embed(texts)
    alone = [_minilm().embed([text])[0] for text in texts]
    for a, b in zip(together, alone, strict=True):
        assert _cosine(a, b) > 0.9999  # padding must not change a text's vector
