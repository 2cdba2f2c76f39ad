"""The context-pack assembler (vera_client.domain.context): packing in rank
order under a token budget, omissions with their reasons, conflicts side by
side, freshness warnings, the request's bounds, the stored JSON form, and the
real tokenizer that counts the budget."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from vera_client.adapters.tokenizers.minilm import MiniLMTokenCounter
from vera_client.api.hits import Hit, Signals
from vera_client.api.reads import ConflictValue
from vera_client.domain.context import (
    ABOVE_MAX_TIER,
    BELOW_MIN_AUTHORITY,
    ENDED,
    OVER_BUDGET,
    STALE,
    SUPERSEDED,
    assemble,
    conflicts_json,
    items_json,
    omitted_json,
    pack_from_row,
    signals_json,
    warnings_json,
)
from vera_client.domain.errors import InvalidArgumentError

NOW = datetime(2026, 6, 1, tzinfo=UTC)
GROUP = "o:0000000000000001"


def words(text: str) -> int:
    return len(text.split())


def hit(
    rank: int,
    n_words: int,
    *,
    kind: str = "fact",
    subject: str | None = "billing-api",
    predicate: str | None = "RUNS_ON",
    authority: float = 1.0,
    recency: float = 1.0,
    tier: int = 1,
    lifecycle: str = "published",
    valid_to: str | None = None,
) -> Hit:
    return Hit(
        rank=rank, kind=kind, item_id=uuid.uuid4(), group_id="o:0000000000000001",
        text=" ".join(["word"] * n_words), score=1.0 / rank, confidence=0.9, good_match=True,
        lexical_match=1.0, similarity=0.8,
        signals=Signals(relevance=1.0, authority=authority, verification=0.8, recency=recency, feedback=0.5,
                        confidence=1.0),
        citation={"tier": tier, "lifecycle": lifecycle, "valid_to": valid_to, "source": {"name": "cmdb"}},
        subject=subject if kind == "fact" else None, predicate=predicate if kind == "fact" else None,
        object="green" if kind == "fact" else None,
    )  # fmt: skip


def conflict(
    number: int, subject: str, predicate: str, obj: str, lifecycle: str = "published"
) -> ConflictValue:
    return ConflictValue(
        conflict=number, subject=subject, predicate=predicate, fact_id=uuid.uuid4(), group_id=GROUP,
        object=obj, lifecycle=lifecycle, tier=1 if lifecycle == "published" else 3,
        authority=1.0 if lifecycle == "published" else 0.7, verification="auto", source_id=None,
        source_name="cmdb", valid_from=NOW, recorded_at=NOW, proposed_for=None,
    )  # fmt: skip


def test_best_hits_first_until_the_budget_and_a_shorter_later_hit_fills_the_room() -> None:
    hits = [hit(1, 60), hit(2, 50), hit(3, 30), hit(4, 10), hit(5, 1)]
    pack = assemble(query="where does billing-api run", hits=hits, conflicts=[], count_tokens=words,
                    token_budget=100)  # fmt: skip
    assert [i.item_id for i in pack.items] == [hits[0].item_id, hits[2].item_id, hits[3].item_id]
    assert [i.position for i in pack.items] == [1, 2, 3]
    assert pack.tokens_used == 100
    assert [(o.item_id, o.reason, o.tokens) for o in pack.omitted] == [
        (hits[1].item_id, OVER_BUDGET, 50), (hits[4].item_id, OVER_BUDGET, 1),
    ]  # fmt: skip


def test_rank_order_not_list_order() -> None:
    hits = [hit(2, 10), hit(1, 10)]
    pack = assemble(query="q", hits=hits, conflicts=[], count_tokens=words, token_budget=100)
    assert [i.item_id for i in pack.items] == [hits[1].item_id, hits[0].item_id]


def test_authority_and_tier_filters_omit_with_their_reason() -> None:
    hits = [hit(1, 5, authority=0.4, tier=4), hit(2, 5, authority=0.7, tier=3), hit(3, 5)]
    pack = assemble(query="q", hits=hits, conflicts=[], count_tokens=words, token_budget=100,
                    min_authority=0.5, max_tier=2)  # fmt: skip
    assert [i.item_id for i in pack.items] == [hits[2].item_id]
    assert [(o.item_id, o.reason) for o in pack.omitted] == [
        (hits[0].item_id, BELOW_MIN_AUTHORITY), (hits[1].item_id, ABOVE_MAX_TIER),
    ]  # fmt: skip


def test_conflicts_of_packed_facts_only_side_by_side() -> None:
    hits = [hit(1, 5, subject="Billing-API"), hit(2, 500, subject="ledger-db"), hit(3, 5, kind="passage")]
    competing = [
        conflict(1, "billing-api", "RUNS_ON", "green"),
        conflict(1, "billing-api", "RUNS_ON", "purple", "pending_review"),
        conflict(2, "ledger-db", "RUNS_ON", "blue"),
        conflict(2, "ledger-db", "RUNS_ON", "red"),
    ]
    pack = assemble(query="q", hits=hits, conflicts=competing, count_tokens=words, token_budget=100)
    # ledger-db's fact did not fit: its conflict is not the pack's business
    assert [(c.subject, c.predicate, [v.object for v in c.values]) for c in pack.conflicts] == [
        ("billing-api", "RUNS_ON", ["green", "purple"]),
    ]  # fmt: skip
    assert [v.lifecycle for v in pack.conflicts[0].values] == ["published", "pending_review"]


def test_freshness_warnings() -> None:
    hits = [
        hit(1, 5, lifecycle="superseded", recency=0.0, valid_to="2026-03-01T00:00:00+00:00"),
        hit(2, 5, recency=0.0, valid_to="2026-04-01T00:00:00+00:00"),
        hit(3, 5, recency=0.1),
        hit(4, 5, recency=0.9),
    ]
    pack = assemble(query="q", hits=hits, conflicts=[], count_tokens=words, token_budget=100)
    assert [(w.item_id, w.reason) for w in pack.warnings] == [
        (hits[0].item_id, SUPERSEDED), (hits[1].item_id, ENDED), (hits[2].item_id, STALE),
    ]  # fmt: skip
    assert "2026-04-01" in pack.warnings[1].detail


@pytest.mark.parametrize(
    ("query", "budget", "min_authority", "max_tier", "words_in_message"),
    [
        ("", 1000, None, None, "query"),
        ("   ", 1000, None, None, "query"),
        ("x" * 8193, 1000, None, None, "8192"),
        ("q", 99, None, None, "token_budget"),
        ("q", 32_001, None, None, "token_budget"),
        ("q", 1000, 1.5, None, "min_authority"),
        ("q", 1000, -0.1, None, "min_authority"),
        ("q", 1000, None, 0, "max_tier"),
        ("q", 1000, None, 5, "max_tier"),
    ],
)
def test_bad_requests_are_refused(
    query: str, budget: int, min_authority: float | None, max_tier: int | None, words_in_message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=words_in_message):
        assemble(query=query, hits=[], conflicts=[], count_tokens=words, token_budget=budget,
                 min_authority=min_authority, max_tier=max_tier)  # fmt: skip


def test_the_bounds_themselves_are_accepted() -> None:
    for budget in (100, 32_000):
        assert (
            assemble(query="x" * 8192, hits=[], conflicts=[], count_tokens=words, token_budget=budget).items
            == []
        )


def test_the_stored_form_reads_back_as_the_same_pack() -> None:
    hits = [
        hit(1, 5, lifecycle="superseded", recency=0.0),
        hit(2, 5, kind="passage"),
        hit(3, 500),
    ]
    pack = assemble(query="q", hits=hits, as_of=NOW, groups=["o:0000000000000001"],
                    conflicts=[conflict(1, "billing-api", "RUNS_ON", "green"),
                               conflict(1, "billing-api", "RUNS_ON", "red")],
                    count_tokens=words, token_budget=100, min_authority=0.1, max_tier=4)  # fmt: skip
    stored_items: list[dict[str, Any]] = [
        {**item, "position": position, "group_id": h.group_id, "text": h.text, "citation": h.citation,
         "erased": False}
        for position, (item, h) in enumerate(zip(items_json(pack), hits, strict=False), start=1)
    ]  # fmt: skip
    row = {
        "pack_id": uuid.uuid4(), "created_at": NOW, "searched_groups": ["o:0000000000000001"],
        "request": {"query": "q", "token_budget": 100, "as_of": NOW.isoformat(), "scopes": [GROUP],
                    "min_authority": 0.1, "max_tier": 4},
        "weights": None, "assembler_version": pack.assembler_version, "items": stored_items,
        "omitted": omitted_json(pack), "conflicts": conflicts_json(pack), "warnings": warnings_json(pack),
    }  # fmt: skip
    read = pack_from_row(row)
    assert read.items == pack.items
    assert (
        read.omitted == pack.omitted and read.conflicts == pack.conflicts and read.warnings == pack.warnings
    )
    assert (read.query, read.token_budget, read.as_of, read.groups, read.min_authority, read.max_tier) == (
        "q", 100, NOW, ["o:0000000000000001"], 0.1, 4,
    )  # fmt: skip
    assert signals_json(pack.items[0].signals)["recency"] == 0.0


def test_the_budget_is_counted_by_a_real_tokenizer() -> None:
    counter = MiniLMTokenCounter()
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    # word pieces: a rare word splits into several, so tokens exceed words
    assert counter.count("billing-api runs on k8s-hanoi-2") > 4
    assert counter.count("Dịch vụ thanh toán chạy trên cụm xanh") >= 8
    long_text = "word " * 2000
    assert counter.count(long_text) == 2000  # no truncation at the model's 256 tokens
