"""The cleanup after a retraction or erasure, outside PostgreSQL.

PostgreSQL commits first, together with a `vera.retract_cleanup` job that
names the graph edges and raw objects to remove. Whoever ran the retraction
may do this cleanup at once and then mark the job completed
(`vera.complete_cleanup`); otherwise the worker runs this same function when
the job falls due. It is idempotent: what is already gone is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.ports import GraphStore, ObjectStore


@dataclass(frozen=True, kw_only=True, slots=True)
class RetractCleanup:
    """The payload of a retract_cleanup job."""

    group_id: str
    edge_ids: tuple[str, ...]
    object_keys: tuple[str, ...]
    erase: bool

    @classmethod
    def from_job_args(cls, args: Mapping[str, object]) -> RetractCleanup:
        group_id = args.get("group_id")
        edge_ids = args.get("edge_ids", [])
        object_keys = args.get("object_keys", [])
        if not isinstance(group_id, str) or not group_id:
            raise InvalidArgumentError("retract_cleanup job without a group_id")
        if not isinstance(edge_ids, list) or not all(isinstance(e, str) for e in edge_ids):
            raise InvalidArgumentError("retract_cleanup edge_ids must be a list of fact ids")
        if not isinstance(object_keys, list) or not all(isinstance(k, str) for k in object_keys):
            raise InvalidArgumentError("retract_cleanup object_keys must be a list of keys")
        return cls(
            group_id=group_id,
            edge_ids=tuple(edge_ids),
            object_keys=tuple(object_keys),
            erase=bool(args.get("erase", False)),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class CleanupReport:
    """What a cleanup removed, and what was already gone."""

    edges_removed: int
    objects_deleted: int
    objects_already_gone: int


def run_retract_cleanup(
    job: RetractCleanup, *, objects: ObjectStore, graph: GraphStore | None
) -> CleanupReport:
    """Remove the job's graph edges (when a graph is configured) and raw objects."""
    edges_removed = (
        graph.remove_edges(job.group_id, [UUID(edge) for edge in job.edge_ids])
        if graph and job.edge_ids
        else 0
    )
    deleted = sum(1 for key in job.object_keys if objects.delete(key))
    return CleanupReport(
        edges_removed=edges_removed,
        objects_deleted=deleted,
        objects_already_gone=len(job.object_keys) - deleted,
    )
