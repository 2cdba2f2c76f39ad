"""Running a worker of the app that queue.py builds: `serve` (the long-running worker, with
its watchers of stalled jobs and of the queues' backlog), `drain` (every due job once, then
return: one-shot runs), and the retry of jobs left `doing` by a worker that is gone."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import procrastinate
import psycopg
from procrastinate import exceptions as procrastinate_exceptions
from procrastinate import sql as procrastinate_sql

from vera_worker.adapters.queue import SERVED_QUEUES
from vera_worker.adapters.queue_metrics import DEFAULT_INTERVAL_SECONDS, BacklogMonitor

logger = logging.getLogger(__name__)


# Jobs are found by polling, never through LISTEN/NOTIFY: the queue's notification channels
# are open to every connection of the database (any tenant could listen to or forge them),
# so `vera db migrate` drops Procrastinate's notify triggers (sql/meta/procrastinate_after.sql).
POLL = {"listen_notify": False, "fetch_job_polling_interval": 1.0}


def worker_options(stalled_after: float) -> dict[str, Any]:
    """How a worker of this app runs: polling (above), and a heartbeat well inside stalled_after,
    so that only a worker that is gone (killed, its machine lost) looks stalled."""
    return {**POLL, "update_heartbeat_interval": stalled_after / 3, "stalled_worker_timeout": stalled_after}


def drain(
    app: procrastinate.App, *, stalled_after: float = 30.0, queues: Sequence[str] = SERVED_QUEUES
) -> None:
    """Run every due job of the queues (default: all served) in this process, then return
    (one-shot runs)."""
    app.run_worker(
        queues=list(queues),
        wait=False,
        concurrency=1,
        install_signal_handlers=False,
        **worker_options(stalled_after),
    )


async def retry_stalled_jobs(app: procrastinate.App, stalled_after: float) -> list[int]:
    """Queue again every job left `doing` by a worker that has sent no heartbeat for
    stalled_after seconds (Procrastinate's get_stalled_jobs); the ids of the jobs retried.

    Every worker checks, so two may find the same job: each retries it in a transaction that
    first locks the job row and checks that it is still `doing` for the worker that left it
    (SKIP LOCKED: a job another worker is retrying is left to it). A job retried and picked
    up again names its new worker, so it is never retried twice. The tasks are idempotent
    (ingestion by its cursor and content hashes), so a job run again ends in the state one
    clean run would have left. The app must be open: the check borrows a connection of its
    pool (on Procrastinate's schema), as the app's own queries do."""
    stalled = list(await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stalled_after))
    if not stalled:
        return []
    retried: list[int] = []
    connector = app.connector
    assert isinstance(connector, procrastinate.PsycopgConnector)  # build_app's
    async with connector.pool.connection() as conn:
        for job in stalled:
            async with conn.transaction():
                still = await conn.execute(
                    "select 1 from procrastinate_jobs where id = %s and status = 'doing'"
                    " and worker_id is not distinct from %s for update skip locked",
                    (job.id, job.worker_id),
                )
                if await still.fetchone() is None:
                    continue
                unchanged = {"new_priority": None, "new_queue_name": None, "new_lock": None}
                retry = {"job_id": job.id, "retry_at": datetime.now(UTC), **unchanged}
                await conn.execute(procrastinate_sql.queries["retry_job"], retry)
            retried.append(job.id)  # type: ignore[arg-type]
            logger.warning(
                "job %s (%s) was left doing by a worker silent for over %gs: queued again",
                job.id, job.task_name, stalled_after,
            )  # fmt: skip
    return retried


async def _watch_stalled_jobs(app: procrastinate.App, stalled_after: float) -> None:
    while True:
        try:
            await retry_stalled_jobs(app, stalled_after)
        except (psycopg.Error, procrastinate_exceptions.ConnectorException) as error:
            # the database away for a moment: the next check tries again
            logger.warning("could not check for stalled jobs: %s", error)
        except Exception:
            # never let the watch end quietly while the worker goes on
            logger.exception("could not check for stalled jobs")
        await asyncio.sleep(stalled_after / 2)


async def _watch_backlog(backlog: BacklogMonitor, interval: float) -> None:
    while True:
        # a failed reading was logged by refresh; the next one tries again
        with contextlib.suppress(Exception):
            await asyncio.to_thread(backlog.refresh)
        await asyncio.sleep(interval)


# `vera worker --once`: how many passes over the queues at most (see serve)
ONCE_PASSES = 10


async def _due_jobs_left(app: procrastinate.App, queues: Sequence[str]) -> bool:
    """Whether a job of these queues is waiting and due now."""
    now = datetime.now(UTC)
    for queue in queues:
        for job in await app.job_manager.list_jobs_async(queue=queue, status="todo"):
            if job.scheduled_at is None or job.scheduled_at <= now:
                return True
    return False


def serve(
    app: procrastinate.App,
    *,
    queues: Sequence[str],
    once: bool,
    concurrency: int,
    stalled_after: float,
    backlog: BacklogMonitor | None = None,
    backlog_interval: float = DEFAULT_INTERVAL_SECONDS,
) -> None:
    """Run a worker on queues (`vera worker`). Besides its jobs it watches for jobs of workers
    that are gone (stalled_after seconds without a heartbeat) and queues them again: once at
    the start with once, every stalled_after / 2 seconds otherwise. With a backlog monitor,
    it reads the queues' depth every backlog_interval seconds (once with once)."""

    async def run() -> None:
        async with app.open_async():
            watches = []
            if backlog is not None:
                if once:
                    with contextlib.suppress(Exception):  # logged; the jobs run all the same
                        await asyncio.to_thread(backlog.refresh)
                else:
                    watches.append(
                        asyncio.create_task(_watch_backlog(backlog, backlog_interval), name="backlog")
                    )
            if once:
                await retry_stalled_jobs(app, stalled_after)
                # a pass ends when a slot finds nothing due, though a job still running may then
                # defer another (an embed job defers the group's projection): passes until none
                # is left due, at most ONCE_PASSES (a job another worker holds the lock of waits)
                for _ in range(ONCE_PASSES):
                    await app.run_worker_async(
                        queues=list(queues),
                        wait=False,
                        concurrency=concurrency,
                        **worker_options(stalled_after),
                    )
                    if not await _due_jobs_left(app, queues):
                        break
                return
            watches.append(asyncio.create_task(_watch_stalled_jobs(app, stalled_after), name="stalled jobs"))
            try:
                # a stop flags the running jobs at once (shutdown_graceful_timeout=0): an ingest
                # run ends after the file in hand and is queued again; the other jobs finish
                # their batch (they are short), and the worker waits for them either way
                await app.run_worker_async(
                    queues=list(queues), wait=True, concurrency=concurrency, shutdown_graceful_timeout=0,
                    **worker_options(stalled_after),
                )  # fmt: skip
            finally:
                for watch in watches:
                    watch.cancel()
                await asyncio.gather(*watches, return_exceptions=True)

    asyncio.run(run())
