"""A hit as the metadata a framework's document carries: plain JSON values only (ids as text),
so that documents serialise, and the same keys in every framework."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from vera_client.api.hits import Hit


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """rank, score, kind, item_id, group_id, the triple of a fact, the citation and the seven
    signals of the blend (and the reranker's scores when one ran)."""
    return {
        "rank": hit.rank,
        "score": hit.score,
        "kind": hit.kind,
        "item_id": str(hit.item_id),
        "group_id": hit.group_id,
        "subject": hit.subject,
        "predicate": hit.predicate,
        "object": hit.object,
        "citation": hit.citation,
        "signals": asdict(hit.signals),
        "blend_score": hit.blend_score,
        "rerank_score": hit.rerank_score,
    }
