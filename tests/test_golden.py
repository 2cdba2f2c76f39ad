"""Golden-set scoring (vera_client.domain.golden): the figures on hand-made rankings."""

from __future__ import annotations

import math
from pathlib import Path
from uuid import uuid4

import pytest

from vera_client.api.hits import Hit, Signals
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.golden import GoldenQuery, GoldenSet, evaluate, load_golden_set, score_query

SIGNALS = Signals(relevance=1, authority=1, verification=1, recency=1, feedback=0.5, confidence=1)


def _hits(*texts: str) -> list[Hit]:
    return [
        Hit(
            rank=i,
            kind="fact",
            item_id=uuid4(),
            group_id="o:x",
            text=t,
            score=1.0,
            confidence=0.9,
            good_match=True,
            lexical_match=1.0,
            similarity=None,
            signals=SIGNALS,
            citation={},
        )
        for i, t in enumerate(texts, start=1)
    ]


def test_first_right_hit_gives_reciprocal_rank_and_ndcg() -> None:
    query = GoldenQuery(text="q", expect=("Alpha",))
    score = score_query(query, _hits("beta", "ALPHA team", "alpha again"), k=5)
    assert (score.first_right, score.hit, score.reciprocal_rank) == (2, 1.0, 0.5)
    # one expected answer, found at rank 2 (a second mention earns nothing)
    assert score.ndcg_at_10 == pytest.approx(1 / math.log2(3))


def test_each_expected_answer_counts_once_for_ndcg() -> None:
    query = GoldenQuery(text="q", expect=("owner", "database"))
    score = score_query(query, _hits("owner and database", "database"), k=5)
    ideal = 1 + 1 / math.log2(3)
    assert score.ndcg_at_10 == pytest.approx((1 + 1 / math.log2(3)) / ideal)


def test_a_right_hit_beyond_k_is_a_miss_for_hit_and_mrr() -> None:
    query = GoldenQuery(text="q", expect=("x",))
    score = score_query(query, _hits("a", "b", "x"), k=2)
    assert (score.hit, score.reciprocal_rank) == (0.0, 0.0)
    assert score.ndcg_at_10 > 0


def test_a_rejected_answer_above_the_right_one_is_a_miss() -> None:
    query = GoldenQuery(text="q", expect=("k8s",), reject=("heroku",))
    assert score_query(query, _hits("heroku", "k8s"), k=5).hit == 0.0
    assert score_query(query, _hits("k8s", "heroku"), k=5).hit == 1.0


def test_thresholds_name_what_failed() -> None:
    golden = GoldenSet(queries=(), thresholds={"mrr": 0.9, "hit_at_k": 0.5})
    scores = [score_query(GoldenQuery(text="q", expect=("x",)), _hits("a", "x"), k=5)]
    result = evaluate(golden, scores)
    assert result.figures["mrr"] == 0.5
    assert result.failures == ("mrr 0.500 < 0.900",)
    assert not result.passed


def test_as_of_needs_a_time_zone(tmp_path: Path) -> None:
    path = tmp_path / "g.toml"
    path.write_text(
        '[[query]]\ntext = "q"\nexpect = ["x"]\nas_of = "2026-06-01T00:00:00"\n', encoding="utf-8"
    )
    with pytest.raises(InvalidArgumentError, match="needs a time zone"):
        load_golden_set(path)
    path.write_text('[[query]]\ntext = "q"\nexpect = ["x"]\nas_of = 2026-06-01T00:00:00Z\n', encoding="utf-8")
    assert load_golden_set(path).queries[0].as_of is not None
