"""A LangChain retriever over vera.search (the distribution's `[langchain]` extra).

    from vera_client import VeraClient
    from vera_client.integrations.langchain import VeraRetriever

    vera = VeraClient.from_settings()
    retriever = VeraRetriever(client=vera, k=5)
    for document in retriever.invoke("who owns ledger-db?"):
        print(document.page_content, document.metadata["citation"]["source"]["name"])

Each document is one hit: its text as page_content, its item id as id, and as metadata the
rank, score, kind, group, a fact's triple, the citation and the seven signals
(vera_client.integrations.hits). `ainvoke` awaits an AsyncVeraClient when one is given as
async_client, else runs the blocking client in a thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, model_validator

from vera_client.api.hits import Hit
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.domain.errors import ConfigurationError
from vera_client.integrations.hits import hit_metadata


def as_document(hit: Hit) -> Document:
    """One hit as a LangChain document."""
    return Document(page_content=hit.text, metadata=hit_metadata(hit), id=str(hit.item_id))


class VeraRetriever(BaseRetriever):
    """Ranked, cited hits of vera.search as LangChain documents, searched as the client's caller."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: VeraClient | None = None
    async_client: AsyncVeraClient | None = None
    k: int = Field(default=5, ge=1, le=1000)
    as_of: datetime | None = None
    groups: Sequence[str] | None = None
    rerank: bool = True

    @model_validator(mode="after")
    def _a_client(self) -> VeraRetriever:
        if self.client is None and self.async_client is None:
            raise ConfigurationError("VeraRetriever needs a client (VeraClient) or an async_client")
        return self

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.client is None:
            raise ConfigurationError("this VeraRetriever has only an async_client: use ainvoke")
        hits = self.client.search(query, k=self.k, as_of=self.as_of, groups=self.groups, rerank=self.rerank)
        return [as_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.async_client is None:  # LangChain's default: the blocking search in a thread
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        hits = await self.async_client.search(
            query, k=self.k, as_of=self.as_of, groups=self.groups, rerank=self.rerank
        )
        return [as_document(hit) for hit in hits]
