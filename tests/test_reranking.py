"""Stage 3: the reranker's scores mixed into the blend's, on the top hits only."""

from __future__ import annotations

from uuid import uuid4

import pytest

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.models import Hit, Signals
from vera_client.domain.ports import RerankScore
from vera_client.domain.reranking import rerank_hits


def _hit(rank: int, score: float) -> Hit:
    signals = Signals(relevance=1, authority=1, verification=1, recency=1, feedback=1, confidence=1)
    return Hit(rank=rank, kind="fact", item_id=uuid4(), group_id="o:x", text=f"hit {rank}", score=score,
               signals=signals, citation={})  # fmt: skip


def test_the_top_hits_are_rescored_and_resorted_and_the_rest_keep_their_place() -> None:
    hits = [_hit(1, 0.9), _hit(2, 0.8), _hit(3, 0.7), _hit(4, 0.6)]
    scores = [
        RerankScore(index=0, score=0.0),
        RerankScore(index=1, score=1.0),
        RerankScore(index=2, score=0.5),
    ]
    reranked = rerank_hits(hits, scores, weight=0.5)
    assert [h.text for h in reranked] == ["hit 2", "hit 3", "hit 1", "hit 4"]
    assert [h.rank for h in reranked] == [1, 2, 3, 4]
    assert reranked[0].score == pytest.approx(0.9) and reranked[0].blend_score == 0.8
    assert reranked[0].rerank_score == 1.0
    assert reranked[3].score == 0.6 and reranked[3].rerank_score is None


def test_weight_zero_keeps_the_blend_order_and_bad_weights_are_refused() -> None:
    hits = [_hit(1, 0.9), _hit(2, 0.8)]
    scores = [RerankScore(index=0, score=0.0), RerankScore(index=1, score=1.0)]
    assert [h.text for h in rerank_hits(hits, scores, weight=0.0)] == ["hit 1", "hit 2"]
    with pytest.raises(InvalidArgumentError):
        rerank_hits(hits, scores, weight=1.5)
