"""OpenAI's embeddings API (POST {base_url}/embeddings), or any server that speaks it.

The text-embedding-3 models can return shorter vectors (`dimensions`); the
shortened vector is still what the model means, not a truncated one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vera_client.adapters.providers.client import ProviderClient, as_unit_vector, usage_tokens
from vera_client.adapters.providers.metering import Meter, Usage
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.config import ResilienceSettings
from vera_client.domain.errors import ConfigurationError

PROVIDER = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
# the API takes at most 2048 inputs a request
MAX_BATCH = 2048

# model -> (native dimension, whether `dimensions` can shorten it)
KNOWN_MODELS: dict[str, tuple[int, bool]] = {
    "text-embedding-3-small": (1536, True),
    "text-embedding-3-large": (3072, True),
    "text-embedding-ada-002": (1536, False),
}


class OpenAIEmbedder:
    """Satisfies domain.ports.Embedder.

    A model not in KNOWN_MODELS (another server's) needs `dim`, which is then
    checked against the answers but not sent.
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        dim: int | None = None,
        base_url: str = DEFAULT_BASE_URL,
        batch_size: int = 64,
        meter: Meter | None = None,
        chain: ResilienceChain | None = None,
    ) -> None:
        if not api_key:
            raise ConfigurationError("the OpenAI embedder needs an API key")
        if batch_size < 1:
            raise ConfigurationError("batch_size must be at least 1")
        self._model = model
        self._dim, self._send_dimensions = _dimension(model, dim)
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
        body: dict[str, Any] = {"model": self._model, "input": list(texts), "encoding_format": "float"}
        if self._send_dimensions:
            body["dimensions"] = self._dim

        def read(payload: Any) -> tuple[list[list[float]], Usage]:
            vectors = read_embeddings(self._client, payload, len(texts), self._dim)
            return vectors, Usage(input_tokens=usage_tokens(payload, "prompt_tokens"))

        return self._client.post("embeddings", body, model=self._model, operation="embed", read=read)


def _dimension(model: str, dim: int | None) -> tuple[int, bool]:
    """The vectors' dimension and whether to ask for it."""
    known = KNOWN_MODELS.get(model)
    if known is None:
        if dim is None:
            raise ConfigurationError(f"{PROVIDER}: the dimension of model {model!r} is unknown; set dim")
        return dim, False
    native, shortens = known
    if dim is None or dim == native:
        return native, False
    if not shortens or not 1 <= dim <= native:
        raise ConfigurationError(f"{PROVIDER}: model {model!r} cannot give {dim} dimensions")
    return dim, True


def read_embeddings(client: ProviderClient, payload: Any, count: int, dim: int) -> list[list[float]]:
    """The vectors of an answer shaped data[].index/embedding (OpenAI's, also Voyage's), in input
    order, each checked against dim and L2-normalised."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or len(data) != count:
        got = len(data) if isinstance(data, list) else "no"
        raise client.malformed(f"{got} embeddings for {count} texts")
    vectors: list[list[float] | None] = [None] * count
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or vectors[index] is not None:
            raise client.malformed(f"embedding index {index!r} is missing, out of range or repeated")
        raw = item.get("embedding")
        if isinstance(raw, list) and len(raw) != dim:
            raise client.malformed(f"embedding {index} has {len(raw)} dimensions, expected {dim}")
        vector = as_unit_vector(raw)
        if vector is None:
            raise client.malformed(f"embedding {index} is not a non-zero vector of finite numbers")
        vectors[index] = vector
    return [vector for vector in vectors if vector is not None]
