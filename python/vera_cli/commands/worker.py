"""`vera worker`: the long-running worker process (every queue, or some), with Prometheus
metrics and a backlog signal when asked."""

from __future__ import annotations

import click

from vera_cli.plumbing import check_reachable, database_from_env, friendly_errors, start_if_embedded
from vera_worker.adapters.queue import SERVED_QUEUES
from vera_worker.adapters.queue_metrics import DEFAULT_THRESHOLD


@click.command("worker")
@click.option("--once", is_flag=True, help="Run the jobs that are due, then exit.")
@click.option("--queue", "queues", multiple=True, type=click.Choice(SERVED_QUEUES),
              help="Serve only this queue (repeatable; default: all the worker runs).")  # fmt: skip
@click.option("--metrics-port", type=click.IntRange(1, 65535),
              help="Serve Prometheus metrics (queue depth, backlog signal) on this port.")  # fmt: skip
@click.option("--metrics-host", default="127.0.0.1", show_default=True, help="Address of the metrics port.")
@click.option("--backlog-threshold", type=click.IntRange(min=0),
              help=f"Signal a queue's backlog above this many due jobs [{DEFAULT_THRESHOLD}].")  # fmt: skip
@friendly_errors
def worker_command(
    once: bool,
    queues: tuple[str, ...],
    metrics_port: int | None,
    metrics_host: str,
    backlog_threshold: int | None,
) -> None:
    """Run the worker: ingestion runs, embeddings, graph projection, judges, cleanup after retraction.

    With --metrics-port (or --backlog-threshold) it also watches the depth of every queue: a
    queue whose due jobs exceed the threshold sets vera_queue_backlog_over_threshold and logs
    a warning once.
    """
    from vera_worker.adapters.queue import GRAPH_CHECK_TASK, served_queues
    from vera_worker.adapters.queue_metrics import (
        BacklogMonitor,
        database_graph_health,
        database_queue_depths,
    )
    from vera_worker.adapters.serving import serve
    from vera_worker.entrypoints.logs import configure_worker_logging
    from vera_worker.entrypoints.wiring import worker_app

    configure_worker_logging()
    database = database_from_env()
    start_if_embedded(database)
    check_reachable(database, database.worker_dsn)
    sql = database.worker_executor()  # the one pool of this process, shared by every job
    app = worker_app(database, sql)
    concurrency = database.settings.worker.concurrency
    backlog = None
    if metrics_port is not None or backlog_threshold is not None:
        read = database_queue_depths(sql)
        threshold = DEFAULT_THRESHOLD if backlog_threshold is None else backlog_threshold
        # a worker with a graph (configured, or the demo's beside the database) has the graph check
        graph_health = database_graph_health(sql) if GRAPH_CHECK_TASK in app.tasks else None
        backlog = BacklogMonitor(read, queues=SERVED_QUEUES, threshold=threshold, read_graph=graph_health)
    metrics_server = None
    if backlog is not None and metrics_port is not None:
        metrics_server = backlog.serve(metrics_port, metrics_host)
        click.echo(f"vera worker: metrics on http://{metrics_host}:{metrics_port}/metrics")
    until = "until idle" if once else "Ctrl+C stops"
    click.echo(f"vera worker: queues {', '.join(queues or served_queues(app))}; {until}")
    try:
        serve(
            app,
            queues=queues or served_queues(app),
            once=once,
            concurrency=concurrency,
            stalled_after=database.settings.worker.stalled_after,
            backlog=backlog,
        )
    finally:
        if metrics_server is not None:
            metrics_server.shutdown()
        sql.close()
