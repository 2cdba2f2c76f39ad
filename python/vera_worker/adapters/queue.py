"""The Procrastinate app of the worker. Its schema lives in the
"procrastinate" PostgreSQL schema (installed by `vera db migrate`), and SQL
defers jobs into it from the same transactions as the writes they follow
(sql/functions/080_outbox.sql): one queue per task, named after it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import procrastinate

from vera_client.api.weights import ScheduledCalibration
from vera_client.domain.cleanup import RetractCleanup, run_retract_cleanup
from vera_client.domain.errors import DatabaseUnavailableError, ProviderUnavailableError
from vera_client.domain.ports import GraphStore, ObjectStore
from vera_worker.adapters.embedding import FactEmbedding
from vera_worker.adapters.extraction import ExtractJob, PassageExtraction
from vera_worker.adapters.judges import JudgeJob, Judges
from vera_worker.connectors.dispatch import IngestRequest
from vera_worker.connectors.events import IngestReport
from vera_worker.domain.jobs import EmbedJob, JobName, ProjectJob
from vera_worker.graph.projection import GraphProjection

logger = logging.getLogger(__name__)


# The worker serves every queue SQL defers into (pg_tests/jobs/test_jobs.py runs one job of each kind
# through a real worker process).
SERVED_QUEUES = tuple(job.queue for job in JobName)

# The periodic graph check (a worker with a graph backend defers it itself; see build_app).
GRAPH_CHECK_TASK = "vera_worker.graph_check"
GRAPH_CHECK_QUEUE = "graph_check"
GRAPH_CHECK_CRON = "*/10 * * * *"  # every ten minutes

# The scheduled calibration of the groups' ranking weights (VERA_WORKER__CALIBRATION_SCHEDULE).
CALIBRATION_TASK = "vera_worker.calibrate_weights"
CALIBRATION_QUEUE = "calibration"

# The connectors' schedule: every minute, a run of each source whose interval_s has passed is queued
# (vera.request_due_ingests; `vera source add --interval`).
SOURCE_SCHEDULE_TASK = "vera_worker.source_schedule"
SOURCE_SCHEDULE_QUEUE = "source_schedule"
SOURCE_SCHEDULE_CRON = "* * * * *"


class Ingestion(Protocol):
    """What runs an ingest_source job (connectors/dispatch.py's SourceRuns)."""

    def run(self, request: IngestRequest, should_stop: Callable[[], bool] = ...) -> IngestReport: ...


# Procrastinate's SQL uses unqualified names; its objects live in their own schema
_PROCRASTINATE_PATH = "-c search_path=procrastinate"

_RETRY_WHEN_AWAY = procrastinate.RetryStrategy(
    max_attempts=10, exponential_wait=2, retry_exceptions={ProviderUnavailableError, DatabaseUnavailableError}
)


class StoppedForShutdown(Exception):
    """An ingest run that ended after the file in hand because its worker is shutting down."""


# An ingest run cut short by its worker's shutdown is retried like one the database cut short:
# by this worker once it runs again, or by another; its cursor makes the next run read only
# what this one did not.
_INGEST_RETRY = procrastinate.RetryStrategy(
    max_attempts=10,
    exponential_wait=2,
    retry_exceptions={ProviderUnavailableError, DatabaseUnavailableError, StoppedForShutdown},
)


def build_app(
    dsn: str,
    *,
    objects: ObjectStore,
    projection: GraphProjection | None = None,
    ingestion: Ingestion | None = None,
    embedding: FactEmbedding | None = None,
    graph_check_cron: str | None = GRAPH_CHECK_CRON,
    extraction: PassageExtraction | None = None,
    judges: Judges | None = None,
    record_behind: Callable[[str, int], None] | None = None,
    calibration: Callable[[], Sequence[ScheduledCalibration]] | None = None,
    calibration_cron: str | None = None,
    request_due_ingests: Callable[[], Sequence[Any]] | None = None,
    source_schedule_cron: str | None = SOURCE_SCHEDULE_CRON,
) -> procrastinate.App:
    """A Procrastinate app on the job queue of the database at dsn (role vera_worker).

    Without a projection (no graph configured, none beside an embedded database) facts live in
    PostgreSQL only: project_to_graph jobs are done at once, each recording (record_behind) that
    the group's graph is behind, which `vera graph check` and `vera db status` show, and a group's
    first with a warning; nothing is checked."""
    graph: GraphStore | None = projection.graph if projection is not None else None
    connector = procrastinate.PsycopgConnector(
        conninfo=dsn,
        kwargs={"options": _PROCRASTINATE_PATH},
    )
    app = procrastinate.App(connector=connector)

    @app.task(name=JobName.RETRACT_CLEANUP.value, queue=JobName.RETRACT_CLEANUP.queue, pass_context=False)
    def retract_cleanup(**args: Any) -> None:
        # (the values the withdrawn facts had superseded are re-projected by the project_to_graph
        # job the retraction deferred beside this one)
        report = run_retract_cleanup(RetractCleanup.from_job_args(args), objects=objects, graph=graph)
        logger.info(
            "retract_cleanup %s: %d edges removed, %d objects deleted, %d already gone",
            args.get("group_id"),
            report.edges_removed,
            report.objects_deleted,
            report.objects_already_gone,
        )

    # A run that stopped because the database or the embedder was away is retried like an
    # embed job (the cursor makes a second run read only what the first did not finish);
    # one that failed for its own reasons (a missing folder, a refused root) is not.
    # A worker told to stop (SIGINT/SIGTERM) flags its running jobs at once (see serve): an
    # ingest run then ends after the file in hand, and the job is queued again.
    @app.task(
        name=JobName.INGEST_SOURCE.value, queue=JobName.INGEST_SOURCE.queue, pass_context=True,
        retry=_INGEST_RETRY,
    )  # fmt: skip
    def ingest_source(context: procrastinate.JobContext, /, **args: Any) -> None:
        if ingestion is None:  # the job fails: this worker was built to run other queues only
            raise RuntimeError("this worker was started without a source reader")
        request = IngestRequest.from_job_args(args)
        report = ingestion.run(request, should_stop=context.should_abort)
        # the text this run wrote goes to the extraction model, and only it: passages stored
        # before (say, while no model was configured) wait for `vera extract --backlog`
        if extraction is not None and report.episodes:
            extraction.request(request.group_id, request.principal_id, report.episodes)
        if report.stopped and context.should_abort():
            raise StoppedForShutdown(
                f"{report.source}: stopped after the file in hand, the worker is stopping"
            )

    # Without a model configured (VERA_LLM__BASE_URL) free-text extraction is off: the job is done.
    @app.task(
        name=JobName.EXTRACT.value, queue=JobName.EXTRACT.queue, pass_context=False, retry=_RETRY_WHEN_AWAY
    )
    def extract(**args: Any) -> None:
        if extraction is None:
            logger.info(
                "extract %s: no extraction model configured; passages stay passages", args.get("group_id")
            )
            return
        extraction.run(ExtractJob.from_job_args(args))

    # A graph server that is away is retried like an embedder (the job reads the facts' state
    # when it runs, so a late run projects what holds then).
    unprojected_groups: set[str] = set()

    @app.task(
        name=JobName.PROJECT_TO_GRAPH.value, queue=JobName.PROJECT_TO_GRAPH.queue, pass_context=False,
        retry=_RETRY_WHEN_AWAY,
    )  # fmt: skip
    def project_to_graph(**args: Any) -> None:
        job = ProjectJob.from_job_args(args)
        if projection is None:
            # No graph here (none configured, no demo's beside the database): the facts live in
            # PostgreSQL only. Not silently: a graph this worker does not know of falls behind,
            # which `vera graph check` shows as drift and `vera graph rebuild` repairs (docs/graph.md).
            log = logger.info if job.group_id in unprojected_groups else logger.warning  # once a group
            unprojected_groups.add(job.group_id)
            log(
                "project_to_graph %s: %d facts not projected, no graph configured here "
                "(VERA_MEMORY__GRAPH_BACKEND); a graph of this group elsewhere is now behind: "
                "vera graph rebuild --group %s",
                job.group_id,
                len(job.fact_ids),
                job.group_id,
            )
            if record_behind is not None:
                record_behind(job.group_id, len(job.fact_ids))
            return
        projection.project(job)

    # The periodic check: every group's graph against PostgreSQL, recorded for `vera db status`
    # and the worker's metrics (vera_graph_drift). Not a job SQL defers: no principal, its own queue.
    if projection is not None and graph_check_cron is not None:

        @app.periodic(cron=graph_check_cron, periodic_id="graph_check")
        @app.task(name=GRAPH_CHECK_TASK, queue=GRAPH_CHECK_QUEUE, pass_context=False)
        def graph_check(timestamp: int) -> None:
            checks = projection.check_all()
            drifted = [check.result.group_id for check in checks if check.drifted]
            logger.info("graph check: %d groups, %d with drift %s", len(checks), len(drifted), drifted or "")

    if calibration is not None and calibration_cron is not None:
        _schedule_calibration(app, calibration, calibration_cron)

    _schedule_sources(app, request_due_ingests, source_schedule_cron)

    # An embedder or database that is away is retried with growing waits (2 s .. ~17 min, about
    # half an hour in all), so a hosted model's outage does not leave facts without vectors.
    @app.task(name=JobName.EMBED.value, queue=JobName.EMBED.queue, pass_context=False, retry=_RETRY_WHEN_AWAY)
    def embed(**args: Any) -> None:
        if embedding is None:
            raise ProviderUnavailableError("this worker was started without an embedder")
        embedding.run(EmbedJob.from_job_args(args))

    # The judges decide what the rules in SQL leave open: whether a provisional entity is the
    # same as a candidate, whether two values of a multi-valued predicate contradict. Until a
    # judge model is configured (an LLM worker), a judge decides nothing: the entity stays
    # provisional (a separate entity, never a wrong merge) and the values coexist, which is
    # what SQL already stored. The job is done; a judge added later re-examines what is open.
    @app.task(name=JobName.JUDGE_EQUIVALENCE.value, queue=JobName.JUDGE_EQUIVALENCE.queue, pass_context=False,
              retry=_RETRY_WHEN_AWAY)  # fmt: skip
    def judge_equivalence(**args: Any) -> None:
        if judges is None:
            logger.info("judge_equivalence %s: no judge model configured; entities stay provisional",
                        args.get("group_id"))  # fmt: skip
            return
        judges.equivalence(JudgeJob.equivalence(args))

    @app.task(name=JobName.JUDGE_CONTRADICTION.value, queue=JobName.JUDGE_CONTRADICTION.queue,
              pass_context=False, retry=_RETRY_WHEN_AWAY)  # fmt: skip
    def judge_contradiction(**args: Any) -> None:
        if judges is None:
            logger.info(
                "judge_contradiction %s: no judge model configured; values coexist", args.get("group_id")
            )
            return
        judges.contradiction(JudgeJob.contradiction(args))

    return app


def _schedule_calibration(
    app: procrastinate.App, calibration: Callable[[], Sequence[ScheduledCalibration]], cron: str
) -> None:
    """The scheduled calibration: every group with calibration on and enough votes since its last
    calibrated set (sql/functions/195_weights.sql decides, and guards the weights). Its own queue."""

    @app.periodic(cron=cron, periodic_id="calibration")
    @app.task(name=CALIBRATION_TASK, queue=CALIBRATION_QUEUE, pass_context=False)
    def calibrate_weights(timestamp: int) -> None:
        looked = calibration()
        ran = [row.group_id for row in looked if row.calibrated]
        kept = [row.group_id for row in looked if row.persisted]
        logger.info(
            "calibration: %d groups with votes, %d calibrated, %d kept a new weight set %s",
            len(looked), len(ran), len(kept), kept or "",
        )  # fmt: skip


def _schedule_sources(
    app: procrastinate.App, request_due: Callable[[], Sequence[Any]] | None, cron: str | None
) -> None:
    """The connectors' schedule, when both are given: queues the due sources' runs (each an
    ingest_source job for the principal who registered the source); not a job SQL defers: no
    principal, its own queue."""
    if request_due is None or cron is None:
        return

    @app.periodic(cron=cron, periodic_id="source_schedule")
    @app.task(name=SOURCE_SCHEDULE_TASK, queue=SOURCE_SCHEDULE_QUEUE, pass_context=False)
    def source_schedule(timestamp: int) -> None:
        queued = request_due()
        if queued:
            logger.info("source schedule: queued %d due sources", len(queued))


def served_queues(app: procrastinate.App) -> tuple[str, ...]:
    """The queues a worker of app serves by default: every queue SQL defers into, and the
    periodic graph check's when app has it (a worker with a graph backend), and the scheduled
    calibration's and the connectors' schedule's when app has them."""
    periodic = (
        ((GRAPH_CHECK_QUEUE,) if GRAPH_CHECK_TASK in app.tasks else ())
        + ((CALIBRATION_QUEUE,) if CALIBRATION_TASK in app.tasks else ())
        + ((SOURCE_SCHEDULE_QUEUE,) if SOURCE_SCHEDULE_TASK in app.tasks else ())
    )
    return SERVED_QUEUES + periodic
