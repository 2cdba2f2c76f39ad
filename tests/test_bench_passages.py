"""benchmarks/search_latency.py --passages stages its passages a batch at a time (numpy) for speed:
the draws, the shuffle, the vectors and their text must be those of the loop a passage at a time
that earlier runs used, or its figures would no longer compare with theirs."""

from __future__ import annotations

import importlib.util
import itertools
import random
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        path = BENCHMARKS / "search_latency.py"
        spec = importlib.util.spec_from_file_location("search_latency_under_test", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # its dataclasses look their module up by name
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_drawn_and_shuffled_are_random_choices_and_shuffle(bench: ModuleType) -> None:
    cum = list(itertools.accumulate(bench.zipf_weights(3000)))
    ours, theirs = random.Random(7), random.Random(7)  # noqa: S311 - the benchmark's generator
    for k in (1, 12, 130, 300):
        expected = theirs.choices(range(3000), cum_weights=cum, k=k)
        assert bench.drawn(ours.random, np.array(cum[:-1]), cum[-1] + 0.0, k).tolist() == expected
        picks, reference = list(expected), list(expected)
        bench.shuffled(ours, picks)
        theirs.shuffle(reference)
        assert picks == reference
    assert ours.random() == theirs.random()


def test_batched_vectors_and_their_text_are_passage_vector_bit_for_bit(bench: ModuleType) -> None:
    vocabulary = bench.passage_vocabulary()
    head = np.array([w in bench.HEAD_SET for w in vocabulary])
    directions = (np.random.default_rng(5).random((len(vocabulary), bench.DIM)) - 0.5).astype(np.float32)
    topics = bench.topic_directions()
    rng = random.Random(3)  # noqa: S311 - test data
    # passages of every length, one of function words only (no content word: the topic alone)
    passages = [[rng.randrange(len(vocabulary)) for _ in range(rng.randint(1, 300))] for _ in range(300)]
    passages.append([0, 1, 2])
    chosen = [rng.randrange(len(topics)) for _ in passages]
    texts = bench.embedding_texts(bench.passage_vectors(topics[chosen], directions, passages, head))
    for picks, topic, text in zip(passages, chosen, texts, strict=True):
        vector = bench.passage_vector(topics[topic], directions, picks, vocabulary)
        assert text == "[" + ",".join(f"{x:.4f}" for x in vector.tolist()) + "]"


def test_embedding_text_rounds_as_python_formats(bench: ModuleType) -> None:
    # ties (1/32 * 10,000 = 312.5), values that round to minus zero, the ends
    edges = [0.03125, -0.03125, -0.00004, -0.0, 0.0, 1.0, -1.0, 0.99996, 0.00005]
    values = np.array([edges], dtype=np.float32)
    values = np.concatenate([values, np.random.default_rng(1).uniform(-1, 1, (50, 9)).astype(np.float32)])
    for row, text in zip(values, bench.embedding_texts(values), strict=True):
        assert text == "[" + ",".join(f"{x:.4f}" for x in row.tolist()) + "]"
