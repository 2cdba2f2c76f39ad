"""The indexes Graphiti's own search reads, as Graphiti itself spells them per backend.

graphiti_core is imported when they are first asked for, not with the stores: importing
it pulls in its LLM clients (about 1.5 s here), which `vera graph check` and the other
commands that only read the graph do not need."""

from __future__ import annotations

from functools import cache

from vera_client.domain.graph import GraphBackendName


@cache
def graphiti_fulltext_indexes(backend: GraphBackendName) -> tuple[str, ...]:
    """Graphiti's full-text index statements (edge_name_and_fact, node_name_and_summary, ...)."""
    from graphiti_core.driver.driver import GraphProvider  # noqa: PLC0415 (see the module docstring)
    from graphiti_core.graph_queries import get_fulltext_indices  # noqa: PLC0415

    provider = GraphProvider.FALKORDB if backend == "falkordb" else GraphProvider.NEO4J
    return tuple(get_fulltext_indices(provider))


@cache
def graphiti_range_indexes(backend: GraphBackendName) -> tuple[str, ...]:
    """Graphiti's range index statements (uuid, group_id, names and times of each label)."""
    from graphiti_core.driver.driver import GraphProvider  # noqa: PLC0415 (see the module docstring)
    from graphiti_core.graph_queries import get_range_indices  # noqa: PLC0415

    provider = GraphProvider.FALKORDB if backend == "falkordb" else GraphProvider.NEO4J
    return tuple(get_range_indices(provider))
