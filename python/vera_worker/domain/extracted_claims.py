"""A model's extraction answer, validated into claims the SQL API accepts.

The answer is untrusted data. Each claim is kept only when every field is known
and well-typed, its predicate has an UPPER_SNAKE form, and its evidence offsets
select exactly the quoted evidence in the passage; the rest are dropped and
counted. At most `max_claims` are kept, so a model that answers with 10,000
claims for a paragraph costs a bounded amount of work and storage.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from vera_worker.domain.prompts import CLAIM_FIELDS

_CLAIM_FIELDS = frozenset(CLAIM_FIELDS)
_UPPER_SNAKE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_MAX_SUBJECT, _MAX_OBJECT, _MAX_PREDICATE = 500, 2000, 100
# how many dropped claims are described in the log line; the rest are only counted
_REASONS_KEPT = 5


@dataclass(slots=True)
class Extraction:
    """The claims kept (in the SQL API's claim shape, without chunk or vectors) and what was dropped."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0
    reasons: list[str] = field(default_factory=list)
    proposed_predicates: list[str] = field(default_factory=list)

    def drop(self, index: int, reason: str) -> None:
        self.dropped += 1
        if len(self.reasons) < _REASONS_KEPT:
            self.reasons.append(f"claim {index}: {reason}")

    @property
    def detail(self) -> str | None:
        """One line for the log and the extraction run's record."""
        if not self.dropped and not self.proposed_predicates:
            return None
        parts = []
        if self.dropped:
            parts.append(f"{self.dropped} dropped ({'; '.join(self.reasons)})")
        if self.proposed_predicates:
            parts.append(f"proposed predicates: {', '.join(self.proposed_predicates)}")
        return "; ".join(parts)[:1000]


def upper_snake(name: str) -> str | None:
    """name in UPPER_SNAKE (ownedBy, owned by, owned-by -> OWNED_BY), or None when it has none."""
    words = _SEPARATORS.sub("_", _CAMEL.sub("_", name.strip())).strip("_").upper()
    if not words or len(words) > _MAX_PREDICATE or not _UPPER_SNAKE.match(words):
        return None
    return words


def validate_extraction(
    answer: Mapping[str, Any], passage: str, *, known_predicates: Collection[str], max_claims: int
) -> Extraction:
    """The answer's valid claims over passage; raises ValueError when the answer has no claims list."""
    raw = answer.get("claims")
    if not isinstance(raw, list):
        raise ValueError("the answer has no list of claims")
    result = Extraction()
    if len(raw) > max_claims:
        # counted, not read: a runaway answer costs no more than max_claims claims
        result.dropped += len(raw) - max_claims
        result.reasons.append(f"{len(raw)} claims, over the limit of {max_claims}: the rest were not read")
        raw = raw[:max_claims]
    proposed: set[str] = set()
    for index, item in enumerate(raw):
        claim, reason = _claim(item, passage)
        if claim is None:
            result.drop(index, reason)
            continue
        if claim["predicate"] not in known_predicates:
            # a new predicate is proposed, never added silently: the claim goes in as a proposal
            # (verification pending), which a reviewer accepts or rejects with its predicate
            claim["verification"] = "pending"
            proposed.add(claim["predicate"])
        result.claims.append(claim)
    result.proposed_predicates = sorted(proposed)
    return result


def _claim(item: Any, passage: str) -> tuple[dict[str, Any] | None, str]:  # noqa: PLR0911 (one return per check)
    if not isinstance(item, dict):
        return None, "not an object"
    unknown = sorted(set(item) - _CLAIM_FIELDS)
    if unknown:
        return None, f"unknown fields {', '.join(unknown[:3])}"[:200]
    subject, obj, predicate = item.get("subject"), item.get("object"), item.get("predicate")
    if not (isinstance(subject, str) and subject.strip() and len(subject) <= _MAX_SUBJECT):
        return None, "subject is not a name of 1 to 500 characters"
    if not (isinstance(obj, str) and obj.strip() and len(obj) <= _MAX_OBJECT):
        return None, "object is not a text of 1 to 2000 characters"
    normalized = upper_snake(predicate) if isinstance(predicate, str) else None
    if normalized is None:
        return None, "predicate has no UPPER_SNAKE form"
    confidence = item.get("confidence")
    if not _is_number(confidence) or not 0 <= confidence <= 1:
        return None, "confidence is not a number from 0 to 1"
    is_entity = item.get("object_is_entity", False)
    if not isinstance(is_entity, bool):
        return None, "object_is_entity is not a boolean"
    valid_from = item.get("valid_from")
    if valid_from is not None:
        valid_from = _iso_time(valid_from)
        if valid_from is None:
            return None, "valid_from is not an ISO 8601 date of the years 1 to 9999"
    start, end, evidence = item.get("evidence_start"), item.get("evidence_end"), item.get("evidence")
    if not (_is_int(start) and _is_int(end) and 0 <= start < end <= len(passage)):
        return None, "evidence offsets are not a span of the passage"
    if not isinstance(evidence, str) or passage[start:end] != evidence:
        return None, "the evidence offsets do not select the quoted evidence"
    claim: dict[str, Any] = {
        "subject": subject.strip(),
        "predicate": normalized,
        "object": obj.strip(),
        "object_is_entity": is_entity,
        "confidence": round(float(confidence), 4),
        "evidence_start": start,
        "evidence_end": end,
    }
    if valid_from is not None:
        claim["valid_from"] = valid_from
    return claim, ""


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _iso_time(value: Any) -> str | None:
    """value as an ISO 8601 timestamp in UTC (a date is its midnight), or None."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    try:
        # history is knowledge too: any year Python's datetime holds (1 to 9999), in UTC
        return when.astimezone(dt.UTC).isoformat()
    except OverflowError:  # 0001-01-01 at +01:00 is before the year 1 in UTC
        return None
