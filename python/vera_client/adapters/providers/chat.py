"""A chat model over any OpenAI-compatible API (POST {base_url}/chat/completions) that
answers with one JSON object: the one way VERA's workers call a language model.

Structured output is asked for with response_format json_schema. Servers that lack it
(older vLLM, llama.cpp builds, some proxies) refuse the request with a 400 or 422; the
call is then made again in JSON mode (json_object, with the schema quoted in the system
message), and that server is remembered so later calls go to JSON mode at once. Every
attempt goes through the provider's resilience chain and meter (tokens in and out, the
price per model from the meter's table).

The model's answer is data, never trusted: content that is not one JSON object, an
answer cut off at the token limit, or a refusal raises ProviderResponseError (a refusal
its subclass ModelRefusalError); callers validate the object's fields themselves.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from vera_client.adapters.providers.client import ProviderClient, usage_tokens
from vera_client.adapters.providers.metering import Meter, Price, Usage
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.config import LlmSettings, ResilienceSettings
from vera_client.domain.errors import ProviderResponseError

T = TypeVar("T")

DEFAULT_PROVIDER = "llm"
# an answer longer than this is cut by the server and refused here: it bounds cost and
# what a runaway model can make the worker parse
DEFAULT_MAX_OUTPUT_TOKENS = 4000
# statuses with which a compatible server says it does not know response_format json_schema
_SCHEMA_REFUSED = (400, 422)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


class ModelRefusalError(ProviderResponseError):
    """The model refused to answer (its message carries a refusal, not content)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatAnswer:
    """One JSON object from the model (what it used is in the meter)."""

    data: dict[str, Any]
    json_mode: bool  # True when the server took JSON mode instead of json_schema


# Servers (by base URL) that refused json_schema in this process: they get JSON mode at once.
_json_mode_servers: set[str] = set()
_json_mode_lock = threading.Lock()


def _server_lacks_schema(base_url: str) -> bool:
    with _json_mode_lock:
        return base_url in _json_mode_servers


def forget_servers_without_schema() -> None:
    """Forget which servers refused json_schema (an upgraded server, tests)."""
    with _json_mode_lock:
        _json_mode_servers.clear()


def _remember_lacks_schema(base_url: str) -> None:
    with _json_mode_lock:
        _json_mode_servers.add(base_url)


class ChatModel:
    """One model on one OpenAI-compatible server; thread-safe.

    `api_key` may be None for a local server without auth (llama.cpp, Ollama).
    `temperature=None` leaves it out, for models that accept only their default.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        provider: str = DEFAULT_PROVIDER,
        temperature: float | None = 0.0,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        meter: Meter | None = None,
        chain: ResilienceChain | None = None,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._model = model
        self._temperature = temperature
        self._max_output_tokens = max_output_tokens
        self._client = ProviderClient(
            provider=provider,
            base_url=self._base_url + "/",
            api_key=api_key,
            chain=chain or ResilienceChain(provider, ResilienceSettings()),
            meter=meter or Meter(),
        )

    @property
    def model(self) -> str:
        return self._model

    @property
    def meter(self) -> Meter:
        return self._client.meter

    def close(self) -> None:
        self._client.close()

    def complete_json(
        self, *, system: str, user: str, schema: Mapping[str, Any], schema_name: str, operation: str
    ) -> ChatAnswer:
        """The model's JSON object for the messages, asked to follow schema (a JSON Schema object)."""
        if not _server_lacks_schema(self._base_url):
            structured = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": dict(schema), "strict": True},
            }
            try:
                return self._ask(system, user, structured, operation, json_mode=False)
            except ProviderResponseError as exc:
                if not _refused_schema(exc):
                    raise
                _remember_lacks_schema(self._base_url)
        # JSON mode guarantees JSON, not its shape: the schema goes into the instructions
        instructions = f"{system}\n\nReply with one JSON object only, valid against this JSON Schema:\n" + (
            json.dumps(schema, separators=(",", ":"))
        )
        return self._ask(instructions, user, {"type": "json_object"}, operation, json_mode=True)

    def complete(
        self,
        *,
        system: str,
        user: str,
        operation: str,
        read: Callable[[str], T],
        response_format: Mapping[str, Any] | None = None,
    ) -> T:
        """read(the model's message content) for one chat completion, through the chain and the meter.

        A refusal, an answer cut at the token limit or a completion without content raise
        ProviderResponseError; so does read, when the content is not what it needs.
        """
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        if response_format is not None:
            body["response_format"] = dict(response_format)
        if self._max_output_tokens is not None:
            body["max_tokens"] = self._max_output_tokens
        if self._temperature is not None:
            body["temperature"] = self._temperature

        def read_payload(payload: Any) -> tuple[T, Usage]:
            usage = Usage(
                input_tokens=usage_tokens(payload, "prompt_tokens"),
                output_tokens=usage_tokens(payload, "completion_tokens"),
            )
            return read(self._content(payload)), usage

        return self._client.post(
            "chat/completions", body, model=self._model, operation=operation, read=read_payload
        )

    def spent(self) -> str:
        """What this model's meter counted so far, in one phrase for a log line."""
        total = self.meter.grand_total()
        return (
            f"{total.requests} model requests ({total.failed_requests} failed), "
            f"{total.input_tokens} tokens in, {total.output_tokens} out, "
            f"about ${total.estimated_cost_usd:.4f} so far"
        )

    def malformed(self, what: str) -> ProviderResponseError:
        """The error for an answer a caller's reader cannot use."""
        return self._client.malformed(what)

    def _ask(
        self, system: str, user: str, response_format: dict[str, Any], operation: str, *, json_mode: bool
    ) -> ChatAnswer:
        def read(content: str) -> ChatAnswer:
            return ChatAnswer(data=self._object(content), json_mode=json_mode)

        return self.complete(
            system=system, user=user, operation=operation, read=read, response_format=response_format
        )

    def _content(self, payload: Any) -> str:
        """The first choice's message text; refusals and cut-off answers are errors."""
        choices = payload.get("choices") if isinstance(payload, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(first, dict) or not isinstance(message, dict):
            raise self._client.malformed("no message in the chat completion")
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():
            raise ModelRefusalError(f"{self._client.provider}: the model refused: {_one_line(refusal)[:200]}")
        if first.get("finish_reason") == "length":
            raise self._client.malformed(f"the answer was cut at the {self._max_output_tokens}-token limit")
        content = message.get("content")
        if not isinstance(content, str):
            raise self._client.malformed("no message content in the chat completion")
        return content

    def _object(self, content: str) -> dict[str, Any]:
        try:
            data = json.loads(_FENCE.sub("", content.strip()))
        except ValueError as exc:
            raise self._client.malformed(f"the model's content is not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise self._client.malformed("the model's content is not a JSON object")
        return data


def _refused_schema(exc: ProviderResponseError) -> bool:
    """Whether the server refused the request itself (a 400 or 422 that names the response format)."""
    cause = exc.__cause__
    if not isinstance(cause, httpx.HTTPStatusError) or cause.response.status_code not in _SCHEMA_REFUSED:
        return False
    text = cause.response.text.casefold()
    return "response_format" in text or "json_schema" in text or "schema" in text


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkerModels:
    """The workers' two models on one server, sharing its resilience chain and a meter."""

    extraction: ChatModel
    judge: ChatModel
    meter: Meter


def worker_models(settings: LlmSettings) -> WorkerModels | None:
    """The extraction and judge models of settings; None when no server is configured (both off)."""
    if not settings.enabled:
        return None
    assert settings.base_url is not None
    meter = Meter({
        model: Price(input_per_million=price.input_per_million, output_per_million=price.output_per_million)
        for model, price in settings.prices.items()
    })  # fmt: skip
    # one chain: both models live on the same server, whose breaker and rate limit they share
    chain = ResilienceChain(DEFAULT_PROVIDER, settings.resilience)
    key = settings.api_key.get_secret_value() if settings.api_key is not None else None

    def model(name: str) -> ChatModel:
        return ChatModel(base_url=settings.base_url or "", model=name, api_key=key, meter=meter, chain=chain,
                         max_output_tokens=settings.max_output_tokens)  # fmt: skip

    return WorkerModels(
        extraction=model(settings.extraction_model), judge=model(settings.judge_model), meter=meter
    )
