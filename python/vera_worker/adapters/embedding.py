"""The embed job: facts published without a vector (from SQL, or from a
client without an embedder) get one from their group's pinned model, written
with the rights of the principal who published them. Without a vector a fact
is found by its words only, and passages that share the query's meaning
outrank it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from vera_client.adapters.postgres.executor import Executor
from vera_client.api import jobs as jobs_api
from vera_client.api import search as search_api
from vera_client.domain.callers import Principal
from vera_client.domain.errors import ProviderUnavailableError
from vera_client.domain.ports import Embedder
from vera_worker.adapters.usage import metered
from vera_worker.domain.jobs import EmbedJob

logger = logging.getLogger(__name__)

BATCH = 256  # texts per embedder request


class FactEmbedding:
    """Runs embed jobs through the worker's executor (role vera_worker)."""

    def __init__(self, sql: Executor, *, embedder_for_model: Callable[[str | None], Embedder | None]) -> None:
        self._sql = sql
        self._embedder_for_model = embedder_for_model

    def run(self, job: EmbedJob) -> int:
        """Embed the job's facts that still lack a vector; how many got one. Idempotent. What a
        hosted embedder's calls used is recorded for the group when it ends."""
        with metered(self._sql, job.group_id):
            return self._run(job)

    def _run(self, job: EmbedJob) -> int:
        caller = Principal(job.principal_id)
        # read, embed outside any transaction (a hosted model may take seconds), then write
        with self._sql.transaction(caller) as tx:
            pending = tx.run(jobs_api.facts_to_embed(job.group_id, job.fact_ids))
            pins = tx.run(search_api.pinned_models([job.group_id]))
        if not pending:
            return 0
        pinned = pins[0][0] if pins else None
        embedder = self._embedder_for_model(pinned)
        if embedder is None:
            # raising keeps the job for a worker configured with the group's model
            raise ProviderUnavailableError(
                f"no embedder here serves {job.group_id}'s pinned model {pinned}: configure it"
            )
        written = 0
        for first in range(0, len(pending), BATCH):
            batch = pending[first : first + BATCH]
            vectors = embedder.embed([text for _, text in batch])
            ids = [fact_id for fact_id, _ in batch]
            written += self._sql.run(
                caller, jobs_api.set_fact_embeddings(job.group_id, ids, vectors, embedder.model)
            )
        logger.info(
            "embed %s: %d of %d facts embedded by %s", job.group_id, written, len(pending), embedder.model
        )
        return written
