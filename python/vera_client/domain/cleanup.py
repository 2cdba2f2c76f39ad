"""The cleanup after a retraction or erasure, outside PostgreSQL.

PostgreSQL commits first, together with a `vera.retract_cleanup` job that
names the graph edges and raw objects to remove. Removing edges through the
graph store also removes the nodes they leave without any edge (the
GraphStore contract), so no entity of an erased source lingers in the graph. The client's
retract and erase operations clean up at once after their commit (clean_up_at_once: the raw
objects through the client's object store, the edges when a graph store is passed in) and
settle the job (`vera.settle_cleanup`): it retires when nothing is left, or keeps only what
was left and falls due, and the worker runs run_retract_cleanup on that. A requester that dies
between its commit and its cleanup leaves the whole job, which the worker runs when due. It is
idempotent: what is already gone is skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.ports import GraphStore, ObjectStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class RetractCleanup:
    """The payload of a retract_cleanup job."""

    group_id: str
    edge_ids: tuple[UUID, ...]
    object_keys: tuple[str, ...]
    erase: bool

    @classmethod
    def from_job_args(cls, args: Mapping[str, object]) -> RetractCleanup:
        group_id = args.get("group_id")
        edge_ids = args.get("edge_ids", [])
        object_keys = args.get("object_keys", [])
        if not isinstance(group_id, str) or not group_id:
            raise InvalidArgumentError("retract_cleanup job without a group_id")
        if not isinstance(object_keys, list) or not all(isinstance(k, str) for k in object_keys):
            raise InvalidArgumentError("retract_cleanup object_keys must be a list of keys")
        return cls(
            group_id=group_id,
            edge_ids=_fact_ids(edge_ids, "edge_ids"),
            object_keys=tuple(object_keys),
            erase=bool(args.get("erase", False)),
        )


def _fact_ids(values: object, name: str) -> tuple[UUID, ...]:
    """A job's list of ids as UUIDs; anything else (a graph query smuggled in as an id) is refused."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidArgumentError(f"retract_cleanup {name} must be a list of ids")
    try:
        return tuple(UUID(v) for v in values)
    except ValueError:
        raise InvalidArgumentError(f"retract_cleanup {name} must be UUIDs, got {values!r:.200}") from None


@dataclass(frozen=True, kw_only=True, slots=True)
class CleanupReport:
    """What a cleanup removed, and what was already gone."""

    edges_removed: int
    objects_deleted: int
    objects_already_gone: int


def run_retract_cleanup(
    job: RetractCleanup, *, objects: ObjectStore, graph: GraphStore | None
) -> CleanupReport:
    """Remove the job's graph edges and the nodes they leave alone (when a graph is
    configured), and its raw objects."""
    edges_removed = graph.remove_edges(job.group_id, list(job.edge_ids)) if graph and job.edge_ids else 0
    deleted = sum(1 for key in job.object_keys if objects.delete(key))
    return CleanupReport(
        edges_removed=edges_removed,
        objects_deleted=deleted,
        objects_already_gone=len(job.object_keys) - deleted,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class CleanupLeft:
    """What a cleanup at once could not do: edges (no graph here, or the graph failed) and raw
    objects whose deletion failed. Empty: the job has nothing left and retires."""

    edge_ids: tuple[UUID, ...]
    object_keys: tuple[str, ...]
    edges_removed: int
    objects_deleted: int

    @property
    def nothing(self) -> bool:
        return not self.edge_ids and not self.object_keys


def clean_up_at_once(
    job: RetractCleanup, *, objects: ObjectStore | None, graph: GraphStore | None
) -> CleanupLeft:
    """The requester's cleanup right after its commit: each part it can do here, each failure
    kept (logged) for the job to finish, never raised (the erasure itself has committed)."""
    edges_left, edges_removed = job.edge_ids, 0
    if graph is not None and job.edge_ids:
        try:
            edges_removed = graph.remove_edges(job.group_id, list(job.edge_ids))
            edges_left = ()
        except Exception as error:
            logger.warning("cleanup at once: graph edges of %s left to the job: %s", job.group_id, error)
    elif not job.edge_ids:
        edges_left = ()
    keys_left: list[str] = []
    deleted = 0
    for key in job.object_keys:
        try:
            deleted += 1 if objects is not None and objects.delete(key) else 0
        except Exception as error:
            logger.warning("cleanup at once: object %s left to the job: %s", key, error)
            keys_left.append(key)
            continue
        if objects is None:
            keys_left.append(key)
    return CleanupLeft(edge_ids=edges_left, object_keys=tuple(keys_left),
                       edges_removed=edges_removed, objects_deleted=deleted)  # fmt: skip
