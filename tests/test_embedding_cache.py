from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import valkey

from tests.servers import RunningValkey, free_port, running_valkey
from vera_client.adapters.embedders.cache import CachedEmbedder, CacheStats, cache_key
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.domain.errors import ProviderResponseError

DIM = 16


class CountingEmbedder:
    """The inner embedder: deterministic vectors, and a record of every batch it was asked for."""

    def __init__(self, dim: int = DIM) -> None:
        self._inner = DeterministicEmbedder(dim)
        self.calls: list[list[str]] = []
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.calls.append(list(texts))
        return self._inner.embed(texts)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def expected(*texts: str) -> list[list[float]]:
    """What the cache answers: the inner vectors, rounded to float32 as pgvector stores them."""
    vectors = DeterministicEmbedder(DIM).embed(texts)
    return np.asarray(vectors, dtype=np.float32).astype(float).tolist()  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def valkey_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningValkey]:
    with running_valkey(tmp_path_factory.mktemp("valkey")) as server:
        yield server


@pytest.fixture
def shared(valkey_server: RunningValkey) -> Iterator[valkey.Valkey]:
    client = valkey.Valkey(host=valkey_server.host, port=valkey_server.port)
    client.flushdb()
    yield client
    client.close()  # type: ignore[no-untyped-call]


# -- in-process tier ------------------------------------------------------------


def test_it_is_an_embedder_of_the_inner_model() -> None:
    cached = CachedEmbedder(CountingEmbedder())
    assert (cached.model, cached.dim) == (f"deterministic-hash-{DIM}", DIM)


def test_hits_cost_no_inner_call() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    first = cached.embed(["alpha", "beta"])
    again = cached.embed(["beta", "alpha"])
    assert inner.calls == [["alpha", "beta"]]
    assert first == expected("alpha", "beta")
    assert again == expected("beta", "alpha")
    assert cached.stats() == CacheStats(hits_local=2, misses=2)


def test_repeated_texts_are_embedded_once_and_answered_in_input_order() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    cached.embed(["known"])
    texts = ["x", "known", "y", "x", "z", "y"]
    assert cached.embed(texts) == expected(*texts)
    assert inner.calls == [["known"], ["x", "y", "z"]]
    assert cached.stats() == CacheStats(hits_local=1, misses=4)


def test_no_texts_no_call() -> None:
    inner = CountingEmbedder()
    assert CachedEmbedder(inner).embed([]) == []
    assert inner.calls == []


def test_least_recently_used_is_evicted() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, max_entries=2)
    cached.embed(["a", "b"])
    cached.embed(["a"])  # a is now the most recently used
    cached.embed(["c"])  # evicts b
    inner.calls.clear()
    cached.embed(["a", "c"])
    assert inner.calls == []
    cached.embed(["b"])
    assert inner.calls == [["b"]]


def test_entries_expire_after_the_ttl() -> None:
    clock = Clock()
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, ttl_seconds=60, clock=clock)
    cached.embed(["a"])
    clock.now += 59.9
    cached.embed(["a"])
    assert len(inner.calls) == 1
    clock.now += 0.1
    cached.embed(["a"])
    assert len(inner.calls) == 2


def test_zero_entries_turns_the_in_process_cache_off() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, max_entries=0)
    cached.embed(["a"])
    cached.embed(["a"])
    assert inner.calls == [["a"], ["a"]]
    assert cached.stats() == CacheStats(misses=2)


def test_an_inner_embedder_that_loses_vectors_is_an_error() -> None:
    class Lossy(CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return super().embed(texts)[:-1]

    cached = CachedEmbedder(Lossy())
    with pytest.raises(ProviderResponseError, match="1 vectors for 2 texts"):
        cached.embed(["a", "b"])
    # nothing half-done was cached
    assert cached.stats() == CacheStats()


def test_concurrent_callers_all_get_the_right_vectors() -> None:
    cached = CachedEmbedder(CountingEmbedder(), max_entries=8)
    texts = [f"text {i % 12}" for i in range(48)]
    failures: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for start in range(0, len(texts), 6):
                batch = texts[(start + offset) % len(texts) :][:6]
                assert cached.embed(batch) == expected(*batch)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    stats = cached.stats()
    assert stats.errors == 0 and stats.hits_local + stats.misses > 0


# -- shared tier (a real Valkey) -----------------------------------------------


def test_a_second_process_gets_hits_from_valkey(shared: valkey.Valkey, valkey_server: RunningValkey) -> None:
    first_inner, second_inner = CountingEmbedder(), CountingEmbedder()
    first = CachedEmbedder(first_inner, shared=shared)
    second = CachedEmbedder(second_inner, shared=valkey_server.url)
    vectors = first.embed(["shared one", "shared two"])

    assert second.embed(["shared two", "shared one"]) == vectors[::-1]
    assert second_inner.calls == []
    assert second.stats() == CacheStats(hits_shared=2)
    # what came from Valkey is kept in process too
    second.embed(["shared one"])
    assert second.stats() == CacheStats(hits_local=1, hits_shared=2)


def test_valkey_keeps_compact_vectors_under_the_versioned_key_with_the_ttl(shared: valkey.Valkey) -> None:
    cached = CachedEmbedder(CountingEmbedder(), shared=shared, ttl_seconds=120)
    cached.embed(["Tiếng Việt"])
    digest = hashlib.sha256("Tiếng Việt".encode()).hexdigest()
    key = f"vera:emb:v1:deterministic-hash-{DIM}:{DIM}:{digest}"
    assert cache_key(f"deterministic-hash-{DIM}", DIM, "Tiếng Việt") == key
    stored = shared.get(key)
    assert isinstance(stored, bytes) and len(stored) == DIM * 4
    assert 0 < int(shared.pttl(key)) <= 120_000  # type: ignore[arg-type]


def test_a_foreign_value_in_valkey_is_recomputed_and_counted(shared: valkey.Valkey) -> None:
    inner = CountingEmbedder()
    shared.set(cache_key(inner.model, DIM, "odd"), b"not a vector")
    cached = CachedEmbedder(inner, shared=shared)
    assert cached.embed(["odd"]) == expected("odd")
    assert inner.calls == [["odd"]]
    assert cached.stats() == CacheStats(misses=1, errors=1)


def test_valkey_down_still_answers_and_counts_the_error() -> None:
    clock = Clock()
    inner = CountingEmbedder()
    nobody_listens = f"valkey://127.0.0.1:{free_port()}/0"
    cached = CachedEmbedder(inner, shared=nobody_listens, shared_backoff_seconds=5, clock=clock)

    assert cached.embed(["a", "b"]) == expected("a", "b")
    # the read failed; the write that follows is not even tried during the backoff
    assert cached.stats() == CacheStats(misses=2, errors=1)
    cached.embed(["c"])
    assert cached.stats().errors == 1
    clock.now += 5
    cached.embed(["d"])
    assert cached.stats().errors == 2


def test_valkey_going_away_mid_run_degrades_to_in_process(tmp_path: Path) -> None:
    with running_valkey(tmp_path) as server:
        inner = CountingEmbedder()
        cached = CachedEmbedder(inner, shared=server.url)
        cached.embed(["before"])
        server.stop()
        assert cached.embed(["before", "after"]) == expected("before", "after")
    assert inner.calls == [["before"], ["after"]]
    assert cached.stats() == CacheStats(hits_local=1, misses=2, errors=1)
