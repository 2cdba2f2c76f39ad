"""The LangChain and LlamaIndex retrievers (vera_client.integrations), against the real
packages and the demo data: each hit of vera.search becomes one document or node, in rank
order, with its text, citation and seven signals, sync and async, as the client's caller."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN, Database
from pg_tests.support.lumen import Lumen, load_lumen
from vera_client import AsyncVeraClient, VeraClient
from vera_client.api.hits import Hit
from vera_client.bootstrap import Providers, build_providers
from vera_client.config import VeraSettings
from vera_client.domain.errors import ConfigurationError, InvalidArgumentError, PermissionDeniedError
from vera_client.integrations.langchain import VeraRetriever
from vera_client.integrations.llama_index import VeraLlamaRetriever

QUESTION = "Which cluster does billing-api run on?"
SIGNALS = {"relevance", "authority", "verification", "recency", "feedback", "confidence", "period"}


@pytest.fixture(scope="module")
def lumen(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Lumen:
    return load_lumen(db, tmp_path_factory.mktemp("objects"))


@pytest.fixture(scope="module")
def providers() -> Providers:
    return build_providers(VeraSettings(embedder={"provider": "local"}))


@pytest.fixture(scope="module")
def client(db: Database, lumen: Lumen, providers: Providers) -> Iterator[VeraClient]:
    with client_for(db, lumen.key, providers=providers) as vera:
        yield vera


def _expected(client: VeraClient, k: int = 4, **options: object) -> list[Hit]:
    hits = client.search(QUESTION, k=k, **options)  # type: ignore[arg-type]
    assert len(hits) == k
    return hits


def _check_metadata(metadata: dict[str, object], hit: Hit) -> None:
    assert metadata["rank"] == hit.rank and metadata["kind"] == hit.kind
    assert metadata["item_id"] == str(hit.item_id) and metadata["group_id"] == hit.group_id
    assert metadata["score"] == pytest.approx(hit.score, abs=1e-5)
    assert metadata["citation"] == hit.citation
    signals = metadata["signals"]
    assert isinstance(signals, dict) and set(signals) == SIGNALS
    assert signals["authority"] == hit.signals.authority
    assert (metadata["subject"], metadata["predicate"], metadata["object"]) == (
        hit.subject,
        hit.predicate,
        hit.object,
    )


def _check_documents(documents: list[Document], hits: list[Hit]) -> None:
    assert [d.id for d in documents] == [str(h.item_id) for h in hits]
    for document, hit in zip(documents, hits, strict=True):
        assert document.page_content == hit.text
        _check_metadata(document.metadata, hit)
    assert documents[0].metadata["citation"]["source"]["name"] == "cmdb"


def _check_nodes(nodes: list[NodeWithScore], hits: list[Hit]) -> None:
    assert [n.node.node_id for n in nodes] == [str(h.item_id) for h in hits]
    for found, hit in zip(nodes, hits, strict=True):
        assert found.node.get_content() == hit.text
        assert found.score == pytest.approx(hit.score, abs=1e-5)
        _check_metadata(found.node.metadata, hit)
        shown_to_a_model = found.node.get_metadata_str(mode="llm")  # type: ignore[attr-defined]
        assert "citation" not in shown_to_a_model and "signals" not in shown_to_a_model


def test_langchain_documents_are_the_hits(client: VeraClient) -> None:
    hits = _expected(client)
    _check_documents(VeraRetriever(client=client, k=4).invoke(QUESTION), hits)


def test_langchain_passes_as_of(client: VeraClient) -> None:
    before_the_migration = datetime(2026, 6, 1, tzinfo=UTC)
    documents = VeraRetriever(client=client, k=3, as_of=before_the_migration).invoke(QUESTION)
    _check_documents(documents, _expected(client, k=3, as_of=before_the_migration))
    assert any("vm-cluster-1" in d.page_content for d in documents)


def test_langchain_async_with_the_async_client(
    db: Database, lumen: Lumen, client: VeraClient, providers: Providers
) -> None:
    hits = _expected(client)

    async def scenario() -> list[Document]:
        vera = await AsyncVeraClient.connect(db.dsn(APP_LOGIN), lumen.key, providers=providers)
        async with vera:
            return await VeraRetriever(async_client=vera, k=4).ainvoke(QUESTION)

    _check_documents(asyncio.run(scenario()), hits)


def test_langchain_async_with_only_the_blocking_client(client: VeraClient) -> None:
    documents = asyncio.run(VeraRetriever(client=client, k=4).ainvoke(QUESTION))
    _check_documents(documents, _expected(client))


def test_llama_index_nodes_are_the_hits(client: VeraClient) -> None:
    _check_nodes(VeraLlamaRetriever(client, k=4).retrieve(QUESTION), _expected(client))


def test_llama_index_async_with_the_async_client_and_without(
    db: Database, lumen: Lumen, client: VeraClient, providers: Providers
) -> None:
    hits = _expected(client)

    async def scenario() -> tuple[list[NodeWithScore], list[NodeWithScore]]:
        vera = await AsyncVeraClient.connect(db.dsn(APP_LOGIN), lumen.key, providers=providers)
        async with vera:
            awaited = await VeraLlamaRetriever(async_client=vera, k=4).aretrieve(QUESTION)
        threaded = await VeraLlamaRetriever(client, k=4).aretrieve(QUESTION)
        return awaited, threaded

    awaited, threaded = asyncio.run(scenario())
    _check_nodes(awaited, hits)
    _check_nodes(threaded, hits)


def test_the_retrievers_search_as_their_callers_groups_only(
    db: Database, lumen: Lumen, client: VeraClient
) -> None:
    """Another tenant's key, through the same pool, finds none of Lumen's knowledge; and a
    group it cannot read is refused, not searched."""
    with db.admin() as admin:
        row = admin.execute("select * from vera.create_tenant('Other Freight', 'Other Owner')").fetchone()
        assert row is not None
    stranger = client.as_caller(row[2])
    assert VeraRetriever(client=stranger, k=4).invoke(QUESTION) == []
    assert VeraLlamaRetriever(stranger, k=4).retrieve(QUESTION) == []
    with pytest.raises(PermissionDeniedError, match="cannot read group"):
        VeraRetriever(client=stranger, groups=[lumen.organisation]).invoke(QUESTION)
    with pytest.raises(PermissionDeniedError, match="cannot read group"):
        VeraLlamaRetriever(stranger, groups=[lumen.organisation]).retrieve(QUESTION)


def test_a_retriever_without_a_client_is_refused(client: VeraClient) -> None:
    with pytest.raises(ConfigurationError, match="needs a client"):
        VeraRetriever()
    with pytest.raises(ConfigurationError, match="needs a client"):
        VeraLlamaRetriever()
    with pytest.raises(InvalidArgumentError, match="k must be between 1 and 1000"):
        VeraLlamaRetriever(client, k=0)
