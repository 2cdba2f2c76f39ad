"""The worker's backpressure signal on the real PostgreSQL: queue depth per
queue and status as gauges, read as the worker role through the executor,
the over-threshold gauge and one warning per crossing, the /metrics port,
and a real `vera worker --once --backlog-threshold` process."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.servers import free_port

from pg_tests.support.databases import Database
from pg_tests.support.ingesting import worker_process_env
from vera_client.adapters.postgres.executor import Executor
from vera_client.config import PoolSettings
from vera_client.domain.errors import DatabaseUnavailableError
from vera_worker.adapters.queue import SERVED_QUEUES
from vera_worker.adapters.queue_metrics import BacklogMonitor, database_queue_depths
from vera_worker.domain.jobs import JobName

EMBED = JobName.EMBED.queue
CLEANUP = JobName.RETRACT_CLEANUP.queue
INGEST = JobName.INGEST_SOURCE.queue
JUDGE = JobName.JUDGE_EQUIVALENCE.queue


def _admin(db: Database) -> psycopg.Connection:
    """An admin connection on Procrastinate's schema (its triggers name their tables unqualified)."""
    admin = db.admin()
    admin.execute("set search_path = procrastinate")
    return admin


def _queue(db: Database, queue: str, count: int, *, status: str = "todo", later: bool = False) -> None:
    task = f"vera.{queue}" if queue in SERVED_QUEUES else "someone.else"
    with _admin(db) as admin:
        admin.execute(
            "insert into procrastinate.procrastinate_jobs (queue_name, task_name, args, status, scheduled_at)"
            " select %s, %s, %s::jsonb, %s::procrastinate.procrastinate_job_status,"
            " case when %s then now() + interval '1 hour' end from generate_series(1, %s)",
            (queue, task, '{"group_id": "o:test"}', status, later, count),
        )


@pytest.fixture
def queues(db: Database) -> Iterator[Database]:
    """db with an empty job queue before and after the test."""
    with _admin(db) as admin:
        admin.execute("delete from procrastinate.procrastinate_jobs")
    yield db
    with _admin(db) as admin:
        admin.execute("delete from procrastinate.procrastinate_jobs")


def _monitor(sql: Executor, threshold: int = 1000) -> BacklogMonitor:
    return BacklogMonitor(database_queue_depths(sql), queues=SERVED_QUEUES, threshold=threshold)


def _jobs(monitor: BacklogMonitor, queue: str, status: str) -> float | None:
    return monitor.registry.get_sample_value("vera_queue_jobs", {"queue": queue, "status": status})


def _over(monitor: BacklogMonitor, queue: str) -> float | None:
    return monitor.registry.get_sample_value("vera_queue_backlog_over_threshold", {"queue": queue})


def test_depth_per_queue_and_status_read_as_the_worker(queues: Database, worker_sql: Executor) -> None:
    _queue(queues, EMBED, 5)
    _queue(queues, EMBED, 1, status="succeeded")  # done: not in the queue any more
    _queue(queues, CLEANUP, 2, later=True)  # scheduled ahead (the retraction's safety net)
    _queue(queues, INGEST, 1, status="doing")
    _queue(queues, "someone_elses_queue", 3)
    monitor = _monitor(worker_sql)
    depths = monitor.refresh()
    assert (depths[EMBED].todo, depths[EMBED].scheduled, depths[EMBED].doing) == (5, 0, 0)
    assert _jobs(monitor, EMBED, "todo") == 5
    assert _jobs(monitor, CLEANUP, "todo") == 0 and _jobs(monitor, CLEANUP, "scheduled") == 2
    assert _jobs(monitor, INGEST, "doing") == 1
    # a queue the worker does not serve is counted, under a bounded label
    assert _jobs(monitor, "other", "todo") == 3
    # every served queue has its series, zero included
    assert all(_jobs(monitor, queue, "todo") is not None for queue in SERVED_QUEUES)
    assert monitor.registry.get_sample_value("vera_queue_depth_up") == 1
    assert monitor.registry.get_sample_value("vera_queue_backlog_threshold") == 1000


def test_crossing_the_threshold_sets_the_gauge_and_warns_once_per_crossing(
    queues: Database, worker_sql: Executor, caplog: pytest.LogCaptureFixture
) -> None:
    monitor = _monitor(worker_sql, threshold=3)
    _queue(queues, EMBED, 3)
    _queue(queues, CLEANUP, 9, later=True)  # not due: no backlog
    with caplog.at_level(logging.INFO, logger="vera_worker.adapters.queue_metrics"):
        monitor.refresh()
        assert _over(monitor, EMBED) == 0  # at the threshold is not over it
        _queue(queues, EMBED, 1)
        monitor.refresh()
        monitor.refresh()
        assert _over(monitor, EMBED) == 1 and _over(monitor, CLEANUP) == 0
        with _admin(queues) as admin:
            admin.execute("delete from procrastinate.procrastinate_jobs where queue_name = %s", (EMBED,))
        monitor.refresh()
        assert _over(monitor, EMBED) == 0
        _queue(queues, EMBED, 4)
        monitor.refresh()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "queue embed backlog over threshold: 4 due jobs > 3",
        "queue embed backlog over threshold: 4 due jobs > 3",
    ]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "queue embed backlog back under threshold: 0 due jobs"
    ]


def test_the_metrics_port_serves_the_gauges(queues: Database, worker_sql: Executor) -> None:
    _queue(queues, JUDGE, 2)
    monitor = _monitor(worker_sql, threshold=1)
    monitor.refresh()
    port = free_port()
    server = monitor.serve(port)
    try:
        response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    assert response.status_code == 200
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }
    assert samples[("vera_queue_jobs", (("queue", JUDGE), ("status", "todo")))] == 2
    assert samples[("vera_queue_backlog_over_threshold", (("queue", JUDGE),))] == 1


def test_a_database_away_is_a_gauge_and_an_error_not_stale_silence(tmp_path: Path) -> None:
    away = f"postgresql://vera_worker@/nowhere?host={tmp_path}&port=1"
    # a pool that holds no connection until asked: the reading waits a second for one, in vain
    sql = Executor.connect(
        away, pool=PoolSettings(min_size=0, max_size=1, timeout_seconds=1), connect_timeout=1
    )
    try:
        monitor = BacklogMonitor(database_queue_depths(sql), queues=SERVED_QUEUES)
        with pytest.raises(DatabaseUnavailableError):
            monitor.refresh()
    finally:
        sql.close()
    assert monitor.registry.get_sample_value("vera_queue_depth_up") == 0


def test_a_real_worker_process_signals_the_backlog(queues: Database, tmp_path: Path) -> None:
    _queue(queues, JUDGE, 3)
    vera = Path(sys.executable).with_name("vera")
    env = worker_process_env(queues, tmp_path / "objects")
    worker = subprocess.run(  # noqa: S603
        [str(vera), "worker", "--once", "--backlog-threshold", "2"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr
    assert worker.stderr.count("queue judge_equivalence backlog over threshold: 3 due jobs > 2") == 1
    with queues.admin() as admin:
        row = admin.execute(
            "select count(*) from procrastinate.procrastinate_jobs where status = 'todo'"
        ).fetchone()
    assert row == (0,)  # and then it worked them off

    refused = subprocess.run(  # noqa: S603
        [str(vera), "worker", "--once", "--metrics-port", "0"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == 2 and "--metrics-port" in refused.stderr
