"""The two judges, run by the judge model for what the rules in SQL leave open.

Equivalence: a provisional entity (a name close to known entities by its
embedding, not close enough to link) and its candidates (semantic and trigram
neighbours, with aliases and facts) go to the model; "same entity" merges it
into the candidate it named, "not the same" activates it, both through
vera.settle_entity (audited). Contradiction: a new value of a multi-valued
predicate and the current values go to the model; "replaces" supersedes the
values it named through vera.replace_values (audited), "coexists" leaves them.

A verdict is stored with the model, the prompt version and the hash of the
inputs (vera.store_verdict), and looked up before the model is asked: a
replayed job acts on the same verdict without a model call. What the model
says is checked against the case (it may only name candidates or values it was
shown); anything else is no decision, and the entity stays provisional or the
values coexist, which is what SQL already stored.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.providers.chat import ChatModel
from vera_client.api import jobs as jobs_api
from vera_client.domain.callers import Principal
from vera_client.domain.errors import InvalidArgumentError, ProviderResponseError
from vera_worker.adapters.usage import metered
from vera_worker.domain.prompts import (
    CONTRADICTION_INSTRUCTIONS,
    CONTRADICTION_PROMPT_VERSION,
    CONTRADICTION_SCHEMA,
    EQUIVALENCE_INSTRUCTIONS,
    EQUIVALENCE_PROMPT_VERSION,
    EQUIVALENCE_SCHEMA,
    judge_input,
)

logger = logging.getLogger(__name__)

# a job names at most this many entities or facts; more are a malformed job
MAX_ITEMS_PER_JOB = 10_000


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgeJob:
    """A judge job's group, principal, and the entity ids (equivalence) or fact ids (contradiction)."""

    group_id: str
    principal_id: UUID
    ids: tuple[UUID, ...]

    @classmethod
    def equivalence(cls, args: Mapping[str, Any]) -> JudgeJob:
        entities = args.get("entities") or []
        if not isinstance(entities, list):
            raise InvalidArgumentError("vera.judge_equivalence entities must be a list")
        ids = [e.get("entity_id") if isinstance(e, dict) else None for e in entities]
        return cls._of(args, ids, "vera.judge_equivalence")

    @classmethod
    def contradiction(cls, args: Mapping[str, Any]) -> JudgeJob:
        fact_ids = args.get("fact_ids") or []
        if not isinstance(fact_ids, list):
            raise InvalidArgumentError("vera.judge_contradiction fact_ids must be a list")
        return cls._of(args, fact_ids, "vera.judge_contradiction")

    @classmethod
    def _of(cls, args: Mapping[str, Any], ids: list[Any], job: str) -> JudgeJob:
        group_id = args.get("group_id")
        if not isinstance(group_id, str) or not group_id:
            raise InvalidArgumentError(f"{job} job without a group_id")
        if len(ids) > MAX_ITEMS_PER_JOB:
            raise InvalidArgumentError(f"{job} job with {len(ids)} items, over {MAX_ITEMS_PER_JOB}")
        try:
            principal = UUID(str(args.get("principal_id")))
            parsed = tuple(dict.fromkeys(UUID(str(i)) for i in ids))
        except ValueError:
            raise InvalidArgumentError(f"{job} job with an invalid principal or item id") from None
        return cls(group_id=group_id, principal_id=principal, ids=parsed)


@dataclass(slots=True)
class JudgeReport:
    cases: int = 0
    model_calls: int = 0
    reused: int = 0
    decided: dict[str, int] | None = None

    def count(self, outcome: str) -> None:
        self.decided = self.decided or {}
        self.decided[outcome] = self.decided.get(outcome, 0) + 1


def inputs_hash(case: Mapping[str, Any]) -> bytes:
    """The SHA-256 of a case in canonical JSON: the same inputs, the same key."""
    return hashlib.sha256(
        json.dumps(case, sort_keys=True, separators=(",", ":"), default=str).encode()
    ).digest()


@dataclass(frozen=True, slots=True)
class _Session:
    """One job's way into SQL, acting as the job's principal in its group."""

    sql: Executor
    caller: Principal
    group: str


class Judges:
    """Runs judge jobs through the worker's executor (role vera_worker) with the judge model."""

    def __init__(self, sql: Executor, *, model: ChatModel) -> None:
        self._sql = sql
        self._model = model

    def equivalence(self, job: JudgeJob) -> JudgeReport:
        """Settles each provisional entity of the job (those settled meanwhile are skipped)."""
        report = JudgeReport()
        session = _Session(self._sql, Principal(job.principal_id), job.group_id)
        with metered(self._sql, job.group_id):
            for entity_id in job.ids:
                self._settle(session, entity_id, report)
        self._log("equivalence", job, report)
        return report

    def contradiction(self, job: JudgeJob) -> JudgeReport:
        """Judges each new value of the job against the current values of its subject and predicate."""
        report = JudgeReport()
        session = _Session(self._sql, Principal(job.principal_id), job.group_id)
        with metered(self._sql, job.group_id):
            for fact_id in job.ids:
                self._contradict(session, fact_id, report)
        self._log("contradiction", job, report)
        return report

    def _settle(self, session: _Session, entity_id: UUID, report: JudgeReport) -> None:
        with session.sql.transaction(session.caller) as tx:
            case = tx.run(jobs_api.equivalence_case(session.group, entity_id))
        if case is None:
            return  # no longer provisional (settled, merged) or not the caller's to see
        report.cases += 1
        candidates = {str(c["entity_id"]) for c in case["candidates"]}
        verdict: dict[str, Any] | None
        if candidates:
            verdict = self._verdict(session, "equivalence", case, report)
        else:
            verdict = {"same_entity": False, "entity_id": None, "reason": "no candidate entity is close"}
        decided, same_as = _same_as(verdict, candidates)
        if verdict is None or not decided:
            report.count("undecided")
            return  # stays provisional: a separate entity, never a wrong merge
        reason = str(verdict.get("reason", ""))[:1000]
        with session.sql.transaction(session.caller) as tx:
            outcome = tx.run(
                jobs_api.settle_entity(
                    session.group,
                    entity_id,
                    same_as,
                    reason,
                    model=self._model.model,
                    prompt_version=EQUIVALENCE_PROMPT_VERSION,
                )
            )
        report.count(outcome)

    def _contradict(self, session: _Session, fact_id: UUID, report: JudgeReport) -> None:
        with session.sql.transaction(session.caller) as tx:
            case = tx.run(jobs_api.contradiction_case(session.group, fact_id))
        if case is None:
            return  # no longer a published value with others beside it
        report.cases += 1
        verdict = self._verdict(session, "contradiction", case, report)
        replaced = _replaced(verdict, {str(v["fact_id"]) for v in case["current"]})
        if verdict is None or replaced is None:
            report.count("undecided")
            return
        if not replaced:
            report.count("coexists")
            return
        reason = str(verdict.get("reason", ""))[:1000]
        with session.sql.transaction(session.caller) as tx:
            count = tx.run(
                jobs_api.replace_values(
                    session.group,
                    fact_id,
                    replaced,
                    reason,
                    model=self._model.model,
                    prompt_version=CONTRADICTION_PROMPT_VERSION,
                )
            )
        report.count("replaces" if count else "unchanged")

    def _verdict(
        self, session: _Session, judge: str, case: dict[str, Any], report: JudgeReport
    ) -> dict[str, Any] | None:
        """The stored verdict on this case, else the model's (stored first); None if that is unusable."""
        key = inputs_hash(case)
        model = self._model.model
        version = EQUIVALENCE_PROMPT_VERSION if judge == "equivalence" else CONTRADICTION_PROMPT_VERSION
        with session.sql.transaction(session.caller) as tx:
            stored = tx.run(jobs_api.judge_verdict(session.group, judge, key, model, version))
        if stored is not None:
            report.reused += 1
            return dict(stored)
        instructions, schema = (
            (EQUIVALENCE_INSTRUCTIONS, EQUIVALENCE_SCHEMA) if judge == "equivalence"
            else (CONTRADICTION_INSTRUCTIONS, CONTRADICTION_SCHEMA)
        )  # fmt: skip
        report.model_calls += 1
        try:
            answer = self._model.complete_json(
                system=instructions, user=judge_input(case), schema=schema, schema_name=judge, operation=judge
            )
        except ProviderResponseError as exc:
            # an unusable answer (or a refusal) decides nothing; a model that is away
            # (unavailable, rate-limited, timing out) fails the job, which is retried
            logger.warning("judge_%s %s: no usable verdict: %s", judge, session.group, exc)
            return None
        verdict = {k: answer.data[k] for k in schema["required"] if k in answer.data}
        if set(verdict) != set(schema["required"]):
            logger.warning(
                "judge_%s %s: the verdict lacks fields: %s", judge, session.group, sorted(answer.data)[:5]
            )
            return None
        with session.sql.transaction(session.caller) as tx:
            kept = tx.run(
                jobs_api.store_verdict(
                    session.group, judge, key, verdict, model=model, prompt_version=version
                )
            )
        return dict(kept)

    def _log(self, judge: str, job: JudgeJob, report: JudgeReport) -> None:
        logger.info(
            "judge_%s %s: %d cases, %d model calls, %d reused, %s; %s",
            judge, job.group_id, report.cases, report.model_calls, report.reused, report.decided or {},
            self._model.spent(),
        )  # fmt: skip


def _same_as(verdict: Mapping[str, Any] | None, candidates: set[str]) -> tuple[bool, UUID | None]:
    """Whether the verdict decides, and the candidate to merge into (None: activate)."""
    if verdict is None:
        return False, None
    same = verdict.get("same_entity")
    if same is False:
        return True, None
    named = verdict.get("entity_id")
    if same is True and isinstance(named, str) and named in candidates:
        return True, UUID(named)
    return False, None  # "same" as something it was not shown, or not a boolean: no decision


def _replaced(verdict: Mapping[str, Any] | None, current: set[str]) -> list[UUID] | None:
    """The values to supersede ([] for coexists), or None when the verdict decides nothing."""
    if verdict is None:
        return None
    kind, named = verdict.get("verdict"), verdict.get("replaced")
    if kind == "coexists":
        return []
    if kind != "replaces" or not isinstance(named, list) or not named:
        return None
    if not all(isinstance(n, str) and n in current for n in named):
        return None  # it named a value it was not shown
    return [UUID(n) for n in dict.fromkeys(named)]
