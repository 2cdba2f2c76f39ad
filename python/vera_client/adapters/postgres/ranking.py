"""Feedback on hits and the calibration of the blend's weights, through the SQL API."""

from __future__ import annotations

from uuid import UUID

import psycopg

from vera_client.adapters.postgres.errors import translated_errors
from vera_client.adapters.postgres.hybrid import query_vector
from vera_client.adapters.postgres.queries import query
from vera_client.adapters.postgres.search import vector_text
from vera_client.domain.models import Calibration, Vote


def record_feedback(conn: psycopg.Connection, kind: str, item_id: UUID, text: str, vote: str) -> Vote:
    """Vote on a hit of a query, embedded as search embeds it (the SQL recomputes the hit's signals)."""
    vector, model = query_vector(conn, text)
    with translated_errors():
        row = conn.execute(
            query("record_feedback"),
            {
                "kind": kind,
                "item_id": item_id,
                "query": text,
                "vote": vote,
                "embedding": vector_text(vector) if vector is not None else None,
                "embedding_model": model,
            },
        ).fetchone()
    assert row is not None
    return Vote(feedback_id=row[0], group_id=row[1], signals=row[2], created=row[3])


def calibrate_weights(conn: psycopg.Connection, group: str, min_samples: int | None = None) -> Calibration:
    with translated_errors():
        row = conn.execute(
            query("calibrate_weights"), {"group": group, "min_samples": min_samples}
        ).fetchone()
    assert row is not None
    return Calibration(
        weight_set_id=row[0],
        persisted=row[1],
        sample_count=row[2],
        helpful=row[3],
        unhelpful=row[4],
        weights=row[5],
        separation=row[6],
    )
