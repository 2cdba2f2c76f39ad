"""connectors/pipeline.py: items come back in order with their own vectors, several
items share one call of the embedder's batch size, a bad text fails its item only,
and an early end stops the threads (issue 31). The database side: pg_tests/sources."""

from __future__ import annotations

import threading
import time

import pytest

from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.domain.errors import ProviderResponseError
from vera_worker.connectors.pipeline import CALL_BATCHES, batch_size, embedded


class _Embedder:
    model, dim = "deterministic-hash-8", 8

    def __init__(self, size: int = 0) -> None:
        self.batch_size = size
        self.calls: list[list[str]] = []
        self.inner = DeterministicEmbedder(8)

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if any(text.startswith("bad") for text in texts):
            raise ProviderResponseError("embedder: refused a text")
        return self.inner.embed(texts)


def _texts(n: int) -> tuple[int, list[str]]:
    return n, [f"item {n} text {k}" for k in range(n % 3)]


def test_items_come_back_in_order_with_their_own_vectors_batched_across_items() -> None:
    embedder = _Embedder(size=4)
    got = list(embedded(range(30), _texts, embedder, depth=4))
    assert [n for n, _ in got] == list(range(30))
    reference = DeterministicEmbedder(8)
    for n, vectors in got:
        assert vectors == reference.embed(_texts(n)[1])
    assert sum(map(len, embedder.calls)) == sum(n % 3 for n in range(30))  # each text embedded once
    # whole items, up to CALL_BATCHES batches (the last item may overshoot by its texts but one)
    assert all(len(call) <= 4 * CALL_BATCHES + 1 for call in embedder.calls)


def test_calls_wait_for_a_full_batch_when_items_trickle_in() -> None:
    def slow(n: int) -> tuple[int, list[str]]:
        time.sleep(0.002)  # reading a file: the embedder is quicker here, and must not call per item
        return n, [f"item {n}"]

    embedder = _Embedder(size=8)
    got = list(embedded(range(40), slow, embedder))
    assert [n for n, _ in got] == list(range(40))
    # no call short of a batch but the last, which takes what is left when the items end (a call
    # that took more than a batch, the embedder thread having been slow to take the next, leaves
    # fewer than a batch to it)
    assert all(len(call) >= 8 for call in embedder.calls[:-1]), embedder.calls
    assert sum(len(call) for call in embedder.calls) == 40, embedder.calls


def test_a_text_repeated_in_a_call_is_embedded_once_and_given_to_each_item() -> None:
    def prepare(n: int) -> tuple[int, list[str]]:
        return n, [f"passage {n}", "billing-api"]  # every item names the same subject

    embedder = _Embedder(size=16)
    got = list(embedded(range(6), prepare, embedder))
    reference = DeterministicEmbedder(8)
    assert [vectors for _, vectors in got] == [reference.embed(prepare(n)[1]) for n in range(6)]
    sent = [text for call in embedder.calls for text in call]
    assert sent.count("billing-api") == len(embedder.calls) and len(sent) == 6 + len(embedder.calls)


def test_an_embedder_without_a_batch_size_is_called_once_per_item() -> None:
    embedder = _Embedder()
    assert batch_size(embedder) == 0 and batch_size(None) == 0
    list(embedded(range(10), _texts, embedder))
    assert [len(call) for call in embedder.calls] == [n % 3 for n in range(10) if n % 3]


def test_a_failing_batch_is_tried_item_by_item_so_only_the_bad_item_fails() -> None:
    def prepare(n: int) -> tuple[int, list[str]]:
        return n, ["bad text" if n == 5 else f"good {n}"]

    got = dict(embedded(range(10), prepare, _Embedder(size=64)))
    assert isinstance(got.pop(5), ProviderResponseError)
    assert all(isinstance(vectors, list) and len(vectors) == 1 for vectors in got.values())


def test_an_error_of_prepare_ends_the_run_in_the_callers_thread() -> None:
    def prepare(n: int) -> tuple[int, list[str]]:
        if n == 3:
            raise OSError("disk gone")
        return n, []

    items = embedded(range(10), prepare, None)
    assert [next(items)[0] for _ in range(3)] == [0, 1, 2]
    with pytest.raises(OSError, match="disk gone"):
        next(items)


def test_closing_early_stops_the_threads() -> None:
    def pipeline_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("vera-ingest-")]

    items = embedded(range(10_000), _texts, _Embedder(size=8), depth=2)
    assert next(items)[0] == 0
    assert len(pipeline_threads()) == 2
    items.close()
    assert pipeline_threads() == []
