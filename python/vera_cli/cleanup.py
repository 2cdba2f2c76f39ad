"""The cleanup of a retraction or erasure done by the command that requested it: the client
removes the raw bytes at once (its object store), and the graph edges when this process has a
graph (passed in as a GraphStore: graph stores live in vera_worker, which vera_client does not
import). Whatever fails, or has no graph here, is left to the cleanup job and the worker."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from vera_cli.output import counted
from vera_client.domain.errors import VeraError

if TYPE_CHECKING:
    from vera_client.api.curation import Withdrawal
    from vera_client.bootstrap import Database
    from vera_client.domain.ports import GraphStore

logger = logging.getLogger(__name__)


def cleanup_graph(database: Database) -> GraphStore | None:
    """The graph this process uses (vera_worker.entrypoints.graph_wiring decides), or None: none
    configured, the graph modules not installed, or the graph unreachable (then the job removes
    the edges)."""
    try:
        from vera_worker.entrypoints.graph_wiring import graph_store
    except ImportError:
        return None
    try:
        return graph_store(database)
    except (VeraError, OSError) as error:
        logger.warning("no graph for the cleanup at once (the cleanup job removes the edges): %s", error)
        return None


def withdrawal_line(done: Withdrawal) -> str:
    """What the cleanup did at once, and what it left to the job, in one line."""
    if done.cleaned_up:
        return (
            f"{counted(done.objects_deleted, 'raw object')} and {counted(done.edges_removed, 'graph edge')} "
            f"removed at once (cleanup job {done.job} retired)"
        )
    parts = ((done.objects_left, "raw object"), (done.edges_left, "graph edge"))
    left = [counted(n, what) for n, what in parts if n]
    return f"{' and '.join(left)} left to cleanup job {done.job} (run by vera worker)"
