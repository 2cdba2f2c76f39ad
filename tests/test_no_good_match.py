"""Hits.no_good_match: a result says that nothing known answers when no hit is a good match
(none at all, or every hit's confidence below vera.good_match_threshold(); SQL decides each
hit's good_match, the client only reads it)."""

from __future__ import annotations

from uuid import uuid4

from vera_client.api.hits import Hit, Hits, Signals

SIGNALS = Signals(relevance=0.2, authority=1, verification=1, recency=1, feedback=0.5, confidence=1)


def _hit(rank: int, confidence: float, good: bool) -> Hit:
    return Hit(rank=rank, kind="fact", item_id=uuid4(), group_id="o:x", text=f"hit {rank}", score=0.5,
               confidence=confidence, good_match=good, lexical_match=0.1, similarity=0.2, signals=SIGNALS,
               citation={})  # fmt: skip


def test_no_hit_at_all_is_no_good_match() -> None:
    assert Hits([]).no_good_match


def test_only_weak_hits_are_no_good_match() -> None:
    assert Hits([_hit(1, 0.31, False), _hit(2, 0.12, False)]).no_good_match


def test_one_good_hit_anywhere_is_a_good_match() -> None:
    # a reranker may move the good hit down: it still answers
    assert not Hits([_hit(1, 0.31, False), _hit(2, 0.74, True)]).no_good_match
