"""Golden sets: queries with the substrings a right answer contains, and the
figures a ranking earns on them (hit@k, MRR, nDCG@10).

The file format is TOML (see examples/lumen/golden.toml):

    [settings]             k = 5 (hits looked at for hit@k and MRR)
    [thresholds]           hit_at_k, mrr, ndcg_at_10: the least acceptable values
    [[query]]              text, expect = [...], optional reject = [...],
                           as_of = "2026-06-01T00:00:00Z", groups = ["o:..."]

A hit is right when its text, subject, object or citation contains one of
`expect` (case-insensitive); each expected substring is one answer, found at
most once, for nDCG@10. A query whose `reject` substring ranks above its
first right hit counts as missed (a wrong answer was preferred).
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from vera_client.api.hits import Hit
from vera_client.domain.errors import InvalidArgumentError

METRICS = ("hit_at_k", "mrr", "ndcg_at_10")


@dataclass(frozen=True, kw_only=True, slots=True)
class GoldenQuery:
    text: str
    expect: tuple[str, ...]
    reject: tuple[str, ...] = ()
    as_of: datetime | None = None
    groups: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class GoldenSet:
    queries: tuple[GoldenQuery, ...]
    k: int = 5
    thresholds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class QueryScore:
    query: GoldenQuery
    first_right: int | None  # rank of the first right hit within k, if any
    rejected_first: bool  # a rejected answer ranked above the first right one
    hit: float
    reciprocal_rank: float
    ndcg_at_10: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Evaluation:
    scores: tuple[QueryScore, ...]
    figures: dict[str, float]
    failures: tuple[str, ...]  # "mrr 0.61 < 0.75", one per threshold missed

    @property
    def passed(self) -> bool:
        return not self.failures


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidArgumentError(f"{where} must be a list of non-empty strings")
    return tuple(value)


def _instant(value: Any, where: str) -> datetime | None:
    """A TOML date-time, or an ISO 8601 string with a time zone."""
    if value is None or isinstance(value, datetime):
        instant = value
    else:
        try:
            instant = datetime.fromisoformat(str(value))
        except ValueError:
            instant = None
        if instant is None:
            raise InvalidArgumentError(
                f"{where} must be an instant such as 2026-06-01T00:00:00Z, got {value!r}"
            )
    if instant is not None and instant.tzinfo is None:
        raise InvalidArgumentError(f"{where} needs a time zone (2026-06-01T00:00:00Z), got {value!r}")
    return instant


def load_golden_set(path: Path) -> GoldenSet:
    """Parse a golden-set file; InvalidArgumentError names what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read golden set {path}: {exc.strerror}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"{path} is not valid TOML: {exc}") from exc
    for table in ("settings", "thresholds"):
        if not isinstance(data.get(table, {}), dict):
            raise InvalidArgumentError(f"{path}: [{table}] must be a table")
    raw_queries = data.get("query", [])
    if not isinstance(raw_queries, list) or not all(isinstance(raw, dict) for raw in raw_queries):
        raise InvalidArgumentError(f"{path}: queries must be [[query]] tables")
    settings = data.get("settings", {})
    k = settings.get("k", 5)
    if not isinstance(k, int) or not 1 <= k <= 100:
        raise InvalidArgumentError(f"{path}: settings.k must be an integer from 1 to 100")
    thresholds = data.get("thresholds", {})
    unknown = set(thresholds) - set(METRICS)
    if unknown:
        raise InvalidArgumentError(
            f"{path}: unknown threshold {sorted(unknown)[0]!r} (known: {', '.join(METRICS)})"
        )
    if not all(isinstance(v, int | float) and 0 <= v <= 1 for v in thresholds.values()):
        raise InvalidArgumentError(f"{path}: thresholds must be numbers from 0 to 1")
    if not raw_queries:
        raise InvalidArgumentError(f"{path}: no [[query]] entries")
    queries = []
    for position, raw in enumerate(raw_queries, start=1):
        where = f"{path}: query {position}"
        text = raw.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError(f"{where}: text must be a non-empty string")
        as_of = _instant(raw.get("as_of"), f"{where}: as_of")
        groups = raw.get("groups")
        queries.append(
            GoldenQuery(
                text=text,
                expect=_strings(raw.get("expect"), f"{where}: expect"),
                reject=_strings(raw.get("reject", []), f"{where}: reject") if raw.get("reject") else (),
                as_of=as_of,
                groups=_strings(groups, f"{where}: groups") if groups is not None else None,
            )
        )
    return GoldenSet(queries=tuple(queries), k=k, thresholds={n: float(v) for n, v in thresholds.items()})


def _haystack(hit: Hit) -> str:
    parts = [hit.text, hit.subject or "", hit.object or "", json.dumps(hit.citation, ensure_ascii=False)]
    return "\n".join(parts).casefold()


def score_query(query: GoldenQuery, hits: list[Hit], k: int) -> QueryScore:
    """hit@k, reciprocal rank (within k) and nDCG@10 of one query's ranked hits."""
    wanted = [e.casefold() for e in query.expect]
    unwanted = [r.casefold() for r in query.reject]
    found: set[int] = set()
    gains = []
    first_right = None
    rejected_first = False
    for position, hit in enumerate(hits[:10], start=1):
        haystack = _haystack(hit)
        answers = [i for i, e in enumerate(wanted) if e in haystack and i not in found]
        if any(e in haystack for e in wanted) and first_right is None:
            first_right = position
        if first_right is None and any(r in haystack for r in unwanted):
            rejected_first = True
        found.update(answers[:1])
        gains.append(1.0 if answers else 0.0)
    dcg = sum(g / math.log2(i + 1) for i, g in enumerate(gains, start=1))
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(wanted), 10) + 1))
    right_within_k = first_right is not None and first_right <= k and not rejected_first
    return QueryScore(
        query=query,
        first_right=first_right,
        rejected_first=rejected_first,
        hit=1.0 if right_within_k else 0.0,
        reciprocal_rank=1 / first_right if right_within_k and first_right else 0.0,
        ndcg_at_10=dcg / ideal if ideal else 0.0,
    )


def evaluate(golden: GoldenSet, scores: list[QueryScore]) -> Evaluation:
    """Mean figures over the queries, and the thresholds they miss."""
    count = max(1, len(scores))
    figures = {
        "hit_at_k": sum(s.hit for s in scores) / count,
        "mrr": sum(s.reciprocal_rank for s in scores) / count,
        "ndcg_at_10": sum(s.ndcg_at_10 for s in scores) / count,
    }
    failures = tuple(
        f"{name} {figures[name]:.3f} < {minimum:.3f}"
        for name, minimum in golden.thresholds.items()
        if figures[name] < minimum
    )
    return Evaluation(scores=tuple(scores), figures=figures, failures=failures)
