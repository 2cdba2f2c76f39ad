"""The extract job: claims from free-text passages, by the extraction model.

For each passage of the group not yet through the configured model version, the
worker looks up a stored extraction of the same text (by hash: unchanged text,
or the same paragraph in a new version of a file, calls no model), else asks the
model with the group's ontology and most relevant entity names, validates the
answer (extracted_claims: spans checked against the text, unknown fields and
runaway answers dropped and counted), and publishes the claims through
vera.publish_claims as the principal whose request started the work, citing the
passage and span. The source's tier decides publish, review or proposal exactly
as for structured claims; a claim with a predicate the group does not have is a
proposal, and so is one whose span does not name its subject and object (SQL's rule,
docs/extraction.md "A claim needs a quote"). Subject names and fact texts go with vectors from the group's
embedder, so the semantic rung of entity resolution runs on them.

The extraction and the passage's record are written in one transaction, so a
replayed job neither asks the model again nor publishes twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.providers.chat import ChatModel
from vera_client.api import curation as curation_api
from vera_client.api import jobs as jobs_api
from vera_client.api import search as search_api
from vera_client.api import sources as sources_api
from vera_client.api.jobs import ExtractionContext, PassageToExtract
from vera_client.domain.callers import Principal
from vera_client.domain.errors import (
    InvalidArgumentError,
    ProviderRateLimitedError,
    ProviderResponseError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    VeraError,
)
from vera_client.domain.ports import Embedder
from vera_worker.adapters.usage import metered
from vera_worker.domain.extracted_claims import validate_extraction
from vera_worker.domain.extraction_estimate import extraction_model_version
from vera_worker.domain.prompts import (
    EXTRACTION_INSTRUCTIONS,
    EXTRACTION_SCHEMA,
    extraction_input,
)

logger = logging.getLogger(__name__)

# passages read per round; each is committed on its own
BATCH = 50
# episodes per extract job an ingestion run queues (vera.request_episode_extraction takes 1,000)
EPISODES_PER_JOB = 1000
# entity names offered to the model per passage
PROMPT_ENTITIES = 50

EmbedderForModel = Callable[[str | None], Embedder | None]


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractJob:
    """Extract the group's passages: those no model has seen, or (redo) those the current version
    has not; with episodes, only those episodes' passages no model has seen (an ingestion's)."""

    group_id: str
    principal_id: UUID
    redo: bool = False
    episodes: tuple[UUID, ...] | None = None

    @classmethod
    def from_job_args(cls, args: Mapping[str, object]) -> ExtractJob:
        group_id, redo, episodes = args.get("group_id"), args.get("redo", False), args.get("episodes")
        if not isinstance(group_id, str) or not group_id:
            raise InvalidArgumentError("vera.extract job without a group_id")
        try:
            principal = UUID(str(args.get("principal_id")))
            scope = None if episodes is None else tuple(UUID(str(e)) for e in episodes)  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            raise InvalidArgumentError("vera.extract job without a valid principal_id or episodes") from None
        return cls(group_id=group_id, principal_id=principal, redo=bool(redo), episodes=scope)


@dataclass(frozen=True, slots=True)
class ExtractionEvent:
    """Progress of an extract job, for a progress line: passages done of total (0: not counted)."""

    group_id: str
    done: int
    total: int
    facts: int


@dataclass(slots=True)
class ExtractionReport:
    group_id: str = ""
    passages: int = 0
    model_calls: int = 0
    reused: int = 0
    facts: int = 0
    dropped: int = 0
    failed: int = 0
    skipped: int = 0  # done by another job running at the same time


class PassageExtraction:
    """Runs extract jobs through the worker's executor (role vera_worker) with one chat model."""

    def __init__(
        self,
        sql: Executor,
        *,
        model: ChatModel,
        embedder_for_model: EmbedderForModel,
        max_claims_per_passage: int = 50,
        on_progress: Callable[[ExtractionEvent], None] | None = None,
        on_report: Callable[[ExtractionReport], None] | None = None,
    ) -> None:
        self._on_progress = on_progress
        self._on_report = on_report
        self._sql = sql
        self._model = model
        self._embedder_for_model = embedder_for_model
        self._max_claims = max_claims_per_passage

    @property
    def model_version(self) -> str:
        """What a stored extraction is keyed by: the model and the prompt's version."""
        return extraction_model_version(self._model.model)

    def request(self, group_id: str, principal_id: UUID, episodes: Sequence[UUID]) -> list[int]:
        """Queue extract jobs for the episodes an ingestion run just stored (their passages only,
        never the group's older backlog: `vera extract --backlog`), as its principal; the job ids."""
        parts = [episodes[i : i + EPISODES_PER_JOB] for i in range(0, len(episodes), EPISODES_PER_JOB)]
        return [
            self._sql.run(Principal(principal_id), sources_api.request_episode_extraction(group_id, part))
            for part in parts
        ]

    def _batch(self, caller: Principal, job: ExtractJob) -> list[PassageToExtract]:
        group, version = job.group_id, self.model_version
        if job.episodes is not None:
            scoped = jobs_api.episode_passages_to_extract(group, version, job.episodes, BATCH)
            return self._sql.run(caller, scoped)
        return self._sql.run(caller, jobs_api.passages_to_extract(group, version, job.redo, BATCH))

    def run(self, job: ExtractJob) -> ExtractionReport:
        """Extract every passage the job covers; idempotent. What its model calls (and the
        embeddings of its claims) used is recorded for the group when it ends."""
        with metered(self._sql, job.group_id):
            return self._run(job)

    def _run(self, job: ExtractJob) -> ExtractionReport:
        report = ExtractionReport(group_id=job.group_id)
        caller = Principal(job.principal_id)
        seen: set[UUID] = set()
        pins = self._sql.run(caller, search_api.pinned_models([job.group_id]))
        embedder = self._embedder_for_model(pins[0][0] if pins else None)
        total = 0
        if self._on_progress is not None and job.episodes is None:  # a backlog: say how far along
            total = self._sql.run(
                caller, sources_api.extraction_backlog(job.group_id, self.model_version, redo=job.redo)
            ).passages
        while True:
            fresh = [p for p in self._batch(caller, job) if p.chunk_id not in seen]
            if not fresh:
                break  # done (or only passages this run could not record: never loop on them)
            for passage in fresh:
                seen.add(passage.chunk_id)
                self._extract(passage, caller=caller, job=job, embedder=embedder, report=report)
                if self._on_progress is not None:
                    self._on_progress(ExtractionEvent(job.group_id, report.passages, total, report.facts))
        logger.info(
            "extract %s: %d passages, %d model calls, %d reused, %d facts, %d claims dropped, %d failed; %s",
            job.group_id, report.passages, report.model_calls, report.reused, report.facts, report.dropped,
            report.failed, self._model.spent(),
        )  # fmt: skip
        if self._on_report is not None:
            self._on_report(report)
        return report

    def _extract(
        self,
        passage: PassageToExtract,
        *,
        caller: Principal,
        job: ExtractJob,
        embedder: Embedder | None,
        report: ExtractionReport,
    ) -> None:
        report.passages += 1
        group = job.group_id
        with self._sql.transaction(caller) as tx:
            stored = tx.run(
                jobs_api.extraction_run(
                    group, passage.content_sha256, self.model_version, any_model=not job.redo
                )
            )
            # asked again (vera reprocess), a failed extraction is tried anew
            if stored is not None and stored.outcome == "failed" and job.redo:
                stored = None
            context = None if stored is not None else tx.run(
                jobs_api.extraction_context(group, passage.text, PROMPT_ENTITIES)
            )  # fmt: skip
        if stored is not None:
            report.reused += 1
            version, outcome, claims = stored.model_version, stored.outcome, stored.claims
            detail: str | None = None
            dropped = 0
        else:
            assert context is not None
            version = self.model_version
            report.model_calls += 1
            outcome, claims, detail, dropped = self._ask(passage, context)
            if detail:
                logger.warning("extract %s: passage %s: %s", group, passage.chunk_id, detail)
        report.dropped += dropped
        if outcome == "failed":
            report.failed += 1
        publishable = [self._cited(claim, passage) for claim in claims]
        self._embed(publishable, embedder)
        model = embedder.model if embedder is not None and publishable else None
        try:
            with self._sql.transaction(caller) as tx:
                if not tx.run(jobs_api.take_passage(group, passage.chunk_id, self.model_version, job.redo)):
                    report.skipped += 1  # another job extracted it meanwhile: never publish twice
                    return
                published = (
                    tx.run(curation_api.publish_claims(group, passage.episode_id, publishable, model))
                    if publishable else []
                )  # fmt: skip
                tx.run(jobs_api.record_extraction(
                    group, passage.chunk_id, passage.content_sha256, version, outcome=outcome, claims=claims,
                    dropped=dropped, detail=detail, facts=len(published),
                ))  # fmt: skip
        except (ProviderUnavailableError, ProviderRateLimitedError, ProviderTimeoutError):
            raise
        except VeraError as exc:
            # SQL refused the claims (a rule the validation does not know): recorded as failed, not stored
            report.failed += 1
            logger.warning("extract %s: passage %s: publishing refused: %s", group, passage.chunk_id, exc)
            with self._sql.transaction(caller) as tx:
                tx.run(jobs_api.record_extraction(
                    group, passage.chunk_id, passage.content_sha256, version, outcome="failed", claims=[],
                    dropped=len(claims), detail=f"publish_claims refused: {exc}"[:1000], facts=0,
                ))  # fmt: skip
            return
        report.facts += len(published)

    def _ask(
        self, passage: PassageToExtract, context: ExtractionContext
    ) -> tuple[str, list[dict[str, Any]], str | None, int]:
        """The model's claims for a passage, validated: (outcome, claims, detail, dropped)."""
        try:
            answer = self._model.complete_json(
                system=EXTRACTION_INSTRUCTIONS,
                user=extraction_input(passage.text, context.predicates, context.entities),
                schema=EXTRACTION_SCHEMA,
                schema_name="claims",
                operation="extract",
            )
            extraction = validate_extraction(
                answer.data, passage.text,
                known_predicates={p["name"] for p in context.predicates}, max_claims=self._max_claims,
            )  # fmt: skip
        except (ProviderUnavailableError, ProviderRateLimitedError, ProviderTimeoutError):
            raise  # the model is away: the job is retried later, from this passage on
        except (ProviderResponseError, ValueError) as exc:
            # an unusable answer is recorded as failed (so it is not asked again in a loop), never stored
            return "failed", [], str(exc)[:1000], 0
        return "extracted", extraction.claims, extraction.detail, extraction.dropped

    @staticmethod
    def _cited(claim: Mapping[str, Any], passage: PassageToExtract) -> dict[str, Any]:
        """A stored claim as published: citing the passage (its ordinal in the episode) and its span."""
        cited = dict(claim)
        cited["chunk"] = passage.ordinal
        # the SQL API's default fact text, spelled out so that its vector matches it
        cited["fact_text"] = (
            f"{claim['subject']} {claim['predicate'].lower().replace('_', ' ')} {claim['object']}"
        )
        return cited

    @staticmethod
    def _embed(claims: list[dict[str, Any]], embedder: Embedder | None) -> None:
        """Fact and subject vectors, so that search finds the facts by meaning and the semantic rung
        of entity resolution compares the subjects' names."""
        if embedder is None or not claims:
            return
        texts = [c["fact_text"] for c in claims] + [c["subject"] for c in claims]
        vectors = embedder.embed(texts)
        for claim, fact_vector, subject_vector in zip(
            claims, vectors[: len(claims)], vectors[len(claims) :], strict=True
        ):
            claim["embedding"] = fact_vector
            claim["subject_embedding"] = subject_vector
