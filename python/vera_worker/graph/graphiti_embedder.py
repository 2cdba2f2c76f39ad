"""VERA's Embedder port behind Graphiti's EmbedderClient interface, so Graphiti's own
search embeds its queries with the model a group pinned (the vectors already in the
graph came from that model too). The port is synchronous and CPU- or network-bound:
calls run in a worker thread so Graphiti's event loop keeps going."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from graphiti_core.embedder.client import EmbedderClient

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.ports import Embedder


class GraphitiEmbedder(EmbedderClient):
    """An EmbedderClient that delegates to a VERA Embedder (texts only: Graphiti's
    token-id inputs belong to OpenAI's API and mean nothing to other models)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    async def create(
        self, input_data: str | list[str] | Iterable[int] | Iterable[Iterable[int]]
    ) -> list[float]:
        texts = _texts(input_data)
        if len(texts) != 1:
            raise InvalidArgumentError("create embeds one text; use create_batch for several")
        vectors = await asyncio.to_thread(self._embedder.embed, texts)
        return vectors[0]

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        texts = _texts(input_data_list)
        if not texts:
            return []
        return await asyncio.to_thread(self._embedder.embed, texts)


def _texts(input_data: object) -> list[str]:
    if isinstance(input_data, str):
        return [input_data]
    if isinstance(input_data, list) and all(isinstance(item, str) for item in input_data):
        return list(input_data)
    raise InvalidArgumentError("VERA's embedders take text, not token ids")
