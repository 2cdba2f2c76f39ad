"""The graph projection's worker side: project_to_graph jobs, `vera graph
rebuild` and `vera graph check` (docs/graph.md).

PostgreSQL is the truth; a graph server holds a projection of it that this
module keeps up to date through the GraphStore port. A job reads the named
facts as they are now (vera.graph_facts, with the rights of the principal
that deferred it), upserts those that belong in the group's graph and
removes the others, so replaying a job, or running two jobs of one fact in
either order, ends in the same graph. A rebuild drops a group's graph and
pages through every fact that belongs (vera.graph_group_facts); a check
compares edge counts, node counts and the digest of edges by fact id and
validity on both sides and records the result (vera.record_graph_check).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from vera_client.adapters.postgres.executor import Executor
from vera_client.api import jobs as jobs_api
from vera_client.api.jobs import GraphCheckResult, GraphFactRow
from vera_client.domain.callers import Caller, Operator, Principal
from vera_client.domain.graph import GraphEdge, GraphNode, edge_digest, literal_node_id
from vera_client.domain.ports import GraphStore
from vera_worker.domain.jobs import ProjectJob
from vera_worker.graph.ahead import ahead, chained

logger = logging.getLogger(__name__)

PAGE = 1000  # facts per page of a rebuild, and per upsert
# facts per page of a job: small enough that a job of 1,000 facts (an episode) is a pipeline
# of several pages, large enough that a page's queries cost little beside its rows
JOB_PAGE = 250


def graph_piece(rows: Sequence[GraphFactRow]) -> tuple[list[GraphNode], list[GraphEdge]]:
    """The nodes and edges of rows that belong in their group's graph (each node once)."""
    nodes: dict[UUID, GraphNode] = {}
    edges: list[GraphEdge] = []
    for row in rows:
        if not row.belongs:
            continue
        nodes.setdefault(
            row.subject_id,
            GraphNode(
                group_id=row.group_id,
                node_id=row.subject_id,
                name=row.subject_name,
                name_embedding=row.subject_embedding,
            ),
        )
        if row.object_id is not None:
            object_node = GraphNode(
                group_id=row.group_id,
                node_id=row.object_id,
                name=row.object_name,
                name_embedding=row.object_embedding,
            )
        else:
            object_node = GraphNode(
                group_id=row.group_id,
                node_id=literal_node_id(row.group_id, row.object_name),
                name=row.object_name,
                literal=True,
            )
        nodes.setdefault(object_node.node_id, object_node)
        edges.append(
            GraphEdge(
                group_id=row.group_id,
                fact_id=row.fact_id,
                episode_id=row.episode_id,
                source_id=row.source_id,
                subject_id=row.subject_id,
                object_id=object_node.node_id,
                predicate=row.predicate,
                fact_text=row.fact_text,
                lifecycle=row.lifecycle,
                valid_from=row.valid_from,
                valid_to=row.valid_to,
                recorded_at=row.recorded_at,
                retired_at=row.retired_at,
                fact_embedding=row.fact_embedding,
            )
        )
    return list(nodes.values()), edges


@dataclass(frozen=True, kw_only=True, slots=True)
class ProjectionReport:
    """What one job did: edges written (upserted) and edges removed from the graph."""

    upserted: int
    removed: int


@dataclass(frozen=True, kw_only=True, slots=True)
class RebuildReport:
    """One group's rebuild: the edges and nodes its graph now holds, and how long it took
    (in all, and of that dropping the old graph)."""

    group_id: str
    edges: int
    nodes: int
    seconds: float
    drop_seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphCheck:
    """One group's graph compared with PostgreSQL; result.drift is None when they agree."""

    result: GraphCheckResult
    sql_digest: str
    graph_digest: str
    seconds: float

    @property
    def drifted(self) -> bool:
        return self.result.drift is not None


def describe_drift(
    *, sql_edges: int, graph_edges: int, sql_nodes: int, graph_nodes: int, sql_digest: str, graph_digest: str
) -> str | None:
    """What disagrees between SQL and the graph, in a few words; None when nothing does."""
    problems = []
    if sql_edges != graph_edges:
        problems.append(f"edges: {sql_edges} in PostgreSQL, {graph_edges} in the graph")
    if sql_nodes != graph_nodes:
        problems.append(f"nodes: {sql_nodes} in PostgreSQL, {graph_nodes} in the graph")
    if sql_digest != graph_digest:
        problems.append("the edges' ids or times differ (digest)")
    return "; ".join(problems) or None


class GraphProjection:
    """Projects facts of the database behind the worker's executor (role vera_worker) into graph.

    Each read borrows a connection from the executor's pool for its transaction: a drain runs
    one job after another on the connection the last one gave back (a connection of its own per
    job cost a backend's start and the vector types' lookup each time), and the worker's pool
    checks a connection before lending it, so one the server ended while it was idle is not used."""

    def __init__(self, sql: Executor, graph: GraphStore) -> None:
        self.sql = sql
        self.graph = graph

    def project(self, job: ProjectJob) -> ProjectionReport:
        """Bring the graph's edges of the job's facts to their state in PostgreSQL. Idempotent.

        The facts are read in pages, the next page from PostgreSQL while the graph server
        writes this one (vera_worker/graph/ahead.py). Every page is read after the job began,
        so what the graph ends with is still what held when the job ran; the writes keep
        their order."""
        if not job.fact_ids:
            return ProjectionReport(upserted=0, removed=0)
        caller: Caller = Principal(job.principal_id) if job.principal_id is not None else Operator()
        upserted = removed = 0
        pages = [job.fact_ids[first : first + JOB_PAGE] for first in range(0, len(job.fact_ids), JOB_PAGE)]

        def read(named: Sequence[UUID]) -> tuple[list[GraphNode], list[GraphEdge]]:
            rows = self.sql.run(caller, jobs_api.graph_facts(job.group_id, named))
            return graph_piece(rows)

        for named, (nodes, edges) in ahead(pages, read):
            if edges:
                upserted += self.graph.upsert(job.group_id, nodes, edges)
            # what no longer belongs, and what no longer exists at all (erased)
            belonging = {edge.fact_id for edge in edges}
            gone = [fact for fact in named if fact not in belonging]
            if gone:
                removed += self.graph.remove_edges(job.group_id, gone)
        logger.info("project_to_graph %s: %d edges upserted, %d removed", job.group_id, upserted, removed)
        return ProjectionReport(upserted=upserted, removed=removed)

    def groups(self, only: str | None = None) -> list[str]:
        """The groups a rebuild or check covers: the one named, or every group with facts."""
        return self.sql.run(Operator(), jobs_api.graph_groups(only))

    def rebuild(self, group: str) -> RebuildReport:
        """Drop a group's graph and project every fact that belongs in it, from PostgreSQL alone.
        The next page is read while the graph server writes this one."""
        started = time.perf_counter()
        self.graph.drop_group(group)
        dropped = time.perf_counter()
        edges = 0

        def read(after: UUID | None) -> list[GraphFactRow]:
            return self.sql.run(Operator(), jobs_api.graph_group_facts(group, after, PAGE))

        def following(rows: list[GraphFactRow]) -> UUID | None:
            return rows[-1].fact_id if len(rows) == PAGE else None

        for rows in chained(None, read, following):
            if rows:
                nodes, piece = graph_piece(rows)
                edges += self.graph.upsert(group, nodes, piece)
        report = RebuildReport(
            group_id=group,
            edges=edges,
            nodes=self.graph.node_count(group),
            seconds=time.perf_counter() - started,
            drop_seconds=dropped - started,
        )
        logger.info(
            "graph rebuild %s: %d edges, %d nodes in %.2fs (%.2fs of it dropping the old graph)",
            group, report.edges, report.nodes, report.seconds, report.drop_seconds,
        )  # fmt: skip
        return report

    def check(self, group: str, *, record: bool = True) -> GraphCheck:
        """Compare a group's graph with PostgreSQL (counts and the edge digest); record the result."""
        started = time.perf_counter()
        with self.sql.transaction(Operator()) as tx:
            expected = tx.run(jobs_api.graph_edge_states(group))
            expected_nodes = tx.run(jobs_api.graph_expected_nodes(group))
        held = self.graph.edge_states(group)
        held_nodes = self.graph.node_count(group)
        sql_digest, graph_digest = edge_digest(expected), edge_digest(held)
        result = GraphCheckResult(
            group_id=group,
            backend=self.graph.backend,
            checked_at=datetime.now(UTC),
            sql_edges=len(expected),
            graph_edges=len(held),
            sql_nodes=expected_nodes,
            graph_nodes=held_nodes,
            drift=describe_drift(
                sql_edges=len(expected),
                graph_edges=len(held),
                sql_nodes=expected_nodes,
                graph_nodes=held_nodes,
                sql_digest=sql_digest,
                graph_digest=graph_digest,
            ),
        )
        if record:
            self.sql.run(Operator(), jobs_api.record_graph_check(result, sql_digest, graph_digest))
        if result.drift is not None:
            logger.warning("graph check %s: drift: %s", group, result.drift)
        return GraphCheck(
            result=result,
            sql_digest=sql_digest,
            graph_digest=graph_digest,
            seconds=time.perf_counter() - started,
        )

    def check_all(self, only: str | None = None) -> list[GraphCheck]:
        """Check (and record) every group with facts, or the one named."""
        return [self.check(group) for group in self.groups(only)]
