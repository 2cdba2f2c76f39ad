"""Voyage AI's rerank API (POST {base_url}/rerank): a cross-encoder over (query, document)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from vera_client.adapters.providers.client import ProviderClient, usage_tokens
from vera_client.adapters.providers.metering import Meter, Usage
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.config import ResilienceSettings
from vera_client.domain.errors import ConfigurationError
from vera_client.domain.ports import RerankScore

PROVIDER = "voyage"
DEFAULT_BASE_URL = "https://api.voyageai.com/v1"
DEFAULT_MODEL = "rerank-2.5"
# the API takes at most 1000 documents a request
MAX_DOCUMENTS = 1000


class VoyageReranker:
    """Satisfies domain.ports.Reranker; Voyage's relevance scores are already 0..1."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str = DEFAULT_BASE_URL,
        meter: Meter | None = None,
        chain: ResilienceChain | None = None,
    ) -> None:
        if not api_key:
            raise ConfigurationError("the Voyage reranker needs an API key")
        self._model = model
        self._client = ProviderClient(
            provider=PROVIDER,
            base_url=base_url,
            api_key=api_key,
            chain=chain or ResilienceChain(PROVIDER, ResilienceSettings()),
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

    def rerank(self, query: str, documents: Sequence[str]) -> list[RerankScore]:
        scores: list[RerankScore] = []
        for start in range(0, len(documents), MAX_DOCUMENTS):
            part = self._part(query, documents[start : start + MAX_DOCUMENTS])
            scores.extend(RerankScore(index=start + s.index, score=s.score) for s in part)
        return scores

    def _part(self, query: str, documents: Sequence[str]) -> list[RerankScore]:
        body = {"query": query, "documents": list(documents), "model": self._model}

        def read(payload: Any) -> tuple[list[RerankScore], Usage]:
            scores = _scores(self._client, payload, len(documents))
            return scores, Usage(input_tokens=usage_tokens(payload, "total_tokens"))

        return self._client.post("rerank", body, model=self._model, operation="rerank", read=read)


def _scores(client: ProviderClient, payload: Any, count: int) -> list[RerankScore]:
    """The answer's scores in document order (Voyage sorts them by relevance)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or len(data) != count:
        got = len(data) if isinstance(data, list) else "no"
        raise client.malformed(f"{got} scores for {count} documents")
    scores: list[float | None] = [None] * count
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or scores[index] is not None:
            raise client.malformed(f"score index {index!r} is missing, out of range or repeated")
        score = item.get("relevance_score")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise client.malformed(f"the score of document {index} is not a number")
        # a cross-encoder's sigmoid output; clamping only absorbs float rounding at the ends
        scores[index] = min(1.0, max(0.0, float(score)))
    return [RerankScore(index=i, score=s) for i, s in enumerate(scores) if s is not None]
