"""A LlamaIndex retriever over vera.search (the distribution's `[llamaindex]` extra).

    from vera_client import VeraClient
    from vera_client.integrations.llama_index import VeraLlamaRetriever

    retriever = VeraLlamaRetriever(VeraClient.from_settings(), k=5)
    for found in retriever.retrieve("who owns ledger-db?"):
        print(found.score, found.node.get_content(), found.node.metadata["citation"])

Each result is a TextNode (its id the hit's item id, its text the hit's text, the metadata of
vera_client.integrations.hits: citation and seven signals) with the hit's score. `aretrieve`
awaits an AsyncVeraClient when one is given as async_client, else runs the blocking client in
a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from vera_client.api.hits import Hit
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.domain.errors import ConfigurationError, InvalidArgumentError
from vera_client.integrations.hits import hit_metadata

# The citation and the signals are long: kept on the node for the application, but out of what
# an LLM or an embedding model is shown of it (the text is the answer; the source name stays).
HIDDEN_FROM_MODELS = ["citation", "signals", "item_id", "group_id", "blend_score", "rerank_score"]


def as_node(hit: Hit) -> NodeWithScore:
    """One hit as a LlamaIndex node with its score."""
    node = TextNode(
        id_=str(hit.item_id),
        text=hit.text,
        metadata=hit_metadata(hit),
        excluded_llm_metadata_keys=HIDDEN_FROM_MODELS,
        excluded_embed_metadata_keys=HIDDEN_FROM_MODELS,
    )
    return NodeWithScore(node=node, score=hit.score)


class VeraLlamaRetriever(BaseRetriever):
    """Ranked, cited hits of vera.search as LlamaIndex nodes, searched as the client's caller."""

    def __init__(
        self,
        client: VeraClient | None = None,
        *,
        async_client: AsyncVeraClient | None = None,
        k: int = 5,
        as_of: datetime | None = None,
        groups: Sequence[str] | None = None,
        rerank: bool = True,
        **base: Any,
    ) -> None:
        if client is None and async_client is None:
            raise ConfigurationError("VeraLlamaRetriever needs a client (VeraClient) or an async_client")
        if not 1 <= k <= 1000:
            raise InvalidArgumentError(f"k must be between 1 and 1000, got {k}")
        super().__init__(**base)  # callback_manager, verbose, ... as LlamaIndex takes them
        self.client, self.async_client = client, async_client
        self.k, self.as_of, self.groups, self.rerank = k, as_of, groups, rerank

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.client is None:
            raise ConfigurationError("this VeraLlamaRetriever has only an async_client: use aretrieve")
        hits = self.client.search(
            query_bundle.query_str, k=self.k, as_of=self.as_of, groups=self.groups, rerank=self.rerank
        )
        return [as_node(hit) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.async_client is None:
            return await asyncio.to_thread(self._retrieve, query_bundle)
        hits = await self.async_client.search(
            query_bundle.query_str, k=self.k, as_of=self.as_of, groups=self.groups, rerank=self.rerank
        )
        return [as_node(hit) for hit in hits]
