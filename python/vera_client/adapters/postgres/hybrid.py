"""Search as applications want it: the query is embedded with the model its
groups pinned (when that model runs here), then vera.search fuses both
halves; without such a model the search is lexical only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import psycopg

from vera_client.adapters.embedders import local_embedder_for
from vera_client.adapters.postgres.search import pinned_models, search
from vera_client.domain.models import Hit


def query_vector(
    conn: psycopg.Connection, text: str, groups: Sequence[str] | None = None
) -> tuple[list[float] | None, str | None]:
    """The query's vector by the first pinned model of the searched groups that runs here."""
    for model, dim in pinned_models(conn, groups):
        embedder = local_embedder_for(model)
        if embedder is not None and embedder.dim == dim and text.strip():
            return embedder.embed([text])[0], model
    return None, None


def hybrid_search(
    conn: psycopg.Connection,
    text: str,
    *,
    k: int = 10,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
) -> list[Hit]:
    """vera.search with the query embedded by the first pinned model that runs locally."""
    vector, model = query_vector(conn, text, groups)
    return search(conn, text, embedding=vector, embedding_model=model, k=k, as_of=as_of, groups=groups)
