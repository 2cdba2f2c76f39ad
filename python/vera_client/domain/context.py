"""Context packs: the best hits of a search that fit a token budget, ready to
hand to a model, with what was left out and why, competing values side by
side and warnings about facts that may no longer hold.

Pure logic: given ranked hits, the conflicts of the groups searched and a
token counter, `assemble` decides; vera_client.core runs the search, counts
with a real tokenizer (adapters/tokenizers) and stores the pack
(vera.store_context_pack). The JSON forms below are what the pack's row
keeps (omitted, conflicts, warnings) and what `pack_from_row` reads back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any
from uuid import UUID

from vera_client.api.hits import SIGNAL_NAMES, Hit, Signals
from vera_client.api.reads import ConflictValue
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.time_scopes import TimeRange

ASSEMBLER_VERSION = "vera-context/1"
MIN_TOKEN_BUDGET = 100
MAX_TOKEN_BUDGET = 32_000
MAX_QUERY_CHARS = 8_192
# recency is exp(-ln2 * age / half_life): below 1/8 a fact is older than three half-lives
# (90 days with the default 30-day half-life) since its source last stated it
STALE_RECENCY = 0.125

# why an item was left out
OVER_BUDGET = "over_budget"
BELOW_MIN_AUTHORITY = "below_min_authority"
ABOVE_MAX_TIER = "above_max_tier"
# why an item carries a warning
SUPERSEDED = "superseded"
ENDED = "ended"
STALE = "stale"


TokenCounter = Callable[[str], int]


@dataclass(frozen=True, kw_only=True, slots=True)
class PackItem:
    """One item of a pack, in the pack's order (position from 1)."""

    position: int
    kind: str = field(metadata={"description": "fact or passage"})
    item_id: UUID
    group_id: str
    text: str = field(metadata={"description": "empty once the source it came from was erased"})
    tokens: int
    citation: dict[str, Any]
    signals: Signals
    erased: bool = field(
        default=False, metadata={"description": "the source it came from was erased since the pack was made"}
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Omission:
    """A hit left out of the pack, and why (over_budget, below_min_authority, above_max_tier)."""

    kind: str
    item_id: UUID
    reason: str = field(metadata={"description": "over_budget, below_min_authority or above_max_tier"})
    tokens: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ConflictingValue:
    fact_id: UUID
    group_id: str
    object: str
    lifecycle: str
    tier: int
    authority: float
    source_name: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ConflictSet:
    """Competing values of one subject and predicate that the pack's facts are about."""

    subject: str
    predicate: str
    values: list[ConflictingValue]


@dataclass(frozen=True, kw_only=True, slots=True)
class FreshnessWarning:
    """A packed item that may no longer hold: superseded, ended (validity over) or stale (not restated)."""

    kind: str
    item_id: UUID
    reason: str = field(metadata={"description": "superseded, ended or stale"})
    detail: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ContextPack:
    """A context pack: the request, the items in order, and what the model should know about them."""

    query: str
    token_budget: int
    as_of: datetime | None
    groups: list[str] | None
    min_authority: float | None
    max_tier: int | None
    assembler_version: str
    items: list[PackItem]
    omitted: list[Omission]
    conflicts: list[ConflictSet]
    warnings: list[FreshnessWarning]
    weights: dict[str, Any] | None = None
    # the period the pack's search asked about (passed, or stated by the query's words); None: none
    during: TimeRange | None = None
    # set once stored (vera.store_context_pack)
    pack_id: UUID | None = None
    created_at: datetime | None = None
    searched_groups: list[str] = field(default_factory=list)

    @property
    def tokens_used(self) -> int:
        return sum(item.tokens for item in self.items)


def check_request(query: str, token_budget: int, min_authority: float | None, max_tier: int | None) -> None:
    """Refuse a request vera.store_context_pack would refuse, before searching."""
    if not query or not query.strip():
        raise InvalidArgumentError("a context pack needs a query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgumentError(f"query is {len(query)} characters; at most {MAX_QUERY_CHARS}")
    if not MIN_TOKEN_BUDGET <= token_budget <= MAX_TOKEN_BUDGET:
        raise InvalidArgumentError(
            f"token_budget must be between {MIN_TOKEN_BUDGET} and {MAX_TOKEN_BUDGET}, not {token_budget}"
        )
    if min_authority is not None and not 0.0 <= min_authority <= 1.0:
        raise InvalidArgumentError(f"min_authority must be between 0 and 1, not {min_authority}")
    if max_tier is not None and not 1 <= max_tier <= 4:
        raise InvalidArgumentError(f"max_tier must be between 1 and 4, not {max_tier}")


def _key(subject: str | None, predicate: str | None) -> tuple[str, str]:
    return (subject or "").casefold().strip(), (predicate or "").upper()


def _tier(hit: Hit) -> int | None:
    tier = hit.citation.get("tier")
    return tier if isinstance(tier, int) else None


def assemble(
    *,
    query: str,
    hits: Sequence[Hit],
    conflicts: Sequence[ConflictValue],
    count_tokens: TokenCounter,
    token_budget: int,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
    min_authority: float | None = None,
    max_tier: int | None = None,
) -> ContextPack:
    """Pack the hits in rank order: each that passes the filters and still fits the budget goes in
    (a later, shorter hit may fill room a long one left), the rest are omitted with their reason.
    Conflicts: the sets of competing values whose subject and predicate a packed fact states.
    Warnings: packed items that are superseded, whose validity has ended, or that are stale."""
    check_request(query, token_budget, min_authority, max_tier)
    items: list[PackItem] = []
    omitted: list[Omission] = []
    used = 0
    for hit in sorted(hits, key=lambda h: h.rank):
        tier = _tier(hit)
        if min_authority is not None and hit.signals.authority < min_authority:
            omitted.append(Omission(kind=hit.kind, item_id=hit.item_id, reason=BELOW_MIN_AUTHORITY))
            continue
        if max_tier is not None and tier is not None and tier > max_tier:
            omitted.append(Omission(kind=hit.kind, item_id=hit.item_id, reason=ABOVE_MAX_TIER))
            continue
        tokens = count_tokens(hit.text)
        if used + tokens > token_budget:
            omitted.append(Omission(kind=hit.kind, item_id=hit.item_id, reason=OVER_BUDGET, tokens=tokens))
            continue
        used += tokens
        items.append(
            PackItem(
                position=len(items) + 1,
                kind=hit.kind,
                item_id=hit.item_id,
                group_id=hit.group_id,
                text=hit.text,
                tokens=tokens,
                citation=dict(hit.citation),
                signals=hit.signals,
            )
        )
    packed = {item.item_id for item in items}
    packed_facts = {_key(h.subject, h.predicate) for h in hits if h.kind == "fact" and h.item_id in packed}
    return ContextPack(
        query=query,
        token_budget=token_budget,
        as_of=as_of,
        groups=list(groups) if groups is not None else None,
        min_authority=min_authority,
        max_tier=max_tier,
        assembler_version=ASSEMBLER_VERSION,
        items=items,
        omitted=omitted,
        conflicts=_conflict_sets(conflicts, packed_facts),
        warnings=[w for item in items for w in _warnings(item)],
    )


def _conflict_sets(conflicts: Sequence[ConflictValue], wanted: set[tuple[str, str]]) -> list[ConflictSet]:
    by_number: dict[int, list[ConflictValue]] = {}
    for value in conflicts:
        by_number.setdefault(value.conflict, []).append(value)
    sets = []
    for number in sorted(by_number):
        values = by_number[number]
        first = values[0]
        if _key(first.subject, first.predicate) not in wanted:
            continue
        sets.append(
            ConflictSet(
                subject=first.subject,
                predicate=first.predicate,
                values=[
                    ConflictingValue(
                        fact_id=v.fact_id,
                        group_id=v.group_id,
                        object=v.object,
                        lifecycle=v.lifecycle,
                        tier=v.tier,
                        authority=v.authority,
                        source_name=v.source_name,
                    )
                    for v in values
                ],
            )
        )
    return sets


def _warnings(item: PackItem) -> list[FreshnessWarning]:
    lifecycle = item.citation.get("lifecycle")
    if lifecycle == "superseded":
        reason, detail = SUPERSEDED, "a newer value replaced this one"
    elif item.citation.get("valid_to") is not None and item.signals.recency == 0:
        reason, detail = ENDED, f"valid until {item.citation['valid_to']}"
    elif item.signals.recency < STALE_RECENCY:
        reason, detail = STALE, "its source has not stated it for over three half-lives of recency"
    else:
        return []
    return [FreshnessWarning(kind=item.kind, item_id=item.item_id, reason=reason, detail=detail)]


# --- the stored form (vera.store_context_pack / vera.get_context_pack) ---------------------------------


def signals_json(signals: Signals) -> dict[str, float | None]:
    return {name: _number(getattr(signals, name)) for name in SIGNAL_NAMES}


def _number(value: float | None) -> float | None:
    return float(value) if value is not None else None  # period: None when no period was asked


def _signals(stored: dict[str, Any]) -> Signals:
    """A stored item's signals (a pack stored before the period signal has none)."""
    six = {name: float(stored[name]) for name in SIGNAL_NAMES if name != "period"}
    return Signals(**six, period=_number(stored.get("period")))


def items_json(pack: ContextPack) -> list[dict[str, Any]]:
    """The items as store_context_pack takes them (it reads text and citation itself)."""
    return [
        {"kind": i.kind, "item_id": str(i.item_id), "tokens": i.tokens, "signals": signals_json(i.signals)}
        for i in pack.items
    ]


def omitted_json(pack: ContextPack) -> list[dict[str, Any]]:
    return [
        {"kind": o.kind, "item_id": str(o.item_id), "reason": o.reason, "tokens": o.tokens}
        for o in pack.omitted
    ]


def conflicts_json(pack: ContextPack) -> list[dict[str, Any]]:
    return [
        {
            "subject": c.subject,
            "predicate": c.predicate,
            "values": [
                {
                    "fact_id": str(v.fact_id),
                    "group_id": v.group_id,
                    "object": v.object,
                    "lifecycle": v.lifecycle,
                    "tier": v.tier,
                    "authority": v.authority,
                    "source_name": v.source_name,
                }
                for v in c.values
            ],
        }
        for c in pack.conflicts
    ]


def during_json(pack: ContextPack) -> dict[str, Any] | None:
    """The period asked about as store_context_pack keeps it in the pack's request."""
    period = pack.during
    if period is None:
        return None
    start, end = (day.isoformat() if day is not None else None for day in (period.start, period.end))
    return {"start": start, "end": end, "text": period.text}


def _during_of(stored: Mapping[str, Any] | None) -> TimeRange | None:
    if not stored:  # a pack stored before packs kept their period asked about none
        return None
    start, end = (date.fromisoformat(stored[key]) if stored.get(key) else None for key in ("start", "end"))
    return TimeRange(start, end, stored["text"], 0)


def warnings_json(pack: ContextPack) -> list[dict[str, Any]]:
    return [
        {"kind": w.kind, "item_id": str(w.item_id), "reason": w.reason, "detail": w.detail}
        for w in pack.warnings
    ]


def pack_from_row(values: Mapping[str, Any]) -> ContextPack:
    """A pack as vera.get_context_pack returns it."""
    request = values["request"]
    as_of = request.get("as_of")
    return ContextPack(
        pack_id=values["pack_id"],
        created_at=values["created_at"],
        searched_groups=list(values["searched_groups"]),
        query=request["query"],
        token_budget=int(request["token_budget"]),
        as_of=datetime.fromisoformat(as_of) if as_of else None,
        groups=request.get("scopes"),
        min_authority=request.get("min_authority"),
        max_tier=request.get("max_tier"),
        during=_during_of(request.get("during")),
        weights=values["weights"],
        assembler_version=values["assembler_version"],
        items=[
            PackItem(
                position=i["position"],
                kind=i["kind"],
                item_id=UUID(i["item_id"]),
                group_id=i["group_id"],
                text=i["text"],
                tokens=i["tokens"],
                citation=i["citation"],
                signals=_signals(i["signals"]),
                erased=i["erased"],
            )
            for i in values["items"]
        ],
        omitted=[
            Omission(kind=o["kind"], item_id=UUID(o["item_id"]), reason=o["reason"], tokens=o.get("tokens"))
            for o in values["omitted"]
        ],
        conflicts=[
            ConflictSet(
                subject=c["subject"],
                predicate=c["predicate"],
                values=[
                    ConflictingValue(
                        fact_id=UUID(v["fact_id"]),
                        group_id=v["group_id"],
                        object=v["object"],
                        lifecycle=v["lifecycle"],
                        tier=v["tier"],
                        authority=v["authority"],
                        source_name=v.get("source_name"),
                    )
                    for v in c["values"]
                ],
            )
            for c in values["conflicts"]
        ],
        warnings=[
            FreshnessWarning(
                kind=w["kind"], item_id=UUID(w["item_id"]), reason=w["reason"], detail=w["detail"]
            )
            for w in values["warnings"]
        ],
    )
