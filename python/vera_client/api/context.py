"""Context: context packs (the best hits that fit a token budget, stored so they can be
read and voted on again) and remember (a text or chat messages recorded in one call)
(sql/functions/215_context_packs.sql, 216_remember.sql; queries in context.sql; tests in
pg_tests/context/)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, cast
from uuid import UUID

from vera_client.api.call import Call, Columns, Json, Rows, embedding, expects, json_or_none, record, scalar
from vera_client.api.curation import claim_fact_texts
from vera_client.api.operation import Plan, Session, Work, ask, check_k, operation, plan
from vera_client.api.reads import ConflictValue, conflicts
from vera_client.api.search import Vote, active_weights, query_vector, search
from vera_client.domain.context import (
    ContextPack,
    assemble,
    check_request,
    conflicts_json,
    during_json,
    items_json,
    omitted_json,
    pack_from_row,
    warnings_json,
)
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.time_scopes import TimeRange, stated_scope


@dataclass(frozen=True, kw_only=True, slots=True)
class Remembered:
    """What vera.remember recorded: one episode of a source in group_id.

    created is False when the same content was remembered before: nothing new was
    recorded and episode_id is the earlier episode (passages and claims_recorded are
    then 0). lifecycle is how the source's tier graded the passages: published, or
    pending_review (tier 3) and proposal (tier 4) in a shared scope. Free-text
    extraction is off: only the claims passed in are published."""

    group_id: str
    source_id: UUID
    episode_id: UUID
    version: int
    created: bool
    passages: int
    claims_recorded: int
    claims_published: int
    lifecycle: str | None = field(
        metadata={
            "description": "how the source's tier graded the passages: published, pending_review or proposal"
        }
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class RememberPreview:
    """What vera.remember would store: the group it lands in, that group's embedding pin (None
    before its first vector) and the passages ({"text", "heading"?, "char_start"?, "char_end"?})."""

    group_id: str
    embedding_model: str | None
    embedding_dim: int | None
    passages: list[dict[str, Any]]


def store_context_pack(pack: ContextPack) -> Call[UUID]:
    params = {"query": pack.query, "token_budget": pack.token_budget, "items": Json(items_json(pack)),
              "as_of": pack.as_of, "groups": pack.groups, "min_authority": pack.min_authority,
              "max_tier": pack.max_tier, "weights": json_or_none(pack.weights),
              "assembler_version": pack.assembler_version, "omitted": Json(omitted_json(pack)),
              "conflicts": Json(conflicts_json(pack)), "warnings": Json(warnings_json(pack)),
              "during": json_or_none(during_json(pack))}  # fmt: skip
    return Call("store_context_pack", params, scalar)


# what pack_from_row reads (domain/context.py)
_PACK_COLUMNS = frozenset(
    {"pack_id", "created_at", "searched_groups", "request", "weights", "assembler_version", "items",
     "omitted", "conflicts", "warnings"}
)  # fmt: skip


def get_context_pack(pack: UUID) -> Call[ContextPack]:
    """One of the caller's context packs (NotFoundError for anyone else's)."""

    def read(columns: Sequence[str], rows: Rows) -> ContextPack:
        return pack_from_row(dict(zip(columns, rows[0], strict=True)))

    return Call("get_context_pack", {"pack": pack}, expects(read, Columns(_PACK_COLUMNS, _PACK_COLUMNS)))


def record_pack_feedback(
    pack: UUID, position: int, vote: str, *, vector: Sequence[float] | None, embedding_model: str | None
) -> Call[Vote]:
    params = {"pack": pack, "position": position, "vote": vote, "embedding": embedding(vector),
              "embedding_model": embedding_model}  # fmt: skip
    return Call("record_pack_feedback", params, record(Vote))


def remember_call(
    *,
    content: str | None,
    messages: Sequence[Mapping[str, Any]] | None,
    source: str,
    at: datetime | None,
    group: str | None,
    claims: Sequence[Mapping[str, Any]],
    embeddings: Sequence[Sequence[float]] | None = None,
    embedding_model: str | None = None,
    time_scopes: Sequence[Mapping[str, Any]] | None = None,
) -> Call[Remembered]:
    """vera.remember as it is: vectors and time scopes already computed."""
    params = {"content": content, "messages": _messages(messages), "source": source, "at": at,
              "group": group, "claims": Json(list(claims)),
              "embeddings": Json([list(v) for v in embeddings]) if embeddings is not None else None,
              "embedding_model": embedding_model,
              "time_scopes": Json([dict(t) for t in time_scopes]) if time_scopes is not None else None,
              }  # fmt: skip
    return Call("remember", params, record(Remembered))


def remember_passages(
    *, content: str | None, messages: Sequence[Mapping[str, Any]] | None, group: str | None
) -> Call[RememberPreview]:
    params = {"content": content, "messages": _messages(messages), "group": group}
    return Call("remember_passages", params, record(RememberPreview))


def _messages(messages: Sequence[Mapping[str, Any]] | None) -> Json | None:
    return Json(list(messages)) if messages is not None else None


# --- plans


def get_context(
    session: Session,
    query: str,
    *,
    token_budget: int = 2000,
    as_of: datetime | None = None,
    groups: Sequence[str] | None = None,
    min_authority: float | None = None,
    max_tier: int | None = None,
    k: int = 50,
    during: TimeRange | tuple[date | None, date | None] | None = None,
    detect_time: bool = True,
) -> Plan[ContextPack]:
    """A context pack: the best of the first k hits (searched as search does) that fit token_budget
    (100-32,000 MiniLM tokens), with omissions, conflicts and freshness warnings; stored, with its id.

    during and detect_time: the period the search asks about, as in search; the pack keeps it
    in its request and says it (`during`, None when it asked about none)."""
    check_request(query, token_budget, min_authority, max_tier)
    check_k(k)
    hits = yield from search(
        session, query, k=k, as_of=as_of, groups=groups, during=during, detect_time=detect_time
    )
    competing: list[ConflictValue] = []
    if any(hit.kind == "fact" for hit in hits):
        competing = yield from ask(conflicts(limit=1000, groups=groups))
    count_tokens = session.services.count_tokens
    pack = yield from ask(
        Work(
            lambda: assemble(
                query=query,
                hits=hits,
                conflicts=competing,
                count_tokens=count_tokens,
                token_budget=token_budget,
                as_of=as_of,
                groups=groups,
                min_authority=min_authority,
                max_tier=max_tier,
            )
        )
    )
    weights = {}
    for group in sorted({item.group_id for item in pack.items}):
        weights[group] = yield from ask(active_weights(group))
    pack = replace(pack, weights=weights, during=hits.during)
    pack_id = yield from ask(store_context_pack(pack))
    return (yield from ask(get_context_pack(pack_id)))


def pack_feedback(session: Session, pack: UUID, position: int, vote: str) -> Plan[Vote]:
    """'up' or 'down' on the item at a position of one of the caller's packs, as on a search hit."""
    stored = yield from ask(get_context_pack(pack))
    vector, model, _ = yield from query_vector(session, stored.query, stored.groups)
    return (yield from ask(record_pack_feedback(pack, position, vote, vector=vector, embedding_model=model)))


def remember(
    session: Session,
    text_or_messages: str | Sequence[Mapping[str, Any]],
    *,
    source: str = "memory",
    at: datetime | None = None,
    group: str | None = None,
    claims: Sequence[Mapping[str, Any]] = (),
) -> Plan[Remembered]:
    """Record a text, or chat messages ({"role", "content", "name"?} each), as one episode of
    source in group (default: the caller's personal u: scope), with its passages and the
    structured claims passed (publish's shape); one SQL call, vera.remember.

    The same content again records nothing new (created False). A source is registered on
    first use (tier 3, informational) where the caller administers the group, always in its
    own u: scope; its tier and the contamination guard grade what is recorded. Free-text
    extraction is off: claims are only those passed. vera.remember_passages tells first what
    the passages will be: each gets the time scope its words state (VERA's reader, docs/
    time.md) and, with an embedder for the group's pin (or, before the group has one, the
    configured embedder), a vector, so it is found by meaning too; so does each claim's fact
    (its text as publish_claims stores it), so it is found by meaning at once, not only after
    the worker's embed job."""
    content: str | None = None
    messages: Sequence[Mapping[str, Any]] | None = None
    if isinstance(text_or_messages, str):
        content = text_or_messages
    elif isinstance(text_or_messages, Sequence) and all(
        isinstance(message, Mapping) for message in text_or_messages
    ):
        messages = cast(Sequence[Mapping[str, Any]], text_or_messages)  # every item checked above
    else:
        raise InvalidArgumentError("remember takes a text, or a list of messages ({'role', 'content'})")
    preview = yield from ask(remember_passages(content=content, messages=messages, group=group))
    scopes = [stated_scope(p["text"], p.get("heading")) for p in preview.passages]
    vectors, claims, model = yield from _vectors(session, preview, claims)
    call = remember_call(
        content=content, messages=messages, source=source, at=at, group=group, claims=claims,
        embeddings=vectors, embedding_model=model, time_scopes=scopes,
    )  # fmt: skip
    return (yield from ask(call))


def _vectors(
    session: Session, preview: RememberPreview, claims: Sequence[Mapping[str, Any]]
) -> Plan[tuple[list[list[float]] | None, list[dict[str, Any]], str | None]]:
    """Vectors of the passages vera.remember will store, and the claims with a vector of their
    fact text (vera.claim_fact_texts: the text the embed job would embed) where they had none,
    in one call to the embedder of the group's pin; nothing without providers, or when the
    pinned model does not run here (the worker's embed job then embeds the facts)."""
    embedder = session.services.embedder_for_model(preview.embedding_model)
    if embedder is None or (preview.embedding_dim not in (None, embedder.dim)):
        return None, [dict(claim) for claim in claims], None
    fact_texts: list[str | None] = []
    if claims:
        fact_texts = yield from ask(claim_fact_texts(claims))
    # only claims with a text and no vector of their own get one
    unembedded = [i for i, (claim, text) in enumerate(zip(claims, fact_texts, strict=True))
                  if text is not None and "embedding" not in claim]  # fmt: skip
    texts = [passage["text"] for passage in preview.passages] + [cast(str, fact_texts[i]) for i in unembedded]
    vectors = yield from ask(Work(lambda: embedder.embed(texts)))
    passages = len(preview.passages)
    embedded = [dict(claim) for claim in claims]
    for i, vector in zip(unembedded, vectors[passages:], strict=True):
        embedded[i]["embedding"] = vector
    return vectors[:passages], embedded, embedder.model


class Context:
    """The context pack and remember operations of a client face."""

    get_context = plan(get_context)
    get_context_pack = operation(get_context_pack)
    pack_feedback = plan(pack_feedback)
    remember = plan(remember)
