"""Stage 3: the reranker's scores mixed into the blend's, min-max normalised
over the reranked head, on the top hits only."""

from __future__ import annotations

from uuid import uuid4

import pytest

from vera_client.api.hits import Hit, Signals
from vera_client.api.reranking import normalised, rerank_hits
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.ports import RerankScore


def _hit(rank: int, score: float) -> Hit:
    signals = Signals(relevance=1, authority=1, verification=1, recency=1, feedback=1, confidence=1)
    return Hit(rank=rank, kind="fact", item_id=uuid4(), group_id="o:x", text=f"hit {rank}", score=score,
               confidence=0.9, good_match=True, lexical_match=1.0, similarity=None, signals=signals,
               citation={})  # fmt: skip


def _scores(*values: float) -> list[RerankScore]:
    return [RerankScore(index=i, score=value) for i, value in enumerate(values)]


def test_the_head_blends_with_its_min_max_normalised_blend_scores() -> None:
    hits = [_hit(1, 0.9), _hit(2, 0.8), _hit(3, 0.7), _hit(4, 0.6)]
    reranked = rerank_hits(hits, _scores(0.0, 1.0, 0.5), weight=0.5)
    # normalised over the head: 0.9 -> 1, 0.8 -> 0.5, 0.7 -> 0; finals 0.5, 0.75, 0.25
    # (the raw blend would have given 0.45, 0.9, 0.6: hit 3 before hit 1)
    assert [h.text for h in reranked] == ["hit 2", "hit 1", "hit 3", "hit 4"]
    assert [h.score for h in reranked[:3]] == [pytest.approx(0.75), pytest.approx(0.5), pytest.approx(0.25)]
    assert [h.rank for h in reranked] == [1, 2, 3, 4]


def test_each_reranked_hit_keeps_its_blend_and_rerank_scores_and_the_rest_keep_their_place() -> None:
    hits = [_hit(1, 0.9), _hit(2, 0.8), _hit(3, 0.7), _hit(4, 0.69)]
    reranked = rerank_hits(hits, _scores(0.0, 0.0, 0.0), weight=0.9)
    assert [(h.text, h.blend_score, h.rerank_score) for h in reranked] == [
        ("hit 1", 0.9, 0.0), ("hit 2", 0.8, 0.0), ("hit 3", 0.7, 0.0), ("hit 4", None, None)]  # fmt: skip
    # below the head: its blend score and its place after the head, even above the head's finals
    assert reranked[3].score == 0.69 and reranked[3].rank == 4
    assert reranked[2].score == pytest.approx(0.0)


def test_equal_blend_scores_all_normalise_to_one_and_the_reranker_orders_them() -> None:
    hits = [_hit(1, 0.7), _hit(2, 0.7), _hit(3, 0.7)]
    reranked = rerank_hits(hits, _scores(0.2, 0.9, 0.5), weight=0.3)
    assert [h.text for h in reranked] == ["hit 2", "hit 3", "hit 1"]
    assert [h.score for h in reranked] == [pytest.approx(0.7 + 0.3 * r) for r in (0.9, 0.5, 0.2)]
    assert normalised([0.4]) == [1.0] and normalised([]) == []
    assert normalised([0.2, 0.6, 0.4]) == [0.0, 1.0, pytest.approx(0.5)]


def test_equal_finals_keep_the_blend_order() -> None:
    hits = [_hit(1, 0.9), _hit(2, 0.5), _hit(3, 0.1)]
    # finals 0.5 * 1 + 0.5 * 0 = 0.5, 0.5 * 0.5 + 0.5 * 0.5 = 0.5, 0.5 * 0 + 0.5 * 1 = 0.5
    reranked = rerank_hits(hits, _scores(0.0, 0.5, 1.0), weight=0.5)
    assert [h.text for h in reranked] == ["hit 1", "hit 2", "hit 3"]


def test_weight_zero_keeps_the_blend_order_weight_one_the_rerankers_and_bad_weights_are_refused() -> None:
    hits = [_hit(1, 0.9), _hit(2, 0.8), _hit(3, 0.75)]
    scores = _scores(0.0, 1.0, 0.5)
    assert [h.text for h in rerank_hits(hits, scores, weight=0.0)] == ["hit 1", "hit 2", "hit 3"]
    assert [h.text for h in rerank_hits(hits, scores, weight=1.0)] == ["hit 2", "hit 3", "hit 1"]
    for weight in (1.5, -0.1):
        with pytest.raises(InvalidArgumentError):
            rerank_hits(hits, scores, weight=weight)


def test_no_scores_leave_the_hits_as_they_were() -> None:
    hits = [_hit(1, 0.9), _hit(2, 0.8)]
    assert rerank_hits(hits, [], weight=0.5) == hits
