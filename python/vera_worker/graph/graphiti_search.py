"""Graphiti itself over the graph VERA projected: a Graphiti instance on the same server,
with VERA's embedder behind its EmbedderClient and no hosted model. Projection needs no
model call (facts arrive extracted and embedded), so the LLM and cross-encoder slots
hold clients that refuse to be called: nothing reaches a hosted API by accident.

Search a group as Graphiti knows it: `group_ids=[graph_group_id(group_id)]`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from vera_client.domain.errors import ConfigurationError, ProviderError
from vera_client.domain.ports import Embedder
from vera_worker.graph.graphiti_embedder import GraphitiEmbedder

if TYPE_CHECKING:
    from graphiti_core import Graphiti

# Graphiti reports usage to a third party unless told not to; VERA never lets it.
TELEMETRY_VARIABLE = "GRAPHITI_TELEMETRY_ENABLED"


class ModelCallRefusedError(ProviderError):
    """Graphiti asked for a model call that VERA's projection does not make."""


def open_graphiti(
    backend: str,
    url: str,
    embedder: Embedder,
    *,
    user: str | None = None,
    password: str | None = None,
    database: str = "neo4j",
) -> Graphiti:
    """A Graphiti on the graph server at url (close it with `await graphiti.close()`)."""
    os.environ[TELEMETRY_VARIABLE] = "false"
    from graphiti_core import Graphiti  # noqa: PLC0415 (graphiti_schema.py says why it loads late)
    from graphiti_core.cross_encoder.client import CrossEncoderClient  # noqa: PLC0415
    from graphiti_core.driver.driver import GraphDriver  # noqa: PLC0415
    from graphiti_core.llm_client.client import LLMClient  # noqa: PLC0415

    class RefusingLLMClient(LLMClient):
        async def _generate_response(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            raise ModelCallRefusedError("VERA's Graphiti has no LLM: facts are projected already extracted")

    class RefusingCrossEncoder(CrossEncoderClient):
        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            raise ModelCallRefusedError("VERA's Graphiti has no cross-encoder: use a reranking search config")

    driver: GraphDriver
    if backend == "neo4j":
        from graphiti_core.driver.neo4j_driver import Neo4jDriver  # noqa: PLC0415

        driver = Neo4jDriver(url, user, password, database=database)
    elif backend == "falkordb":
        from graphiti_core.driver.falkordb_driver import FalkorDriver  # noqa: PLC0415

        parts = urlsplit(url)
        if parts.scheme not in {"falkor", "redis"} or not parts.hostname:
            raise ConfigurationError(f"Graphiti reaches FalkorDB by falkor://host:port, not {url!r}")
        driver = FalkorDriver(
            host=parts.hostname,
            port=parts.port or 6379,
            username=user or parts.username,
            password=password or parts.password,
        )
    else:
        raise ConfigurationError(f"unknown graph backend {backend!r}: neo4j or falkordb")
    return Graphiti(
        graph_driver=driver,
        llm_client=RefusingLLMClient(None),
        embedder=GraphitiEmbedder(embedder),
        cross_encoder=RefusingCrossEncoder(),
    )
