"""The Procrastinate app of the worker. Its schema lives in the
"procrastinate" PostgreSQL schema (installed by `vera db migrate`), and SQL
defers jobs into it from the same transactions as the writes they follow
(sql/functions/080_outbox.sql): one queue per task, named after it."""

from __future__ import annotations

import logging
from typing import Any

import procrastinate

from vera_client.domain.cleanup import RetractCleanup, run_retract_cleanup
from vera_client.domain.ports import GraphProjection, ObjectStore
from vera_worker.domain.jobs import JobName

logger = logging.getLogger(__name__)


def queue_of(job: JobName) -> str:
    """The queue SQL defers a task's jobs to: its name without the 'vera.' prefix."""
    return job.value.removeprefix("vera.")


def build_app(dsn: str, *, objects: ObjectStore, graph: GraphProjection | None = None) -> procrastinate.App:
    """A Procrastinate app on the job queue of the database at dsn (role vera_worker)."""
    connector = procrastinate.PsycopgConnector(
        conninfo=dsn,
        # Procrastinate's SQL uses unqualified names; its objects live in their own schema
        kwargs={"options": "-c search_path=procrastinate"},
    )
    app = procrastinate.App(connector=connector)

    @app.task(name=JobName.RETRACT_CLEANUP.value, queue=queue_of(JobName.RETRACT_CLEANUP), pass_context=False)
    def retract_cleanup(**args: Any) -> None:
        report = run_retract_cleanup(RetractCleanup.from_job_args(args), objects=objects, graph=graph)
        logger.info(
            "retract_cleanup %s: %d edges removed, %d objects deleted, %d already gone",
            args.get("group_id"),
            report.edges_removed,
            report.objects_deleted,
            report.objects_already_gone,
        )

    return app
