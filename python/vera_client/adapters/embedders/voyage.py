"""Voyage AI's embeddings API (POST {base_url}/embeddings).

`input_type` "query" or "document" makes Voyage prepend a retrieval prompt;
None (the default) embeds the text as it is, so queries and documents share
one space without the caller having to say which is which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from vera_client.adapters.embedders.openai import read_embeddings
from vera_client.adapters.providers.client import ProviderClient, usage_tokens
from vera_client.adapters.providers.metering import Meter, Usage
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.config import ResilienceSettings
from vera_client.domain.errors import ConfigurationError

PROVIDER = "voyage"
DEFAULT_BASE_URL = "https://api.voyageai.com/v1"
DEFAULT_MODEL = "voyage-3.5"
# the API takes at most 1000 texts a request
MAX_BATCH = 1000

# Models that give 1024 dimensions by default and 256, 512 or 2048 on request (output_dimension).
FLEXIBLE_MODELS = frozenset({
    "voyage-3.5", "voyage-3.5-lite", "voyage-3-large", "voyage-4", "voyage-4-lite", "voyage-4-large",
})  # fmt: skip
DEFAULT_DIM = 1024
OUTPUT_DIMENSIONS = frozenset({256, 512, 1024, 2048})

InputType = Literal["query", "document"]


class VoyageEmbedder:
    """Satisfies domain.ports.Embedder.

    A model outside FLEXIBLE_MODELS needs `dim`, which is then checked
    against the answers but not sent.
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        dim: int | None = None,
        input_type: InputType | None = None,
        base_url: str = DEFAULT_BASE_URL,
        batch_size: int = 64,
        meter: Meter | None = None,
        chain: ResilienceChain | None = None,
    ) -> None:
        if not api_key:
            raise ConfigurationError("the Voyage embedder needs an API key")
        if batch_size < 1:
            raise ConfigurationError("batch_size must be at least 1")
        self._model = model
        self._dim, self._send_dimension = _dimension(model, dim)
        self._input_type = input_type
        self._batch_size = min(batch_size, MAX_BATCH)
        self._client = ProviderClient(
            provider=PROVIDER,
            base_url=base_url,
            api_key=api_key,
            chain=chain or ResilienceChain(PROVIDER, ResilienceSettings()),
            meter=meter or Meter(),
        )

    @property
    def batch_size(self) -> int:
        """Texts a call embeds best: ingestion embeds several items' texts at once (issue 31)."""
        return self._batch_size

    @property
    def model(self) -> str:
        return self._model

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def meter(self) -> Meter:
        return self._client.meter

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(self._batch(texts[start : start + self._batch_size]))
        return vectors

    def _batch(self, texts: Sequence[str]) -> list[list[float]]:
        body: dict[str, Any] = {"input": list(texts), "model": self._model, "input_type": self._input_type}
        if self._send_dimension:
            body["output_dimension"] = self._dim

        def read(payload: Any) -> tuple[list[list[float]], Usage]:
            vectors = read_embeddings(self._client, payload, len(texts), self._dim)
            return vectors, Usage(input_tokens=usage_tokens(payload, "total_tokens"))

        return self._client.post("embeddings", body, model=self._model, operation="embed", read=read)


def _dimension(model: str, dim: int | None) -> tuple[int, bool]:
    """The vectors' dimension and whether to ask for it."""
    if model not in FLEXIBLE_MODELS:
        if dim is None:
            raise ConfigurationError(f"{PROVIDER}: the dimension of model {model!r} is unknown; set dim")
        return dim, False
    if dim is None or dim == DEFAULT_DIM:
        return DEFAULT_DIM, False
    if dim not in OUTPUT_DIMENSIONS:
        raise ConfigurationError(
            f"{PROVIDER}: model {model!r} gives {sorted(OUTPUT_DIMENSIONS)} dimensions, not {dim}"
        )
    return dim, True
