"""Stage 3 of a search: an optional reranker (a cross-encoder or an LLM scorer) re-scores the
best hits of the blend.

Only the top N (the head) are sent (rerankers are slow and priced per token). The blend's
scores are first min-max normalised over the head, so that both terms span [0, 1] as the design
says (a blend score is a weighted sum that rarely leaves 0.4-0.9, while a reranker uses its
whole range): the final score is (1 - w) * normalised blend + w * rerank, so the blend's signals
(authority, validity, feedback) still count, and the head is re-sorted among itself. Hits below
the head keep their blend score and their place after it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from vera_client.api.hits import Hit
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.ports import RerankScore


def normalised(scores: Sequence[float]) -> list[float]:
    """Min-max over the scores: the lowest 0, the highest 1; all 1.0 when they are all equal
    (nothing separates them, so the reranker alone orders them, as with one hit)."""
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    if high <= low:
        return [1.0 for _ in scores]
    return [(score - low) / (high - low) for score in scores]


def rerank_hits(hits: Sequence[Hit], scores: Sequence[RerankScore], *, weight: float) -> list[Hit]:
    """hits (best first, blend order) with the first len(scores) re-scored and re-sorted; ranks renumbered.

    Each re-scored hit keeps its blend score (blend_score, as the blend gave it) and the
    reranker's (rerank_score); its score becomes (1 - weight) * min-max normalised blend
    + weight * rerank. Equal finals keep the blend's order (a stable sort).
    """
    if not 0 <= weight <= 1:
        raise InvalidArgumentError(f"the reranker weight must be between 0 and 1, not {weight}")
    by_index = {score.index: score.score for score in scores}
    head = hits[: len(scores)]
    blends = normalised([hit.score for hit in head])
    rescored = [
        replace(hit, score=(1 - weight) * blend + weight * by_index[i], blend_score=hit.score,
                rerank_score=by_index[i])
        for i, (hit, blend) in enumerate(zip(head, blends, strict=True))
    ]  # fmt: skip
    ordered = sorted(rescored, key=lambda hit: -hit.score) + list(hits[len(scores) :])
    return [replace(hit, rank=rank) for rank, hit in enumerate(ordered, start=1)]
