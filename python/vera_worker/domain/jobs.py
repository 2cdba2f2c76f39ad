"""Names of the jobs that SQL enqueues in the same transaction as its writes
(the transactional outbox) and the worker runs."""

from __future__ import annotations

from enum import StrEnum


class JobName(StrEnum):
    """Procrastinate task names; SQL defers jobs by these exact strings."""

    PROJECT_TO_GRAPH = "vera.project_to_graph"
    EMBED = "vera.embed"
    JUDGE_EQUIVALENCE = "vera.judge_equivalence"
    JUDGE_CONTRADICTION = "vera.judge_contradiction"
    RETRACT_CLEANUP = "vera.retract_cleanup"
    INGEST_SOURCE = "vera.ingest_source"
