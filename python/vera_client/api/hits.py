"""A search's hits: what vera.search and vera.search_snapshot return (one row a hit, its seven
signals as columns; sql/functions/180_search.sql), read into Hit by column name."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from uuid import UUID

from vera_client.api.call import Columns, Rows, expects, row_columns
from vera_client.domain.time_scopes import TimeRange


@dataclass(frozen=True, kw_only=True, slots=True)
class Signals:
    """The seven signals of the blend, each in [0, 1]; period is None when the search asked
    about no period (docs/time.md)."""

    relevance: float
    authority: float
    verification: float
    recency: float
    feedback: float
    confidence: float
    period: float | None = field(
        default=None,
        metadata={
            "description": "the hit's time against the period the query asks about; "
            "null when it asks about none"
        },
    )


# the blend's signals in the order vera.search returns them (vera.signal_names())
SIGNAL_NAMES = tuple(f.name for f in fields(Signals))


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    """One ranked answer of vera.search: a fact or a passage, with its citation."""

    rank: int
    kind: str = field(metadata={"description": "fact or passage"})
    item_id: UUID
    group_id: str
    text: str
    score: float
    confidence: float = field(
        metadata={
            "description": "absolute probability that this hit answers the query, comparable across "
            "queries and groups (vera.search's match_confidence)"
        }
    )
    good_match: bool = field(metadata={"description": "confidence reaches the threshold (0.5)"})
    lexical_match: float | None = field(
        metadata={
            "description": "BM25 score over the query's IDF mass (about 1: every word held once); "
            "null: words not searched"
        }
    )
    similarity: float | None = field(
        metadata={"description": "cosine similarity to the query vector; null: no vector searched or held"}
    )
    signals: Signals
    citation: dict[str, object] = field(
        metadata={"description": "source, episode, chunk, evidence, validity, tier, verification"}
    )
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    # stage 3, when a reranker ran on this hit: score = (1 - w) * blend_score min-max normalised
    # over the reranked head + w * rerank_score (reranking.py)
    blend_score: float | None = None
    rerank_score: float | None = None


class Hits(list[Hit]):
    """A search's hits, best first, and the period it asked about: passed as `during`, or found
    in the query's words (None: it asked about none). `words_only` says why the query was
    searched by words alone although the groups hold vectors (no embedder here, or their model
    does not run here); None when it was embedded, or nothing was lost. `no_good_match` is
    true when no hit is a good match (none at all, or the best one's confidence is below the
    threshold): nothing known answers the query, and an agent should say so."""

    def __init__(
        self, hits: Iterable[Hit] = (), during: TimeRange | None = None, words_only: str | None = None
    ) -> None:
        super().__init__(hits)
        self.during = during
        self.words_only = words_only

    @property
    def no_good_match(self) -> bool:
        return not any(hit.good_match for hit in self)


def hits(columns: Sequence[str], rows: Rows) -> list[Hit]:
    """vera.search's and vera.search_snapshot's rows, read by column name."""
    found = []
    for row in rows:
        values = dict(zip(columns, row, strict=True))
        signals = Signals(**{name: values.pop(name) for name in SIGNAL_NAMES})
        found.append(Hit(signals=signals, confidence=values.pop("match_confidence"), **values))
    return found


_SIGNALS = row_columns(Signals)
# the hit's own confidence is vera.search's match_confidence (its column `confidence` is a signal)
_HIT = row_columns(Hit, without=["signals", "confidence"], plus=["match_confidence"])
expects(hits, Columns(_HIT.required | _SIGNALS.required, _HIT.allowed | _SIGNALS.allowed))
