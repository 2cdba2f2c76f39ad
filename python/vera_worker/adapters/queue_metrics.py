"""The worker's backpressure signal: how many jobs wait in each queue, as
Prometheus gauges on an optional /metrics port (`vera worker --metrics-port`).

The depth is read through the client's executor (the named query
queue_depth), as the worker role. A queue whose due jobs exceed the
threshold sets `vera_queue_backlog_over_threshold{queue}` to 1 and logs one
warning when it crosses (and one line when it is back under), so an alert
can fire on the gauge and a person reading logs sees the moment it happened.

Labels are bounded: queues are the ones the worker serves (a job in any
other queue is counted as "other"), statuses a fixed set.

With a graph backend, the same reading also sets the projection's gauges:
`vera_graph_projection_lag_seconds` (how long the oldest due project_to_graph
job has waited, vera.queue_lag) and `vera_graph_drift` (how many groups the
last graph check found out of step with PostgreSQL, vera.graph_check_results).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Gauge, start_http_server

from vera_client.adapters.postgres.executor import Executor
from vera_client.api import jobs as jobs_api
from vera_client.api.jobs import GraphCheckResult, QueueDepth, QueueLag
from vera_client.domain.callers import Operator
from vera_client.domain.errors import InvalidArgumentError

logger = logging.getLogger(__name__)

OTHER = "other"
STATUSES = ("todo", "scheduled", "doing")
DEFAULT_THRESHOLD = 1000  # due jobs in one queue
DEFAULT_INTERVAL_SECONDS = 15.0


def database_queue_depths(sql: Executor) -> Callable[[], list[QueueDepth]]:
    """A reader of the queues' depth through the worker's executor (role vera_worker); a reading
    borrows a pooled connection for its transaction only."""

    def read() -> list[QueueDepth]:
        return sql.run(Operator(), jobs_api.queue_depth())

    return read


PROJECTION_QUEUE = "project_to_graph"


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphHealth:
    """The projection's state: how far each queue lags, and the last check of each group."""

    lags: list[QueueLag]
    checks: list[GraphCheckResult]

    @property
    def projection_lag_seconds(self) -> float:
        return next((lag.lag_seconds for lag in self.lags if lag.queue == PROJECTION_QUEUE), 0.0)

    @property
    def drifted_groups(self) -> int:
        return sum(1 for check in self.checks if check.drift is not None)


def database_graph_health(sql: Executor) -> Callable[[], GraphHealth]:
    """A reader of the projection's lag and last checks through the worker's executor (role vera_worker)."""

    def read() -> GraphHealth:
        with sql.transaction(Operator()) as tx:
            return GraphHealth(
                lags=tx.run(jobs_api.queue_lag()), checks=tx.run(jobs_api.graph_check_results())
            )

    return read


class BacklogMonitor:
    """Keeps the queue gauges of `registry` up to date from `read` (see the module's docstring)."""

    def __init__(
        self,
        read: Callable[[], Sequence[QueueDepth]],
        *,
        queues: Sequence[str],
        threshold: int = DEFAULT_THRESHOLD,
        registry: CollectorRegistry | None = None,
        read_graph: Callable[[], GraphHealth] | None = None,
    ) -> None:
        if threshold < 0:
            raise InvalidArgumentError(
                f"the backlog threshold is a number of jobs, 0 or more, not {threshold}"
            )
        self._read = read
        self.queues = tuple(dict.fromkeys(queues))
        self.threshold = threshold
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()
        self._over: dict[str, bool] = {}
        self._jobs = Gauge(
            "vera_queue_jobs", "Jobs in the worker's queues by status (todo: due and waiting).",
            ("queue", "status"), registry=self.registry,
        )  # fmt: skip
        self._over_gauge = Gauge(
            "vera_queue_backlog_over_threshold",
            "1 while a queue's due jobs exceed vera_queue_backlog_threshold.",
            ("queue",),
            registry=self.registry,
        )
        Gauge(
            "vera_queue_backlog_threshold", "Due jobs per queue above which the backlog is signalled.",
            registry=self.registry,
        ).set(threshold)  # fmt: skip
        self._up = Gauge(
            "vera_queue_depth_up",
            "1 when the last reading of the queue depth succeeded.",
            registry=self.registry,
        )
        self._read_graph = read_graph
        if read_graph is not None:
            self._projection_lag = Gauge(
                "vera_graph_projection_lag_seconds",
                "How long the oldest due project_to_graph job has waited (0: none waits).",
                registry=self.registry,
            )
            self._drift = Gauge(
                "vera_graph_drift",
                "Groups whose last graph check found the graph out of step with PostgreSQL.",
                registry=self.registry,
            )

    def _label(self, queue: str) -> str:
        return queue if queue in self.queues else OTHER

    def refresh(self) -> dict[str, QueueDepth]:
        """Read the depth, set the gauges, signal crossings; the depth per queue label.
        When the database cannot be read, the gauges keep their values and vera_queue_depth_up is 0."""
        try:
            depths = list(self._read())
        except Exception:
            self._up.set(0)
            logger.warning("could not read the queue depth", exc_info=True)
            raise
        totals = {
            label: QueueDepth(queue=label, todo=0, scheduled=0, doing=0) for label in (*self.queues, OTHER)
        }
        for depth in depths:
            label = self._label(depth.queue)
            seen = totals[label]
            totals[label] = QueueDepth(
                queue=label,
                todo=seen.todo + depth.todo,
                scheduled=seen.scheduled + depth.scheduled,
                doing=seen.doing + depth.doing,
            )
        with self._lock:
            for label, depth in totals.items():
                for status in STATUSES:
                    self._jobs.labels(label, status).set(getattr(depth, status))
                self._signal(label, depth.todo)
            self._up.set(1)
        if self._read_graph is not None:
            health = self._read_graph()
            self._projection_lag.set(health.projection_lag_seconds)
            self._drift.set(health.drifted_groups)
        return totals

    def _signal(self, label: str, due: int) -> None:
        over = due > self.threshold
        self._over_gauge.labels(label).set(1 if over else 0)
        if over == self._over.get(label, False):
            return
        self._over[label] = over
        if over:
            logger.warning(
                "queue %s backlog over threshold: %d due jobs > %d", label, due, self.threshold,
                extra={"queue": label, "due": due, "threshold": self.threshold},
            )  # fmt: skip
        else:
            logger.info("queue %s backlog back under threshold: %d due jobs", label, due)

    def serve(self, port: int, host: str = "127.0.0.1") -> WSGIServer:
        """Serve /metrics on host:port in a daemon thread; shutdown() the server to stop it."""
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        return server
