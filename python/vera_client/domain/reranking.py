"""Stage 3 of search: an optional reranker (a cross-encoder or an LLM scorer)
re-scores the best hits of the blend. Only the top N are sent (rerankers are
slow and priced per token); their final score is (1 - w) * blend + w * rerank,
so the blend's signals (authority, validity, feedback) still count, and they
are re-sorted among themselves. Hits below the top N keep their blend score and
their place after them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.models import Hit
from vera_client.domain.ports import RerankScore


def rerank_hits(hits: Sequence[Hit], scores: Sequence[RerankScore], *, weight: float) -> list[Hit]:
    """hits (best first, blend order) with the first len(scores) re-scored and re-sorted; ranks renumbered."""
    if not 0 <= weight <= 1:
        raise InvalidArgumentError(f"the reranker weight must be between 0 and 1, not {weight}")
    by_index = {score.index: score.score for score in scores}
    head = [
        replace(hit, score=(1 - weight) * hit.score + weight * by_index[i], blend_score=hit.score,
                rerank_score=by_index[i])
        for i, hit in enumerate(hits[: len(scores)])
    ]  # fmt: skip
    # a stable sort: equal finals keep the blend's order
    ordered = sorted(head, key=lambda hit: -hit.score) + list(hits[len(scores) :])
    return [replace(hit, rank=rank) for rank, hit in enumerate(ordered, start=1)]
