"""The mapping between VERA's graph data and Graphiti's model, without a server: graph group
ids, the rows the stores write against what Graphiti's own save writes, the embedder
adapter, the node memory, settings and the factory's refusals."""

from __future__ import annotations

import asyncio
import math
import socket
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from graphiti_core.helpers import validate_group_id

from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.config import MemorySettings, VeraSettings
from vera_client.domain.errors import ConfigurationError, InvalidArgumentError, ProviderUnavailableError
from vera_client.domain.graph import GraphEdge, GraphNode
from vera_worker.graph.graphiti_embedder import GraphitiEmbedder
from vera_worker.graph.graphiti_model import (
    GRAPH_GROUP_PREFIX,
    edge_row,
    entity_edge,
    entity_node,
    graph_group_id,
    node_row,
    vera_group_id,
)
from vera_worker.graph.stores import graph_store_from_settings, open_graph_store
from vera_worker.graph.written_nodes import WrittenNodes

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)

TRICKY_GROUPS = [
    "o:acme",
    "o_acme",
    "o_3aacme",  # the escape of "o:acme" written out literally
    "o-acme",
    "O:ACME",
    "u:🙂",
    "w:Đà Nẵng",
    "o:x`}) MATCH (n) DETACH DELETE n //",
    'p:"quoted"\\back',
    "default_db",
    "_",
    "-",
]


def _edge(**changes: object) -> GraphEdge:
    values: dict[str, object] = {
        "group_id": "o:acme",
        "fact_id": uuid.UUID(int=1),
        "episode_id": uuid.UUID(int=2),
        "source_id": uuid.UUID(int=3),
        "subject_id": uuid.UUID(int=4),
        "object_id": uuid.UUID(int=5),
        "predicate": "DEPENDS_ON",
        "fact_text": "billing-api depends on ledger-db",
        "lifecycle": "published",
        "valid_from": T0,
        "valid_to": T0 + timedelta(days=30),
        "recorded_at": T0 + timedelta(minutes=1),
        "retired_at": None,
        "fact_embedding": (0.6, 0.8),
    }
    values.update(changes)
    return GraphEdge(**values)  # type: ignore[arg-type]


def test_graph_group_ids_are_injective_reversible_and_accepted_by_graphiti() -> None:
    spelled = [graph_group_id(group) for group in TRICKY_GROUPS]
    assert len(set(spelled)) == len(TRICKY_GROUPS)
    for group, graph_group in zip(TRICKY_GROUPS, spelled, strict=True):
        assert graph_group.startswith(GRAPH_GROUP_PREFIX)
        assert validate_group_id(graph_group)  # letters, digits, '-' and '_' only
        assert vera_group_id(graph_group) == group
    assert graph_group_id("o:acme") == "vera-o_3aacme"


@pytest.mark.parametrize("bad", ["", "x" * 513])
def test_graph_group_id_refuses_empty_and_overlong_ids(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        graph_group_id(bad)


def test_vera_group_id_refuses_foreign_graph_names() -> None:
    with pytest.raises(InvalidArgumentError):
        vera_group_id("default_db")


def test_edge_row_writes_what_graphitis_own_save_writes() -> None:
    edge = _edge()
    graphiti = entity_edge(edge)
    # the dict Graphiti's EntityEdge.save sends (edges.py), attributes flattened in
    saved = {
        "uuid": graphiti.uuid,
        "name": graphiti.name,
        "fact": graphiti.fact,
        "fact_embedding": graphiti.fact_embedding,
        "episodes": graphiti.episodes,
        "created_at": graphiti.created_at,
        "expired_at": graphiti.expired_at,
        "valid_at": graphiti.valid_at,
        "invalid_at": graphiti.invalid_at,
        **graphiti.attributes,
    }
    row = edge_row(edge, lambda moment: moment)
    assert {key: row[key] for key in saved} == saved
    assert (row["source"], row["target"]) == (graphiti.source_node_uuid, graphiti.target_node_uuid)
    assert graphiti.group_id == graph_group_id("o:acme")
    assert saved["fact_id"] == str(edge.fact_id) == graphiti.uuid
    assert saved["episodes"] == [str(edge.episode_id)]
    assert saved["episode_id"] == str(edge.episode_id)
    assert saved["source_id"] == str(edge.source_id)
    assert saved["lifecycle"] == "published"
    # VERA's times in Graphiti's bi-temporal fields (domain/graph.py)
    assert (graphiti.valid_at, graphiti.invalid_at) == (edge.valid_from, edge.valid_to)
    assert (graphiti.created_at, graphiti.expired_at) == (edge.recorded_at, edge.retired_at)


def test_node_row_writes_what_graphitis_own_save_writes() -> None:
    node = GraphNode(group_id="o:acme", node_id=uuid.UUID(int=4), name="ledger-db", name_embedding=(1.0, 0.0))
    graphiti = entity_node(node, created_at=T0)
    row = node_row(node)
    assert row["uuid"] == graphiti.uuid
    assert row["name"] == graphiti.name
    assert row["summary"] == graphiti.summary
    assert row["name_embedding"] == graphiti.name_embedding
    assert row["literal"] is False and graphiti.attributes == {"literal": False}
    assert graphiti.labels == ["Entity"]
    assert graphiti.group_id == graph_group_id("o:acme")


def test_an_edge_without_episode_has_no_episodes() -> None:
    edge = _edge(episode_id=None, source_id=None, fact_embedding=None)
    row = edge_row(edge, lambda moment: moment)
    assert row["episodes"] == [] and row["episode_id"] is None and row["source_id"] is None
    assert row["fact_embedding"] is None
    assert entity_edge(edge).episodes == []


def test_times_are_stored_in_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    edge = _edge(valid_from=datetime(2026, 3, 1, 11, 30, tzinfo=plus_two))
    assert edge_row(edge, lambda moment: moment)["valid_at"] == T0
    assert edge_row(edge, lambda moment: moment)["valid_at"].tzinfo == UTC


@pytest.mark.parametrize(
    "changes",
    [
        {"valid_from": datetime(2026, 3, 1)},  # naive
        {"valid_to": datetime(2026, 3, 1)},
        {"recorded_at": datetime(2026, 3, 1)},
        {"retired_at": datetime(2026, 3, 1)},
        {"fact_text": "nul \x00 inside"},
        {"predicate": "NUL\x00"},
        {"fact_embedding": (math.nan, 1.0)},
        {"fact_embedding": (math.inf, 1.0)},
        {"fact_embedding": ()},
    ],
)
def test_bad_edges_are_refused(changes: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        edge_row(_edge(**changes), lambda moment: moment)


def test_bad_nodes_are_refused() -> None:
    for node in (
        GraphNode(group_id="o:a", node_id=uuid.UUID(int=1), name=""),
        GraphNode(group_id="o:a", node_id=uuid.UUID(int=1), name="a\x00b"),
        GraphNode(group_id="o:a", node_id=uuid.UUID(int=1), name="a", name_embedding=(math.nan,)),
    ):
        with pytest.raises(InvalidArgumentError):
            node_row(node)


def test_graphiti_embedder_delegates_to_veras_embedder() -> None:
    vera = DeterministicEmbedder(16)
    adapter = GraphitiEmbedder(vera)
    one = asyncio.run(adapter.create("ledger-db"))
    also_one = asyncio.run(adapter.create(["ledger-db"]))
    several = asyncio.run(adapter.create_batch(["ledger-db", "billing-api"]))
    assert one == also_one == vera.embed(["ledger-db"])[0]
    assert several == vera.embed(["ledger-db", "billing-api"])
    assert asyncio.run(adapter.create_batch([])) == []


def test_graphiti_embedder_refuses_token_ids() -> None:
    adapter = GraphitiEmbedder(DeterministicEmbedder(16))
    with pytest.raises(InvalidArgumentError):
        asyncio.run(adapter.create([101, 2023]))
    with pytest.raises(InvalidArgumentError):
        asyncio.run(adapter.create(["a", "b"]))


def test_written_nodes_remember_rows_as_written() -> None:
    memory = WrittenNodes(limit=3)
    row = node_row(GraphNode(group_id="o:a", node_id=uuid.UUID(int=1), name="a"))
    renamed = {**row, "name": "b"}
    assert memory.unwritten("g", [row]) == [row]
    memory.remember("g", [row])
    assert memory.unwritten("g", [row]) == []
    assert memory.unwritten("g", [renamed]) == [renamed]
    assert memory.unwritten("other", [row]) == [row]  # per group
    memory.forget("g", [row["uuid"]])
    assert memory.unwritten("g", [row]) == [row]
    memory.remember("g", [row])
    memory.forget("g")
    assert memory.unwritten("g", [row]) == [row]
    # past its limit it starts afresh rather than growing
    memory.remember("g", [{**row, "uuid": str(uuid.UUID(int=n))} for n in range(5)])
    assert memory.unwritten("g", [row]) == [row]


def test_memory_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_MEMORY__GRAPH_BACKEND", "neo4j")
    monkeypatch.setenv("VERA_MEMORY__GRAPH_URL", "bolt://graph.internal:7687")
    monkeypatch.setenv("VERA_MEMORY__GRAPH_USER", "neo4j")
    monkeypatch.setenv("VERA_MEMORY__GRAPH_PASSWORD", "s3cret")
    monkeypatch.setenv("VERA_MEMORY__GRAPH_BATCH_SIZE", "500")
    memory = VeraSettings().memory
    assert memory.graph_backend == "neo4j"
    assert memory.graph_url == "bolt://graph.internal:7687"
    assert memory.graph_password is not None and memory.graph_password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(memory)
    assert memory.graph_batch_size == 500
    assert memory.graph_database == "neo4j"


def test_memory_settings_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="URL"):
        MemorySettings(graph_url="localhost:7687")
    with pytest.raises(ValueError, match="graph_backend"):
        MemorySettings(graph_backend="kuzu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="graph_batch_size"):
        MemorySettings(graph_batch_size=0)


def test_no_backend_means_no_store() -> None:
    assert graph_store_from_settings(MemorySettings()) is None


def test_factory_refuses_unknown_backends_and_missing_urls() -> None:
    with pytest.raises(ConfigurationError, match="unknown graph backend"):
        open_graph_store("kuzu", "bolt://127.0.0.1:7687")
    with pytest.raises(ConfigurationError, match="needs a URL"):
        graph_store_from_settings(MemorySettings(graph_backend="falkordb"))


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(("backend", "scheme"), [("falkordb", "falkor"), ("neo4j", "bolt")])
def test_a_server_that_is_away_is_a_typed_error(backend: str, scheme: str) -> None:
    url = f"{scheme}://127.0.0.1:{_closed_port()}"
    with pytest.raises(ProviderUnavailableError):
        open_graph_store(backend, url, timeout_seconds=2)
