"""Runs a golden set through the real vera.search and scores it."""

from __future__ import annotations

from vera_client.adapters.postgres.errors import connect
from vera_client.adapters.postgres.hybrid import hybrid_search
from vera_client.adapters.postgres.search import authenticate
from vera_client.domain.golden import Evaluation, GoldenSet, evaluate, score_query


def evaluate_golden_set(dsn: str, api_key: str, golden: GoldenSet) -> Evaluation:
    """Each query in its own read-only transaction, as the key's principal; the query is
    embedded with its groups' pinned model when that model runs here (hybrid search)."""
    scores = []
    with connect(dsn) as conn:
        for golden_query in golden.queries:
            authenticate(conn, api_key)
            hits = hybrid_search(
                conn,
                golden_query.text,
                k=max(golden.k, 10),
                as_of=golden_query.as_of,
                groups=golden_query.groups,
            )
            conn.rollback()
            scores.append(score_query(golden_query, hits, golden.k))
    return evaluate(golden, scores)
