"""Search: ranked, cited hits (their shape in hits.py, the optional reranker in
reranking.py), votes on them and the ranking weights they calibrate
(sql/functions/170_ranking.sql, 180_search.sql and the files it calls, 190_feedback.sql;
snapshots in snapshots.py; tests in pg_tests/search/)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, NamedTuple
from uuid import UUID

from vera_client.api.call import (
    Call,
    Columns,
    Rows,
    embedding,
    expects,
    json_or_none,
    listed,
    nothing,
    period,
    record,
    scalar,
)
from vera_client.api.hits import Hit, Hits, hits
from vera_client.api.operation import Plan, Session, Work, ask, check_k, operation, plan
from vera_client.api.reranking import rerank_hits
from vera_client.api.weights import rollback_weights, weight_history
from vera_client.domain.errors import InvalidArgumentError, MissingExtraError
from vera_client.domain.ports import Embedder
from vera_client.domain.time_scopes import TimeRange, as_period, query_time

ItemKind = str  # "fact" or "passage"


@dataclass(frozen=True, kw_only=True, slots=True)
class Vote:
    """A recorded vote, with the signals the hit had for its query."""

    feedback_id: UUID
    group_id: str
    signals: dict[str, float | None]  # period: None when the search asked about no period
    created: bool = field(metadata={"description": "false when this vote replaced the caller's earlier one"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Calibration:
    """Weights derived from a group's votes; persisted when they became the active set."""

    weight_set_id: UUID | None
    persisted: bool
    sample_count: int
    helpful: int
    unhelpful: int
    weights: dict[str, Any] | None
    separation: dict[str, float | None] | None  # period: None without votes on searches that asked one


_PIN = frozenset({"embedding_model", "embedding_dim"})


def pins(columns: Sequence[str], rows: Rows) -> list[tuple[str, int]]:
    """(embedding_model, embedding_dim) pairs; rows without a model are left out."""
    return [
        (values["embedding_model"], values["embedding_dim"])
        for values in (dict(zip(columns, row, strict=True)) for row in rows)
        if values["embedding_model"] is not None
    ]


expects(pins, Columns(_PIN, _PIN))


def search_version() -> Call[str]:
    """The version of the ranking code that answers searches (snapshots pin it)."""
    return Call("search_version", {}, scalar)


def pinned_models(groups: Sequence[str] | None) -> Call[list[tuple[str, int]]]:
    """The embedding models (and dimensions) pinned by the groups (default: every readable group)."""
    return Call("pinned_models", {"groups": listed(groups)}, pins)


def search_call(
    text: str | None,
    *,
    vector: Sequence[float] | None,
    embedding_model: str | None,
    k: int,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
    weights: Mapping[str, Any] | None = None,
    lexical_weight: float = 1.0,
    vector_weight: float = 1.0,
    k_rrf: int = 1,
    candidates: int | None = None,
    ef_search: int | None = None,
    during: TimeRange | None = None,
) -> Call[list[Hit]]:
    """vera.search as it is: the query's vector (if any) already computed."""
    params = {"during": period(during), "query": text, "embedding": embedding(vector),
              "embedding_model": embedding_model, "k": k, "as_of": as_of, "groups": listed(groups),
              "weights": json_or_none(dict(weights) if weights is not None else None),
              "lexical_weight": lexical_weight, "vector_weight": vector_weight, "k_rrf": k_rrf,
              "candidates": candidates, "ef_search": ef_search}  # fmt: skip
    return Call("search", params, hits)


def record_feedback(
    kind: str,
    item: UUID,
    text: str,
    vote: str,
    *,
    vector: Sequence[float] | None,
    embedding_model: str | None,
    as_of: datetime | None,
    groups: Sequence[str] | None,
    during: TimeRange | None = None,
) -> Call[Vote]:
    params = {"during": period(during), "kind": kind, "item_id": item, "query": text, "vote": vote,
              "embedding": embedding(vector), "embedding_model": embedding_model, "as_of": as_of,
              "groups": listed(groups)}  # fmt: skip
    return Call("record_feedback", params, record(Vote))


def calibrate_weights(group: str, min_samples: int | None = None) -> Call[Calibration]:
    """calibrate_weights from the group's votes."""
    return Call("calibrate_weights", {"group": group, "min_samples": min_samples}, record(Calibration))


def active_weights(group: str) -> Call[dict[str, Any]]:
    """The weights the group's searches blend with."""
    return Call("active_weights", {"group": group}, scalar)


def reset_weights(group: str) -> Call[None]:
    """Back to the default weights (admins)."""
    return Call("reset_weights", {"group": group}, nothing)


# --- plans


def asked_period(
    text: str | None, during: TimeRange | tuple[date | None, date | None] | None, detect: bool
) -> TimeRange | None:
    """The period a search asks about: the one passed, else the one its words state."""
    if during is not None:
        return as_period(during)
    return query_time(text) if detect and text else None


class QueryVector(NamedTuple):
    """A query's vector and its model; without one the search goes by words alone, and
    words_only says why when the groups hold vectors (Hits.words_only)."""

    vector: list[float] | None
    model: str | None
    words_only: str | None = None


def _embedded(embedder: Embedder, text: str) -> list[float] | str:
    """The query's vector, or why it has none: a model whose extra is not installed here
    (the local embedder of a base install) leaves the search to words, and says so."""
    try:
        return embedder.embed([text])[0]
    except MissingExtraError as missing:
        return str(missing)


def query_vector(session: Session, text: str | None, groups: Sequence[str] | None) -> Plan[QueryVector]:
    """The query's vector by the embedder of the first pinned model that runs here and reads its
    language; without one the search goes by words alone."""
    if not text or not text.strip():
        return QueryVector(None, None)
    services = session.services
    known = services.known_pins(session.caller, groups)
    if known is None:
        known = yield from ask(pinned_models(groups))
        services.remember_pins(session.caller, groups, known)
    chosen = services.embedder_for(known, text)
    if chosen is None:
        return QueryVector(None, None, services.words_only(known))
    embedder, model = chosen
    vector = yield from ask(Work(lambda: _embedded(embedder, text)))
    if isinstance(vector, str):
        return QueryVector(None, None, vector)
    return QueryVector(vector, model)


def search(
    session: Session,
    text: str,
    *,
    k: int = 10,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
    weights: Mapping[str, Any] | None = None,
    lexical_weight: float = 1.0,
    vector_weight: float = 1.0,
    k_rrf: int = 1,
    candidates: int | None = None,
    ef_search: int | None = None,
    rerank: bool = True,
    during: TimeRange | tuple[date | None, date | None] | None = None,
    detect_time: bool = True,
) -> Plan[Hits]:
    """Ranked, cited hits: hybrid when a searched group's model runs here and reads the query's
    language (else by words alone), reranked when configured.

    k_rrf, candidates and ef_search go to vera.search as they are, with its defaults
    (None: 4 x the hits asked of it per half, at least 40; max(100, candidates), at most 1000), and it
    checks them (InvalidArgumentError). With a reranker, SQL is asked for max(k, top_n)
    hits so that the reranker sees its whole head, and the default candidates follows.

    during: the period the query asks about ((start, end) days, end exclusive, None where
    open); without it, the period the query's own words state ("from 1811 to 1827", "năm
    2020") unless detect_time is False. The hits' `during` says which was used; their
    period signal compares each hit's time with it (docs/time.md)."""
    check_k(k)
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("search needs a query: the words to look for")
    asked = asked_period(text, during, detect_time)
    services = session.services
    reranker = services.reranker if rerank else None
    vector, model, words_only = yield from query_vector(session, text, groups)
    call = search_call(
        text, vector=vector, embedding_model=model, k=max(k, services.rerank_top_n) if reranker else k,
        as_of=as_of, groups=groups, weights=weights, lexical_weight=lexical_weight,
        vector_weight=vector_weight, k_rrf=k_rrf, candidates=candidates, ef_search=ef_search, during=asked,
    )  # fmt: skip
    blended = yield from ask(call)
    if reranker is None or not blended:
        return Hits(blended[:k], asked, words_only)
    # stage 3: the reranker re-scores the head; the rest keeps its blend score after it
    head = [hit.text for hit in blended[: services.rerank_top_n]]
    scores = yield from ask(Work(lambda: reranker.rerank(text, head) if head else []))
    return Hits(rerank_hits(blended, scores, weight=services.rerank_weight)[:k], asked, words_only)


def feedback(
    session: Session,
    kind: ItemKind,
    item: UUID,
    text: str,
    vote: str,
    *,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
    during: TimeRange | tuple[date | None, date | None] | None = None,
    detect_time: bool = True,
) -> Plan[Vote]:
    """record_feedback: 'up' or 'down' on a hit of a query (embedded, and its period found, as
    search embeds it and finds it)."""
    asked = asked_period(text, during, detect_time)
    vector, model, _ = yield from query_vector(session, text, groups)
    call = record_feedback(
        kind, item, text, vote, vector=vector, embedding_model=model, as_of=as_of, groups=groups,
        during=asked,
    )  # fmt: skip
    return (yield from ask(call))


class Search:
    """The search operations of a client face."""

    search = plan(search)
    feedback = plan(feedback)
    search_version = operation(search_version)
    calibrate = operation(calibrate_weights)
    active_weights = operation(active_weights)
    reset_weights = operation(reset_weights)
    weight_history = operation(weight_history)
    rollback_weights = operation(rollback_weights)
