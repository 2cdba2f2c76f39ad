"""Hosted providers over HTTP (OpenAI and Voyage embedders, Voyage and LLM
rerankers) against a local stand-in that speaks their wire formats: answers,
batching, retries, timeouts, the circuit breaker and metering."""

from __future__ import annotations

import math
import threading
import time

import pytest

from tests.standins import API_KEY, Reply, StandinServer, running_standin
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.embedders.openai import OpenAIEmbedder
from vera_client.adapters.embedders.voyage import VoyageEmbedder
from vera_client.adapters.providers.metering import Meter, MeterKey, Price, Totals, Usage
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.adapters.rerankers.llm import LlmReranker
from vera_client.adapters.rerankers.voyage import VoyageReranker
from vera_client.config import ResilienceSettings
from vera_client.domain.errors import (
    ConfigurationError,
    ProviderError,
    ProviderRateLimitedError,
    ProviderResponseError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from vera_client.domain.ports import Embedder, Reranker, RerankScore

# tiny backoffs and timeouts keep the whole module fast
FAST = ResilienceSettings(
    breaker_failures=50,
    breaker_reset_seconds=30,
    rate_per_second=1000,
    burst=1000,
    max_retries=2,
    retry_base_seconds=0.001,
    retry_max_seconds=5.0,
    timeout_seconds=2.0,
)


class FakeTime:
    """A clock that moves only when slept on, so breaker resets and Retry-After cost no real time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _openai(
    standin: StandinServer, chain: ResilienceChain | None = None, **options: object
) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        api_key=API_KEY,
        base_url=f"{standin.url}/openai/v1",
        chain=chain or ResilienceChain("openai", FAST),
        **options,  # type: ignore[arg-type]
    )


def _voyage(standin: StandinServer, **options: object) -> VoyageEmbedder:
    return VoyageEmbedder(
        api_key=API_KEY,
        base_url=f"{standin.url}/voyage/v1",
        chain=ResilienceChain("voyage", FAST),
        **options,  # type: ignore[arg-type]
    )


def _voyage_reranker(standin: StandinServer, meter: Meter | None = None) -> VoyageReranker:
    return VoyageReranker(
        api_key=API_KEY,
        base_url=f"{standin.url}/voyage/v1",
        chain=ResilienceChain("voyage", FAST),
        meter=meter,
    )


def _llm(standin: StandinServer, meter: Meter | None = None) -> LlmReranker:
    return LlmReranker(
        api_key=API_KEY,
        base_url=f"{standin.url}/openai/v1",
        chain=ResilienceChain("llm", FAST),
        meter=meter,
    )


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _same(vectors: list[list[float]], expected: list[list[float]]) -> bool:
    return len(vectors) == len(expected) and all(
        v == pytest.approx(e) for v, e in zip(vectors, expected, strict=True)
    )


def _totals(meter: Meter, provider: str, model: str, operation: str) -> Totals:
    return meter.totals()[MeterKey(provider=provider, model=model, operation=operation)]


TEXTS = ["billing-api runs on k8s", "the lunch menu", "billing-api k8s cluster"]


# --- embedders: happy paths ------------------------------------------------------------------


def test_openai_embeds_in_order_with_normalised_vectors(standin: StandinServer) -> None:
    embedder: Embedder = _openai(standin)
    vectors = embedder.embed(TEXTS)
    assert (embedder.model, embedder.dim) == ("text-embedding-3-small", 1536)
    assert _same(vectors, DeterministicEmbedder(1536).embed(TEXTS))
    assert all(math.isclose(_norm(v), 1.0) for v in vectors)
    assert _cosine(vectors[0], vectors[2]) > _cosine(vectors[0], vectors[1])
    [request] = standin.requests
    assert request.path == "/openai/v1/embeddings"
    assert request.authorization == f"Bearer {API_KEY}"
    assert request.body == {"model": "text-embedding-3-small", "input": TEXTS, "encoding_format": "float"}


def test_openai_asks_for_a_shortened_dimension_only_when_it_differs(standin: StandinServer) -> None:
    vectors = _openai(standin, dim=256).embed(TEXTS[:1])
    assert len(vectors[0]) == 256
    assert standin.requests[0].body["dimensions"] == 256
    _openai(standin, model="text-embedding-3-large", dim=3072).embed(TEXTS[:1])
    assert "dimensions" not in standin.requests[1].body


def test_voyage_embeds_with_its_own_body(standin: StandinServer) -> None:
    embedder = _voyage(standin)
    vectors = embedder.embed(TEXTS)
    assert (embedder.model, embedder.dim) == ("voyage-3.5", 1024)
    assert _same(vectors, DeterministicEmbedder(1024).embed(TEXTS))
    assert standin.requests[0].path == "/voyage/v1/embeddings"
    assert standin.requests[0].body == {"input": TEXTS, "model": "voyage-3.5", "input_type": None}
    shorter = _voyage(standin, model="voyage-4-lite", dim=512, input_type="document")
    assert len(shorter.embed(TEXTS[:1])[0]) == 512
    assert standin.requests[1].body == {
        "input": TEXTS[:1], "model": "voyage-4-lite", "input_type": "document", "output_dimension": 512,
    }  # fmt: skip


@pytest.mark.parametrize("make", [_openai, _voyage])
def test_embedders_batch_and_keep_the_order(standin: StandinServer, make: object) -> None:
    texts = [f"text number {i}" for i in range(5)]
    embedder = make(standin, batch_size=2)  # type: ignore[operator]
    vectors = embedder.embed(texts)
    assert [len(r.body["input"]) for r in standin.requests] == [2, 2, 1]
    assert _same(vectors, DeterministicEmbedder(embedder.dim).embed(texts))
    assert embedder.embed([]) == []
    assert len(standin.requests) == 3


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"data": [{"index": 0, "embedding": [1.0, 0.0]}], "usage": {}}, "has 2 dimensions, expected 1536"),
        ({"data": [], "usage": {}}, "0 embeddings for 1 texts"),
        ({"data": [{"index": 3, "embedding": [1.0] * 1536}]}, "index 3 is missing, out of range"),
        ({"data": [{"index": 0, "embedding": [0.0] * 1536}]}, "not a non-zero vector"),
        ({"object": "list"}, "no embeddings for 1 texts"),
    ],
)
def test_an_unusable_embedding_answer_is_a_response_error_and_not_retried(
    standin: StandinServer, answer: object, problem: str
) -> None:
    standin.script(Reply.json(answer))
    with pytest.raises(ProviderResponseError, match=problem):
        _openai(standin).embed(["one text"])
    assert len(standin.requests) == 1


def test_models_without_a_known_dimension_need_one() -> None:
    with pytest.raises(ConfigurationError, match="set dim"):
        OpenAIEmbedder(api_key="k", model="some-other-model")
    with pytest.raises(ConfigurationError, match="cannot give 512"):
        OpenAIEmbedder(api_key="k", model="text-embedding-ada-002", dim=512)
    with pytest.raises(ConfigurationError, match="not 300"):
        VoyageEmbedder(api_key="k", dim=300)
    with pytest.raises(ConfigurationError, match="API key"):
        VoyageEmbedder(api_key="")


# --- rerankers -------------------------------------------------------------------------------

QUERY = "where does billing-api run"
DOCUMENTS = ["billing-api runs on the k8s cluster", "the lunch menu", "where does billing-api run today"]


def test_voyage_reranks_in_document_order(standin: StandinServer) -> None:
    reranker: Reranker = _voyage_reranker(standin)
    scores = reranker.rerank(QUERY, DOCUMENTS)
    # the stand-in answers most relevant first, as Voyage does; the adapter restores document order
    assert [s.index for s in scores] == [0, 1, 2]
    assert scores[2].score == 1.0 and scores[1].score == 0.0
    assert 0 < scores[0].score < 1
    assert standin.requests[0].body == {"query": QUERY, "documents": DOCUMENTS, "model": "rerank-2.5"}
    assert reranker.rerank(QUERY, []) == []
    assert len(standin.requests) == 1


def test_llm_reranker_asks_a_chat_model_and_scales_its_scores(standin: StandinServer) -> None:
    meter = Meter()
    scores = _llm(standin, meter).rerank(QUERY, [*DOCUMENTS[:2], "billing-api\nwhere\n\nit does run"])
    assert scores[2] == RerankScore(index=2, score=1.0)
    assert scores[1] == RerankScore(index=1, score=0.0)
    assert 0 < scores[0].score < 1
    [request] = standin.requests
    assert request.path == "/openai/v1/chat/completions"
    assert request.body["model"] == "gpt-4o-mini"
    assert request.body["temperature"] == 0.0
    assert request.body["response_format"] == {"type": "json_object"}
    prompt = request.body["messages"][-1]["content"]
    assert "[2] billing-api where it does run" in prompt  # one line per document
    totals = _totals(meter, "llm", "gpt-4o-mini", "rerank")
    assert totals.input_tokens > 0 and totals.output_tokens == 4
    expected_cost = (totals.input_tokens * 0.15 + totals.output_tokens * 0.60) / 1_000_000
    assert totals.estimated_cost_usd == pytest.approx(expected_cost)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"scores": [7, 0, 10]}', [0.7, 0.0, 1.0]),
        ('```json\n{"scores": [7, 0, 10]}\n```', [0.7, 0.0, 1.0]),
        ('Here you go: {"scores": [7, 0, 10]} Hope it helps.', [0.7, 0.0, 1.0]),
        ("[7, 0, 10]", [0.7, 0.0, 1.0]),
        ('{"scores": [{"index": 2, "score": 10}, {"index": 0, "score": 7}, {"index": 1, "score": 0}]}',
         [0.7, 0.0, 1.0]),
        ('{"0": 7, "1": 0, "2": 10}', [0.7, 0.0, 1.0]),
        ('{"scores": [0.7, 0.05, 1]}', [0.7, 0.05, 1.0]),
        ('{"scores": [1, 0, 1]}', [0.1, 0.0, 0.1]),
    ],
)  # fmt: skip
def test_llm_reranker_reads_answers_leniently(
    standin: StandinServer, content: str, expected: list[float]
) -> None:
    standin.script(Reply.chat(content))
    scores = _llm(standin).rerank(QUERY, DOCUMENTS)
    assert [s.score for s in scores] == pytest.approx(expected)


@pytest.mark.parametrize(
    "content",
    [
        "Document 2 is the best match.",
        '{"scores": [7, 0]}',
        '{"scores": [7, 0, 10, 3]}',
        '{"scores": [7, 0, 11]}',
        '{"scores": [7, -1, 10]}',
        '{"scores": [7, "high", 10]}',
        '{"scores": [{"index": 0, "score": 7}, {"index": 0, "score": 1}, {"index": 2, "score": 3}]}',
        "",
    ],
)
def test_llm_reranker_refuses_an_answer_without_one_score_per_document(
    standin: StandinServer, content: str
) -> None:
    standin.script(Reply.chat(content))
    meter = Meter()
    with pytest.raises(ProviderResponseError, match="no score from 0 to 10 for each of 3 documents"):
        _llm(standin, meter).rerank(QUERY, DOCUMENTS)
    assert len(standin.requests) == 1
    assert meter.grand_total() == Totals(requests=1, failed_requests=1)


# --- resilience over the wire ----------------------------------------------------------------


def test_429_with_retry_after_then_success(standin: StandinServer) -> None:
    fake = FakeTime()
    chain = ResilienceChain("openai", FAST, clock=fake.clock, sleep=fake.sleep)
    standin.script(Reply.error(429, retry_after="2"))
    embedder = _openai(standin, chain=chain)
    assert len(embedder.embed(TEXTS)) == 3
    assert len(standin.requests) == 2
    assert fake.sleeps[0] >= 2.0  # honoured, without the test waiting for it
    totals = _totals(embedder.meter, "openai", "text-embedding-3-small", "embed")
    assert (totals.requests, totals.failed_requests) == (2, 1)


def test_429_until_retries_run_out_is_rate_limited(standin: StandinServer) -> None:
    standin.script(*[Reply.error(429, retry_after="0")] * 3)
    with pytest.raises(ProviderRateLimitedError, match=r"^openai: HTTP 429 .*scripted 429 after 3 attempts$"):
        _openai(standin).embed(TEXTS)
    assert len(standin.requests) == 3


def test_server_errors_then_success(standin: StandinServer) -> None:
    standin.script(Reply.error(500), Reply.error(503))
    scores = _voyage_reranker(standin).rerank(QUERY, DOCUMENTS)
    assert len(scores) == 3
    assert len(standin.requests) == 3


def test_timeouts_exhaust_the_retries(standin: StandinServer) -> None:
    settings = FAST.model_copy(update={"timeout_seconds": 0.1})
    standin.script(*[Reply.slow(0.5)] * 3)
    embedder = _openai(standin, chain=ResilienceChain("openai", settings))
    started = time.monotonic()
    with pytest.raises(ProviderTimeoutError, match=r"^openai: no answer within 0.1s .* after 3 attempts$"):
        embedder.embed(TEXTS)
    assert time.monotonic() - started < 1.0
    assert len(standin.requests) == 3
    totals = embedder.meter.grand_total()
    assert (totals.requests, totals.failed_requests, totals.input_tokens) == (3, 3, 0)


def test_a_slow_answer_within_the_timeout_is_fine(standin: StandinServer) -> None:
    standin.script(Reply.slow(0.05))
    assert len(_openai(standin).embed(TEXTS)) == 3


def test_breaker_opens_after_repeated_failures_and_refuses_without_a_network_call(
    standin: StandinServer,
) -> None:
    fake = FakeTime()
    settings = FAST.model_copy(update={"breaker_failures": 2, "max_retries": 0, "breaker_reset_seconds": 30})
    embedder = _openai(standin, chain=ResilienceChain("openai", settings, clock=fake.clock, sleep=fake.sleep))
    standin.script(Reply.error(503), Reply.error(503))
    with pytest.raises(ProviderResponseError, match="HTTP 503"):
        embedder.embed(TEXTS)
    with pytest.raises(ProviderResponseError, match="the circuit breaker is now open"):
        embedder.embed(TEXTS)
    with pytest.raises(ProviderUnavailableError, match=r"^openai: circuit breaker open after 2 consecutive"):
        embedder.embed(TEXTS)
    assert len(standin.requests) == 2
    assert embedder.meter.grand_total().requests == 2
    fake.now += 30
    assert len(embedder.embed(TEXTS)) == 3  # the trial call goes through and closes the breaker
    assert len(standin.requests) == 3


def test_400_is_not_retried(standin: StandinServer) -> None:
    standin.script(Reply.error(400))
    embedder = _voyage(standin)
    with pytest.raises(
        ProviderResponseError, match=r"^voyage: HTTP 400 Bad Request: scripted 400 \(not retried\)$"
    ):
        embedder.embed(TEXTS)
    assert len(standin.requests) == 1
    assert embedder.meter.grand_total() == Totals(requests=1, failed_requests=1)


def test_a_wrong_api_key_is_not_retried(standin: StandinServer) -> None:
    embedder = OpenAIEmbedder(
        api_key="sk-wrong", base_url=f"{standin.url}/openai/v1", chain=ResilienceChain("openai", FAST)
    )
    with pytest.raises(ProviderResponseError, match="HTTP 401 Unauthorized: Incorrect API key provided"):
        embedder.embed(TEXTS)
    assert [r.authorization for r in standin.requests] == ["Bearer sk-wrong"]


def test_a_body_that_is_not_json_is_a_response_error(standin: StandinServer) -> None:
    standin.script(Reply(body=b'{"data": [truncated'))
    with pytest.raises(ProviderResponseError, match=r"^openai: unusable answer: the body is not JSON"):
        _openai(standin).embed(TEXTS)
    assert len(standin.requests) == 1


def test_an_unreachable_provider_is_a_provider_error_after_retries() -> None:
    with running_standin() as gone:
        base_url = f"{gone.url}/openai/v1"
    embedder = OpenAIEmbedder(api_key=API_KEY, base_url=base_url, chain=ResilienceChain("openai", FAST))
    with pytest.raises(ProviderError, match=r"^openai: cannot reach it \(ConnectError.* after 3 attempts$"):
        embedder.embed(TEXTS)


# --- metering --------------------------------------------------------------------------------


def test_one_meter_totals_every_adapter_and_failed_attempts_add_no_tokens(standin: StandinServer) -> None:
    meter = Meter()
    openai = _openai(standin, meter=meter)
    voyage = _voyage_reranker(standin, meter)
    standin.script(Reply.error(503))
    openai.embed(["billing api", "lunch menu today"])  # a failed attempt, then 5 words
    voyage.rerank("billing api", ["billing api runs", "lunch"])  # 2 * 2 query words + 4 words

    embedding = _totals(meter, "openai", "text-embedding-3-small", "embed")
    assert (embedding.requests, embedding.failed_requests, embedding.input_tokens) == (2, 1, 5)
    assert embedding.estimated_cost_usd == pytest.approx(5 * 0.02 / 1e6)
    rerank = _totals(meter, "voyage", "rerank-2.5", "rerank")
    assert (rerank.requests, rerank.failed_requests, rerank.input_tokens) == (1, 0, 8)
    assert rerank.estimated_cost_usd == pytest.approx(8 * 0.05 / 1e6)
    total = meter.grand_total()
    assert (total.requests, total.failed_requests, total.input_tokens, total.output_tokens) == (3, 1, 13, 0)
    assert total.estimated_cost_usd == pytest.approx(embedding.estimated_cost_usd + rerank.estimated_cost_usd)


def test_meter_prices_can_be_overridden_and_unknown_models_are_counted_unpriced() -> None:
    meter = Meter(prices={"text-embedding-3-small": Price(input_per_million=1.0)})
    meter.record(provider="openai", model="text-embedding-3-small", operation="embed",
                 usage=Usage(input_tokens=500_000))  # fmt: skip
    meter.record(provider="local", model="qwen-7b", operation="rerank",
                 usage=Usage(input_tokens=10, output_tokens=2))  # fmt: skip
    assert _totals(meter, "openai", "text-embedding-3-small", "embed").estimated_cost_usd == 0.5
    unpriced = _totals(meter, "local", "qwen-7b", "rerank")
    assert (unpriced.estimated_cost_usd, unpriced.unpriced_requests) == (0.0, 1)
    assert meter.price("rerank-2.5") == Price(input_per_million=0.05)


def test_concurrent_callers_share_one_adapter_and_meter(standin: StandinServer) -> None:
    embedder = _openai(standin, batch_size=1)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            assert len(embedder.embed([f"thread {n} first", f"thread {n} second"])) == 2
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    totals = embedder.meter.grand_total()
    assert (totals.requests, totals.failed_requests, totals.input_tokens) == (16, 0, 48)
    assert len(standin.requests) == 16
