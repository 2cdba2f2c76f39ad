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
from vera_worker.adapters.ingestion import IngestRequest, SourceIngestion
from vera_worker.domain.jobs import JobName

logger = logging.getLogger(__name__)


def queue_of(job: JobName) -> str:
    """The queue SQL defers a task's jobs to: its name without the 'vera.' prefix."""
    return job.value.removeprefix("vera.")


# What this worker runs. Jobs of the other queues wait: embed and the judges
# need a principal to read facts under RLS and a model to call, which the jobs
# SQL defers do not carry yet.
SERVED_QUEUES = tuple(
    queue_of(job) for job in (JobName.INGEST_SOURCE, JobName.PROJECT_TO_GRAPH, JobName.RETRACT_CLEANUP)
)


def build_app(
    dsn: str,
    *,
    objects: ObjectStore,
    graph: GraphProjection | None = None,
    ingestion: SourceIngestion | None = None,
) -> procrastinate.App:
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

    @app.task(name=JobName.INGEST_SOURCE.value, queue=queue_of(JobName.INGEST_SOURCE), pass_context=False)
    def ingest_source(**args: Any) -> None:
        if ingestion is None:
            # raising keeps the job for a worker that can read sources
            raise RuntimeError("this worker was started without a source reader")
        ingestion.run(IngestRequest.from_job_args(args))

    @app.task(
        name=JobName.PROJECT_TO_GRAPH.value, queue=queue_of(JobName.PROJECT_TO_GRAPH), pass_context=False
    )
    def project_to_graph(**args: Any) -> None:
        if graph is None:
            # VERA_MEMORY__GRAPH_BACKEND=none: the facts live in PostgreSQL only; nothing to project
            logger.debug("project_to_graph %s: no graph backend configured", args.get("group_id"))
            return
        raise RuntimeError("graph projection is not implemented for the configured backend yet")

    return app


def drain(app: procrastinate.App) -> None:
    """Run every due job of the served queues in this process, then return (one-shot runs)."""
    app.run_worker(queues=list(SERVED_QUEUES), wait=False, concurrency=1, install_signal_handlers=False)
