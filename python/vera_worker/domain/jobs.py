"""The jobs that SQL defers in the same transaction as its writes (the
transactional outbox) and the worker runs: their names, which SQL uses as
exact strings (pg_tests/jobs/test_jobs.py checks that both sides agree), and the
payloads the worker reads from them. Every job names the principal whose
request deferred it; the worker acts with that principal's rights."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from uuid import UUID

from vera_client.domain.errors import InvalidArgumentError


class JobName(StrEnum):
    """Procrastinate task names; SQL defers jobs by these exact strings, each to a queue
    named after it without the 'vera.' prefix."""

    PROJECT_TO_GRAPH = "vera.project_to_graph"
    EMBED = "vera.embed"
    JUDGE_EQUIVALENCE = "vera.judge_equivalence"
    JUDGE_CONTRADICTION = "vera.judge_contradiction"
    RETRACT_CLEANUP = "vera.retract_cleanup"
    INGEST_SOURCE = "vera.ingest_source"
    EXTRACT = "vera.extract"

    @property
    def queue(self) -> str:
        return self.value.removeprefix("vera.")


def _uuid(args: Mapping[str, object], name: str, job: JobName) -> UUID:
    value = args.get(name)
    try:
        return UUID(str(value))
    except ValueError:
        raise InvalidArgumentError(f"{job.value} job without a valid {name}: {value!r}") from None


def _group_facts(args: Mapping[str, object], job: JobName) -> tuple[str, tuple[UUID, ...]]:
    """The group and the fact ids a job names."""
    group_id, fact_ids = args.get("group_id"), args.get("fact_ids") or []
    if not isinstance(group_id, str) or not group_id:
        raise InvalidArgumentError(f"{job.value} job without a group_id")
    if not isinstance(fact_ids, list):
        raise InvalidArgumentError(f"{job.value} fact_ids must be a list of fact ids")
    return group_id, tuple(_uuid({"fact_id": f}, "fact_id", job) for f in fact_ids)


@dataclass(frozen=True, kw_only=True, slots=True)
class EmbedJob:
    """Facts written without a vector, to embed with their group's pinned model."""

    group_id: str
    principal_id: UUID
    fact_ids: tuple[UUID, ...]

    @classmethod
    def from_job_args(cls, args: Mapping[str, object]) -> EmbedJob:
        group_id, ids = _group_facts(args, JobName.EMBED)
        return cls(group_id=group_id, principal_id=_uuid(args, "principal_id", JobName.EMBED), fact_ids=ids)


@dataclass(frozen=True, kw_only=True, slots=True)
class ProjectJob:
    """Facts of one group whose graph edges to bring up to date (upsert what belongs, remove the rest).

    principal_id is None for work an operator deferred (no caller)."""

    group_id: str
    principal_id: UUID | None
    fact_ids: tuple[UUID, ...]

    @classmethod
    def from_job_args(cls, args: Mapping[str, object]) -> ProjectJob:
        group_id, ids = _group_facts(args, JobName.PROJECT_TO_GRAPH)
        principal = (
            _uuid(args, "principal_id", JobName.PROJECT_TO_GRAPH)
            if args.get("principal_id") is not None
            else None
        )
        return cls(group_id=group_id, principal_id=principal, fact_ids=ids)
