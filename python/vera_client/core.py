"""What the client does, written once for both of its faces.

Each operation is a *plan*: a generator that yields the steps it needs (a
`Call` of the SQL API, or `Work` that blocks, such as embedding a query or
reranking) and receives their results. VeraClient drives a plan with blocking
I/O, AsyncVeraClient with asyncio (Work runs in a thread), so the two faces
cannot drift: they share every decision, and only the driving differs.

Every plan acts as one caller; `Shared` holds what every caller's view of one
client shares (providers, the pins memo, reranker settings).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar, cast
from uuid import UUID

from vera_client.adapters.embedders import model_languages
from vera_client.adapters.postgres import calls
from vera_client.adapters.postgres.calls import Call
from vera_client.adapters.providers.metering import MeterKey, Totals
from vera_client.adapters.tokenizers.minilm import MiniLMTokenCounter
from vera_client.bootstrap import Providers
from vera_client.domain.callers import Caller
from vera_client.domain.context import ContextPack, assemble, check_request
from vera_client.domain.errors import InvalidArgumentError, NotFoundError, PermissionDeniedError
from vera_client.domain.languages import model_reads
from vera_client.domain.models import (
    ApiKeyInfo,
    Calibration,
    ConflictValue,
    Entity,
    EpisodeVersion,
    Evidence,
    ExploredFact,
    Fact,
    FactChange,
    Hit,
    Hits,
    Membership,
    NewApiKey,
    PassageReviewOutcome,
    PendingPassage,
    PendingReview,
    Proposal,
    ProposalState,
    PublishedClaim,
    Remembered,
    RememberPreview,
    RetractedProposal,
    ReviewOutcome,
    SnapshotInfo,
    SnapshotTaken,
    Source,
    SourceDetail,
    StoredChunk,
    TimelineFact,
    Vote,
)
from vera_client.domain.ports import Embedder, GraphStore
from vera_client.domain.reranking import rerank_hits
from vera_client.domain.sources import pick_source
from vera_client.domain.time_scopes import EXTRACTION_VERSION, TimeRange, as_period, query_time, time_scope

T = TypeVar("T")
ItemKind = str  # "fact" or "passage"


@dataclass(frozen=True, slots=True)
class Work(Generic[T]):
    """A blocking step that is not SQL (a model call): run inline, or in a thread under asyncio."""

    run: Callable[[], T]


Step = Call[Any] | Work[Any]
Plan = Generator[Step, Any, T]


def ask(step: Call[T] | Work[T]) -> Plan[T]:
    """One step of a plan, typed: `value = yield from ask(calls.whoami())`."""
    value = yield step
    return cast(T, value)


def _asked_period(
    text: str | None, during: TimeRange | tuple[date | None, date | None] | None, detect: bool
) -> TimeRange | None:
    """The period a search asks about: the one passed, else the one its words state."""
    if during is not None:
        return as_period(during)
    return query_time(text) if detect and text else None


def _check_k(k: int) -> None:
    if not 1 <= k <= 1000:
        raise InvalidArgumentError(f"k must be between 1 and 1000, not {k}")


class Shared:
    """What every caller's view of one client shares: providers (embedders behind
    their cache, the reranker, the meter) and a short memo of embedding pins."""

    # a group pins its model with its first vector and keeps it: remembering the pins
    # for a while saves every search a round trip (a group pinned meanwhile is searched
    # by words alone until then)
    PINS_TTL_SECONDS = 30.0
    # groups with no pin at all (searched by words only) are remembered for less: their
    # first vector may come with any write, and their searches then want it soon
    NO_PINS_TTL_SECONDS = 5.0
    PINS_MAX_ENTRIES = 10_000  # callers x group sets remembered at once

    def __init__(self, providers: Providers | None) -> None:
        self.providers = providers
        self._pins: dict[tuple[str, tuple[str, ...] | None], tuple[float, list[tuple[str, int]]]] = {}
        self._lock = threading.Lock()
        settings = providers.settings.reranker if providers is not None else None
        self.rerank_weight = settings.weight if settings is not None else 0.0
        self.rerank_top_n = settings.top_n if settings is not None else 0
        # context packs count their budget in the MiniLM tokenizer's word pieces
        self.token_counter = MiniLMTokenCounter()

    def known_pins(self, caller: Caller, groups: Sequence[str] | None) -> list[tuple[str, int]] | None:
        """The pins this caller read lately for these groups, else None. Keyed by caller:
        'every readable group' and what row-level security lets through differ per caller."""
        with self._lock:
            entry = self._pins.get(self._key(caller, groups))
        return entry[1] if entry is not None and entry[0] > time.monotonic() else None

    def remember_pins(
        self, caller: Caller, groups: Sequence[str] | None, pins: list[tuple[str, int]]
    ) -> None:
        now = time.monotonic()
        ttl = self.PINS_TTL_SECONDS if pins else self.NO_PINS_TTL_SECONDS
        with self._lock:
            if len(self._pins) >= self.PINS_MAX_ENTRIES:
                # a server sees many callers: forget the expired, and if that is not enough, all
                self._pins = {k: v for k, v in self._pins.items() if v[0] > now}
                if len(self._pins) >= self.PINS_MAX_ENTRIES:
                    self._pins.clear()
            self._pins[self._key(caller, groups)] = (now + ttl, pins)

    @staticmethod
    def _key(caller: Caller, groups: Sequence[str] | None) -> tuple[str, tuple[str, ...] | None]:
        return caller.identity, tuple(sorted(groups)) if groups is not None else None

    def embedder_for(self, pins: Sequence[tuple[str, int]], text: str) -> tuple[Embedder, str] | None:
        """The embedder of the first pinned model that runs here and reads the query's language;
        None means the search goes by words alone (a wrong vector would only drag it down)."""
        if self.providers is None:
            return None
        for model, dim in pins:
            if not model_reads(model_languages(model), text):
                continue
            embedder = self.providers.embedder_for_model(model)
            if embedder is not None and embedder.dim == dim:
                return embedder, model
        return None

    def reranking(self, rerank: bool) -> bool:
        return rerank and self.providers is not None and self.providers.reranker is not None

    def rerank(self, text: str, hits: list[Hit]) -> list[Hit]:
        assert self.providers is not None and self.providers.reranker is not None
        head = hits[: self.rerank_top_n]
        scores = self.providers.reranker.rerank(text, [hit.text for hit in head]) if head else []
        return rerank_hits(hits, scores, weight=self.rerank_weight)

    def usage(self) -> dict[MeterKey, Totals]:
        return self.providers.meter.totals() if self.providers is not None else {}


class Operations:
    """Every operation of the client as a plan, acting as one caller."""

    def __init__(self, shared: Shared, caller: Caller) -> None:
        self.shared = shared
        self.caller = caller

    # --- who, groups, keys, settings

    def whoami(self) -> Plan[list[Membership]]:
        """The caller's groups and its role in each."""
        return (yield from ask(calls.whoami()))

    def create_group(self, parent: str, kind: str, name: str) -> Plan[str]:
        """A workspace, project or personal group below parent (admins); its new group id."""
        return (yield from ask(calls.create_group(parent, kind, name)))

    def create_principal(
        self, group: str, kind: str, name: str, role: str = "member", email: str | None = None
    ) -> Plan[UUID]:
        """A person, agent or service in group with role (admins)."""
        return (yield from ask(calls.create_principal(group, kind, name, role, email)))

    def set_member_role(self, group: str, principal: UUID, role: str) -> Plan[None]:
        yield from ask(calls.set_member_role(group, principal, role))

    def remove_member(self, group: str, principal: UUID) -> Plan[bool]:
        return (yield from ask(calls.remove_member(group, principal)))

    def create_api_key(
        self, name: str, expires_at: datetime | None = None, principal: UUID | None = None
    ) -> Plan[NewApiKey]:
        """A new key (for the caller, or for a principal it manages); the secret is shown once."""
        return (yield from ask(calls.create_api_key(name, expires_at, principal)))

    def revoke_api_key(self, key: str) -> Plan[bool]:
        return (yield from ask(calls.revoke_api_key(key)))

    def list_api_keys(self) -> Plan[list[ApiKeyInfo]]:
        return (yield from ask(calls.list_api_keys()))

    def setting(self, group: str, name: str) -> Plan[Any]:
        return (yield from ask(calls.setting(group, name)))

    def set_setting(self, group: str, name: str, value: Any) -> Plan[Any]:
        return (yield from ask(calls.set_setting(group, name, value)))

    def administered_organisations(self) -> Plan[list[str]]:
        """The organisations the caller administers."""
        memberships = yield from self.whoami()
        return sorted(
            m.group_id for m in memberships if m.group_kind == "organisation" and m.role in {"admin", "owner"}
        )

    def default_group(self) -> Plan[str]:
        """The organisation the caller administers, when there is exactly one."""
        groups = yield from self.administered_organisations()
        if len(groups) == 1:
            return groups[0]
        if not groups:
            raise PermissionDeniedError("you administer no organisation: pass --group")
        raise InvalidArgumentError(
            f"you administer several organisations ({', '.join(groups)}): pass --group"
        )

    # --- sources and the write path

    def register_source(
        self,
        group: str,
        kind: str,
        name: str,
        tier: int,
        *,
        token_env: str | None = None,
        config: Mapping[str, Any] | None = None,
        uri: str | None = None,
    ) -> Plan[UUID]:
        """Register (or update, by name) a source with its trust tier 1-4 (admins)."""
        call = calls.register_source(
            group, kind, name, tier, token_env=token_env, config=config or {}, uri=uri
        )
        return (yield from ask(call))

    def register_folder(
        self,
        group: str,
        name: str,
        folder: Path,
        *,
        tier: int,
        kind: str = "markdown",
        uri: str | None = None,
        functional: Sequence[str] = (),
    ) -> Plan[Source]:
        """Register (or update, by name) a folder of Markdown/CSV/text files as a source (admins)."""
        root = folder.expanduser().resolve()
        if not root.is_dir():
            raise InvalidArgumentError(f"{folder} is not a folder")
        config: dict[str, Any] = {"root": str(root)}
        if functional:
            config["functional"] = list(functional)
        source_id = yield from self.register_source(group, kind, name, tier, config=config, uri=uri)
        found = yield from self.list_sources(group)
        return next(s for s in found if s.source_id == source_id)

    def list_sources(self, group: str | None = None) -> Plan[list[Source]]:
        """The sources of a group (or of every readable group), by name."""
        return (yield from ask(calls.list_sources(group)))

    def find_source(self, name_or_id: str, group: str | None = None) -> Plan[Source]:
        """A source by name or id (NotFoundError; InvalidArgumentError when the name is in several groups)."""
        found = yield from self.list_sources(group)
        return pick_source(found, name_or_id, group)

    def source_for_path(self, path: Path, group: str | None = None) -> Plan[tuple[Source, str | None]]:
        """The folder source whose root holds path, and path relative to that root (None for the root)."""
        target = path.expanduser().resolve()
        best: tuple[Source, str | None] | None = None
        for source in (yield from self.list_sources(group)):
            root = source.config.get("root")
            if not isinstance(root, str) or source.retracted_at is not None:
                continue
            folder = Path(root)
            if target == folder or folder in target.parents:
                relative = None if target == folder else target.relative_to(folder).as_posix()
                if best is None or len(root) > len(str(best[0].config["root"])):
                    best = (source, relative)
        if best is None:
            raise NotFoundError(
                f"no registered source holds {path}: register its folder with `vera source add`"
            )
        return best

    def request_ingest(self, group: str, source: UUID, path: str | None = None) -> Plan[int]:
        """Queue an ingestion run of a source for the worker, on behalf of the caller; the job id."""
        return (yield from ask(calls.request_ingest(group, source, path)))

    # --- extraction (issue 15) ---
    def request_extraction(self, group: str, *, redo: bool = False) -> Plan[int]:
        """Queue an extract job over the group's passages for the worker, on behalf of the caller; the job id.
        redo: also passages an earlier model or prompt version extracted (`vera reprocess`)."""
        return (yield from ask(calls.request_extraction(group, redo)))

    # --- time scopes of passages (issue 16) ---
    def read_time_scopes(self, group: str, *, batch: int = 500) -> Plan[int]:
        """Read the time scopes of the group's passages that VERA's reader has not read, or read
        with an older version (`vera reprocess --time-scopes`), batch by batch, each batch in a
        transaction of its own; how many were read. A scope its caller or its front matter
        stated stays. Admins of the group only."""
        read = 0
        after: UUID | None = None
        while True:
            passages = yield from ask(calls.passages_to_time_scope(group, EXTRACTION_VERSION, after, batch))
            if not passages:
                return read
            scopes = [
                {"chunk_id": str(p.chunk_id), "time_scope": time_scope(p.text, p.heading),
                 "time_scope_version": EXTRACTION_VERSION}
                for p in passages
            ]  # fmt: skip
            read += yield from ask(calls.set_time_scopes(group, scopes))
            after = passages[-1].chunk_id

    def record_episode(
        self,
        group: str,
        source: UUID,
        external_id: str,
        sha256: bytes,
        *,
        object_key: str | None = None,
        mime: str | None = None,
        observed_at: datetime | None = None,
        title: str | None = None,
        uri: str | None = None,
    ) -> Plan[EpisodeVersion]:
        """One version of a source record; created is False when its content is unchanged."""
        call = calls.record_episode(
            group, source, external_id, sha256,
            object_key=object_key, mime=mime, observed_at=observed_at, title=title, uri=uri,
        )  # fmt: skip
        return (yield from ask(call))

    def store_chunks(
        self,
        group: str,
        episode: UUID,
        chunks: Sequence[Mapping[str, Any]],
        embedding_model: str | None = None,
    ) -> Plan[list[StoredChunk]]:
        """An episode's passages, in order (graded by the source's tier like its claims)."""
        return (yield from ask(calls.store_chunks(group, episode, chunks, embedding_model)))

    def publish(
        self,
        group: str,
        episode: UUID | None,
        claims: Sequence[Mapping[str, Any]],
        embedding_model: str | None = None,
    ) -> Plan[list[PublishedClaim]]:
        """publish_claims: one batch, all or nothing."""
        return (yield from ask(calls.publish_claims(group, episode, claims, embedding_model)))

    def declare_predicate(
        self, group: str, name: str, cardinality: str = "multi", description: str | None = None
    ) -> Plan[str]:
        return (yield from ask(calls.declare_predicate(group, name, cardinality, description)))

    def pending_reviews(self, group: str) -> Plan[list[PendingReview]]:
        return (yield from ask(calls.pending_reviews(group)))

    def review(self, group: str, fact: UUID, decision: str, note: str | None = None) -> Plan[ReviewOutcome]:
        """review_claim: 'approve' or 'reject'."""
        return (yield from ask(calls.review_claim(group, fact, decision, note)))

    def pending_passages(self, group: str) -> Plan[list[PendingPassage]]:
        """Passages of tier-3 sources awaiting review, and of tier-4 ones proposed for the group (admins)."""
        return (yield from ask(calls.pending_passages(group)))

    def review_passage(
        self, group: str, chunk: UUID, decision: str, note: str | None = None
    ) -> Plan[PassageReviewOutcome]:
        """'approve' (searchable by the group, human verified) or 'reject' a waiting passage (admins)."""
        return (yield from ask(calls.review_passage(group, chunk, decision, note)))

    def retract_episode(self, group: str, episode: UUID, reason: str | None = None) -> Plan[int]:
        """Take an episode's knowledge out of search (admins); the cleanup job's id."""
        return (yield from ask(calls.withdraw("retract_episode", group, episode, reason)))

    def erase_episode(self, group: str, episode: UUID, reason: str | None = None) -> Plan[int]:
        """Retract an episode and delete its text, evidence and raw bytes (admins); the cleanup job's id."""
        return (yield from ask(calls.withdraw("erase_episode", group, episode, reason)))

    def retract_source(self, group: str, source: UUID, reason: str | None = None) -> Plan[int]:
        return (yield from ask(calls.withdraw("retract_source", group, source, reason)))

    def erase_source(self, group: str, source: UUID, reason: str | None = None) -> Plan[int]:
        return (yield from ask(calls.withdraw("erase_source", group, source, reason)))

    def complete_cleanup(self, job: int) -> Plan[bool]:
        return (yield from ask(calls.complete_cleanup(job)))

    # --- remember in one call

    def remember(
        self,
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
        configured embedder), a vector, so it is found by meaning too."""
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
        preview = yield from ask(calls.remember_passages(content=content, messages=messages, group=group))
        scopes = [
            {"time_scope": time_scope(p["text"], p.get("heading")), "time_scope_version": EXTRACTION_VERSION}
            for p in preview.passages
        ]
        vectors, model = yield from self._passage_vectors(preview)
        call = calls.remember(
            content=content, messages=messages, source=source, at=at, group=group, claims=claims,
            embeddings=vectors, embedding_model=model, time_scopes=scopes,
        )  # fmt: skip
        return (yield from ask(call))

    def _passage_vectors(self, preview: RememberPreview) -> Plan[tuple[list[list[float]] | None, str | None]]:
        """Vectors of the passages vera.remember will store, by the embedder of the group's pin;
        none without providers, or when the pinned model does not run here."""
        if self.shared.providers is None:
            return None, None
        embedder = self.shared.providers.embedder_for_model(preview.embedding_model)
        if embedder is None or (preview.embedding_dim not in (None, embedder.dim)):
            return None, None
        texts = [passage["text"] for passage in preview.passages]
        vectors = yield from ask(Work(lambda: embedder.embed(texts)))
        return vectors, embedder.model

    # --- the read path

    def _query_vector(
        self, text: str | None, groups: Sequence[str] | None
    ) -> Plan[tuple[list[float] | None, str | None]]:
        if not text or not text.strip() or self.shared.providers is None:
            return None, None
        pins = self.shared.known_pins(self.caller, groups)
        if pins is None:
            pins = yield from ask(calls.pinned_models(groups))
            self.shared.remember_pins(self.caller, groups, pins)
        chosen = self.shared.embedder_for(pins, text)
        if chosen is None:
            return None, None
        embedder, model = chosen
        vectors = yield from ask(Work(lambda: embedder.embed([text])))
        return vectors[0], model

    def search(
        self,
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
        _check_k(k)
        asked = _asked_period(text, during, detect_time)
        reranking = self.shared.reranking(rerank)
        vector, model = yield from self._query_vector(text, groups)
        call = calls.search(
            text,
            embedding=vector,
            embedding_model=model,
            k=max(k, self.shared.rerank_top_n) if reranking else k,
            as_of=as_of,
            groups=groups,
            weights=weights,
            lexical_weight=lexical_weight,
            vector_weight=vector_weight,
            k_rrf=k_rrf,
            candidates=candidates,
            ef_search=ef_search,
            during=asked,
        )
        blended = yield from ask(call)
        if not (reranking and blended):
            return Hits(blended[:k], asked)
        reranked = yield from ask(Work(lambda: self.shared.rerank(text, blended)))
        return Hits(reranked[:k], asked)

    def feedback(
        self,
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
        asked = _asked_period(text, during, detect_time)
        vector, model = yield from self._query_vector(text, groups)
        call = calls.record_feedback(
            kind, item, text, vote, embedding=vector, embedding_model=model, as_of=as_of, groups=groups,
            during=asked,
        )  # fmt: skip
        return (yield from ask(call))

    def search_version(self) -> Plan[str]:
        """The version of the ranking code that answers searches (snapshots pin it)."""
        return (yield from ask(calls.search_version()))

    def calibrate(self, group: str, min_samples: int | None = None) -> Plan[Calibration]:
        """calibrate_weights from the group's votes."""
        return (yield from ask(calls.calibrate_weights(group, min_samples)))

    def active_weights(self, group: str) -> Plan[dict[str, Any]]:
        return (yield from ask(calls.active_weights(group)))

    def reset_weights(self, group: str) -> Plan[None]:
        yield from ask(calls.reset_weights(group))

    def create_snapshot(self, group: str, name: str) -> Plan[SnapshotTaken]:
        return (yield from ask(calls.create_snapshot(group, name)))

    def list_snapshots(self, group: str) -> Plan[list[SnapshotInfo]]:
        return (yield from ask(calls.list_snapshots(group)))

    def drop_snapshot(self, group: str, name: str) -> Plan[None]:
        yield from ask(calls.drop_snapshot(group, name))

    def search_snapshot(
        self,
        group: str,
        name: str,
        text: str,
        *,
        k: int = 10,
        k_rrf: int = 1,
        candidates: int | None = None,
        during: TimeRange | tuple[date | None, date | None] | None = None,
        detect_time: bool = True,
    ) -> Plan[Hits]:
        """The snapshot's answer, as search gave it when it was taken (with the same k_rrf,
        candidates and period; vera.search_snapshot's defaults and checks, as in search)."""
        _check_k(k)
        asked = _asked_period(text, during, detect_time)
        pins = yield from ask(calls.snapshot_pin(group, name))
        vector, model = None, None
        chosen = self.shared.embedder_for(pins, text) if text.strip() else None
        if chosen is not None:
            embedder, model = chosen
            vector = (yield from ask(Work(lambda: embedder.embed([text]))))[0]
        call = calls.search_snapshot(
            group,
            name,
            text,
            embedding=vector,
            embedding_model=model,
            k=k,
            k_rrf=k_rrf,
            candidates=candidates,
            during=asked,
        )
        return Hits((yield from ask(call)), asked)

    # --- knowledge reads (the MCP server's tools): each answers as the caller, through RLS

    def get_fact(self, fact: UUID, *, groups: Sequence[str] | None = None) -> Plan[Fact]:
        """One fact with its citation (NotFoundError when the caller cannot read it)."""
        return (yield from ask(calls.get_fact(fact, groups)))

    def get_evidence(self, fact: UUID, *, groups: Sequence[str] | None = None) -> Plan[Evidence]:
        """Where a fact came from: source, episode, chunk text and the cited span."""
        return (yield from ask(calls.get_evidence(fact, groups)))

    def explain_fact(self, fact: UUID, *, groups: Sequence[str] | None = None) -> Plan[list[TimelineFact]]:
        """The fact, the statements supporting it, and the values it superseded or that superseded it."""
        return (yield from ask(calls.explain_fact(fact, groups)))

    def get_entity(
        self,
        name_or_id: str,
        *,
        groups: Sequence[str] | None = None,
        as_of: datetime | None = None,
        max_rows: int = 200,
    ) -> Plan[list[Entity]]:
        """The entity of that name (or id) in each group searched, its aliases and its facts then."""
        return (yield from ask(calls.get_entity(name_or_id, groups, as_of, max_rows)))

    def get_source(self, source: UUID, *, max_episodes: int = 100) -> Plan[SourceDetail]:
        """A source, its freshness and its versions (episodes), newest first."""
        return (yield from ask(calls.get_source(source, max_episodes)))

    def explore(
        self,
        entity: str,
        *,
        depth: int = 2,
        as_of: datetime | None = None,
        groups: Sequence[str] | None = None,
        max_rows: int = 100,
    ) -> Plan[list[ExploredFact]]:
        """Facts reached breadth-first from an entity, 1-5 hops (vera.explore's order)."""
        return (yield from ask(calls.explore(entity, depth, as_of, groups, max_rows)))

    def explore_graph(
        self,
        graph: GraphStore,
        entity: str,
        *,
        depth: int = 2,
        as_of: datetime | None = None,
        groups: Sequence[str] | None = None,
        max_rows: int = 100,
    ) -> Plan[list[ExploredFact]]:
        """explore's answer walked on the graph projection: the start entities and the rows
        (order, citations, what the caller may read) come from SQL, the walk from the graph."""
        if not 1 <= depth <= 5:
            raise InvalidArgumentError(f"depth must be between 1 and 5, got {depth}")
        starts = yield from ask(calls.explore_starts(entity, groups))
        # one instant for the walk and the re-check, as vera.explore uses one
        instant = as_of if as_of is not None else datetime.now(UTC)
        steps = yield from ask(Work(lambda: graph.explore(starts, depth, instant)))
        reached = [(step.fact_id, step.hop) for step in steps]
        return (yield from ask(calls.explore_facts(reached, instant, groups, max_rows)))

    def changes(
        self, since: datetime, *, max_rows: int = 100, groups: Sequence[str] | None = None
    ) -> Plan[list[FactChange]]:
        """Facts published, superseded or retracted after since, newest first."""
        return (yield from ask(calls.changes(since, max_rows, groups)))

    def conflicts(
        self, *, max_rows: int = 100, groups: Sequence[str] | None = None
    ) -> Plan[list[ConflictValue]]:
        """Competing values of functional predicates, side by side (one row per value)."""
        return (yield from ask(calls.conflicts(max_rows, groups)))

    # --- the caller's proposals

    def propose(
        self, subject: str, predicate: str, obj: str, evidence: str, for_group: str
    ) -> Plan[Proposal]:
        """A claim of the caller with its evidence: a proposal in its u: scope, for for_group's review."""
        return (yield from ask(calls.propose(subject, predicate, obj, evidence, for_group)))

    def retract_proposal(self, fact: UUID) -> Plan[RetractedProposal]:
        """Withdraw one of the caller's own live proposals."""
        return (yield from ask(calls.retract_proposal(fact)))

    def list_proposals(self, *, max_rows: int = 100) -> Plan[list[ProposalState]]:
        """The caller's own proposals, newest first, with their state."""
        return (yield from ask(calls.list_proposals(max_rows)))

    # --- context packs

    def get_context(
        self,
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
        _check_k(k)
        hits = yield from self.search(
            query, k=k, as_of=as_of, groups=groups, during=during, detect_time=detect_time
        )
        competing: list[ConflictValue] = []
        if any(hit.kind == "fact" for hit in hits):
            competing = yield from ask(calls.conflicts(1000, groups))
        counter = self.shared.token_counter
        pack = yield from ask(
            Work(
                lambda: assemble(
                    query=query,
                    hits=hits,
                    conflicts=competing,
                    count_tokens=counter.count,
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
            weights[group] = yield from ask(calls.active_weights(group))
        pack = replace(pack, weights=weights, during=hits.during)
        pack_id = yield from ask(calls.store_context_pack(pack))
        return (yield from self.get_context_pack(pack_id))

    def get_context_pack(self, pack: UUID) -> Plan[ContextPack]:
        """One of the caller's context packs (NotFoundError for anyone else's)."""
        return (yield from ask(calls.get_context_pack(pack)))

    def pack_feedback(self, pack: UUID, position: int, vote: str) -> Plan[Vote]:
        """'up' or 'down' on the item at a position of one of the caller's packs, as on a search hit."""
        stored = yield from self.get_context_pack(pack)
        search_text = stored.query
        vector, model = yield from self._query_vector(search_text, stored.groups)
        call = calls.record_pack_feedback(pack, position, vote, embedding=vector, embedding_model=model)
        return (yield from ask(call))
