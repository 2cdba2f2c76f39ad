"""The chat-model client against a local stand-in of the OpenAI wire format: structured
output, the JSON-mode fallback, the resilience chain (429 with Retry-After, 5xx,
timeouts), metering with prices, and answers that cannot be used (malformed JSON, a
cut-off answer, a refusal)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.standins import API_KEY, Reply, StandinServer
from vera_client.adapters.providers.chat import ChatModel, ModelRefusalError
from vera_client.adapters.providers.metering import Meter, Price
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.config import LlmSettings, ResilienceSettings
from vera_client.domain.errors import (
    ProviderRateLimitedError,
    ProviderResponseError,
    ProviderTimeoutError,
)

FAST = ResilienceSettings(
    breaker_failures=50, breaker_reset_seconds=30, rate_per_second=1000, burst=1000, max_retries=2,
    retry_base_seconds=0.001, retry_max_seconds=5.0, timeout_seconds=0.5,
)  # fmt: skip

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


@pytest.fixture
def standin(standin: StandinServer) -> StandinServer:
    standin.chat_responder = lambda body: json.dumps({"answer": "forty-two"})
    return standin


class FakeSleep:
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def _model(
    standin: StandinServer, *, meter: Meter | None = None, sleep: FakeSleep | None = None
) -> ChatModel:
    chain = ResilienceChain("llm", FAST, sleep=sleep or FakeSleep())
    return ChatModel(base_url=f"{standin.url}/openai/v1", model="small-model", api_key=API_KEY,
                     meter=meter, chain=chain)  # fmt: skip


def _ask(model: ChatModel) -> Any:
    return model.complete_json(system="Answer.", user="What is it?", schema=SCHEMA, schema_name="answer",
                               operation="test")  # fmt: skip


def test_structured_output_sends_the_schema_and_reads_the_object(standin: StandinServer) -> None:
    answer = _ask(_model(standin))
    assert answer.data == {"answer": "forty-two"}
    assert not answer.json_mode
    [request] = standin.requests
    assert request.authorization == f"Bearer {API_KEY}"
    body = request.body
    assert body["model"] == "small-model" and body["temperature"] == 0.0 and body["max_tokens"] > 0
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
    }
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_a_server_without_json_schema_gets_json_mode_and_is_remembered(standin: StandinServer) -> None:
    standin.refuse_json_schema = True
    model = _model(standin)
    first = _ask(model)
    assert first.data == {"answer": "forty-two"} and first.json_mode
    formats = [r.body["response_format"]["type"] for r in standin.requests]
    assert formats == ["json_schema", "json_object"]
    # JSON mode quotes the schema in the instructions, since the server does not enforce it
    assert json.dumps(SCHEMA, separators=(",", ":")) in standin.requests[1].body["messages"][0]["content"]
    # a second model on the same server goes to JSON mode at once
    _ask(_model(standin))
    assert [r.body["response_format"]["type"] for r in standin.requests] == [
        "json_schema", "json_object", "json_object"]  # fmt: skip


def test_a_400_about_something_else_is_not_taken_for_a_missing_json_schema(standin: StandinServer) -> None:
    standin.script(Reply(status=400, body=json.dumps({"error": {"message": "model not found"}}).encode()))
    with pytest.raises(ProviderResponseError, match="model not found"):
        _ask(_model(standin))
    assert len(standin.requests) == 1


def test_429_waits_as_long_as_retry_after_says_then_succeeds(standin: StandinServer) -> None:
    sleep = FakeSleep()
    standin.script(Reply.error(429, retry_after="2"))
    assert _ask(_model(standin, sleep=sleep)).data == {"answer": "forty-two"}
    assert sleep.sleeps == [2.0]


def test_429_that_keeps_coming_ends_in_a_rate_limit_error(standin: StandinServer) -> None:
    standin.script(*[Reply.error(429, retry_after="0")] * 3)
    with pytest.raises(ProviderRateLimitedError, match="3 attempts"):
        _ask(_model(standin))


def test_5xx_is_retried(standin: StandinServer) -> None:
    standin.script(Reply.error(503), Reply.error(500))
    assert _ask(_model(standin)).data == {"answer": "forty-two"}
    assert len(standin.requests) == 3


def test_a_server_that_does_not_answer_in_time_is_a_timeout(standin: StandinServer) -> None:
    standin.script(*[Reply.slow(1.0)] * 3)
    with pytest.raises(ProviderTimeoutError, match=r"no answer within 0\.5s"):
        _ask(_model(standin))


@pytest.mark.parametrize(
    ("content", "finish", "message"),
    [
        ("{not json", "stop", "not JSON"),
        ('["a", "list"]', "stop", "not a JSON object"),
        ('{"answer": "cut', "length", "token limit"),
    ],
)
def test_unusable_content_is_a_response_error_and_not_retried(
    standin: StandinServer, content: str, finish: str, message: str
) -> None:
    completion = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3},
    }
    standin.script(Reply.json(completion))
    with pytest.raises(ProviderResponseError, match=message):
        _ask(_model(standin))
    assert len(standin.requests) == 1


def test_a_refusal_is_its_own_error(standin: StandinServer) -> None:
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                       "refusal": "I cannot help with that."},
                               "finish_reason": "stop"}]}  # fmt: skip
    standin.script(Reply.json(completion))
    with pytest.raises(ModelRefusalError, match="refused: I cannot help with that"):
        _ask(_model(standin))


def test_a_fenced_json_answer_is_read(standin: StandinServer) -> None:
    standin.chat_responder = lambda body: '```json\n{"answer": "fenced"}\n```'
    assert _ask(_model(standin)).data == {"answer": "fenced"}


def test_tokens_and_cost_are_metered_at_the_configured_price(standin: StandinServer) -> None:
    settings = LlmSettings.model_validate(
        {"prices": {"small-model": {"input_per_million": 1_000_000, "output_per_million": 2_000_000}}}
    )
    meter = Meter({m: Price(input_per_million=p.input_per_million, output_per_million=p.output_per_million)
                   for m, p in settings.prices.items()})  # fmt: skip
    standin.script(Reply.error(500))
    _ask(_model(standin, meter=meter))
    [(key, totals)] = meter.totals().items()
    assert (key.provider, key.model, key.operation) == ("llm", "small-model", "test")
    assert totals.requests == 2 and totals.failed_requests == 1
    # the stand-in counts words: "Answer." + "What is it?" = 4 in, {"answer": "forty-two"} = 3 out
    assert (totals.input_tokens, totals.output_tokens) == (4, 3)
    assert totals.estimated_cost_usd == pytest.approx(4 * 1.0 + 3 * 2.0)


def test_llm_settings_are_off_without_a_base_url() -> None:
    assert not LlmSettings().enabled
    assert LlmSettings(base_url="http://127.0.0.1:8080/v1").enabled
