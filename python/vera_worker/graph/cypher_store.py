"""The GraphStore both backends share: batching, validation, tenancy and the
breadth-first walk, over the named Cypher of queries.cypher. A backend supplies
how a query reaches its server, how it stores instants and how a group's graph is
prepared and dropped (neo4j_store.py, falkordb_store.py)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar
from uuid import UUID

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.graph import EdgeState, ExploreStep, GraphBackendName, GraphEdge, GraphNode
from vera_worker.graph.ahead import ahead
from vera_worker.graph.cypher import cypher
from vera_worker.graph.graphiti_model import aware_utc, edge_row, graph_group_id, node_row
from vera_worker.graph.written_nodes import WrittenNodes

MIN_DEPTH = 1
MAX_DEPTH = 5
DEFAULT_BATCH_SIZE = 1000

Row = dict[str, Any]
_T = TypeVar("_T")


def batches(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class CypherGraphStore(ABC):
    """A GraphStore on a Cypher server; every query names the group it reads or writes."""

    # how queries.cypher stores a vector, and a written row's instant, on this backend (cypher.cypher)
    vector_function: str = ""
    instant_function: str = ""

    def __init__(self, *, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if batch_size < 1:
            raise InvalidArgumentError("graph batch size must be at least 1")
        self._batch_size = batch_size
        self._written = WrittenNodes()

    # ---- what a backend supplies -------------------------------------------------------

    @property
    @abstractmethod
    def backend(self) -> GraphBackendName: ...

    @abstractmethod
    def ensure_schema(self) -> None:
        """Create what the server needs before the first write (indexes, constraints); idempotent."""

    @abstractmethod
    def _send(self, graph_group: str, query: str, rendered: Any, *, write: bool) -> list[Row]:
        """Run one query, its parameters as _render made them, against the group's graph;
        rows as dicts by column name."""

    def _render(self, params: Row) -> Any:
        """Parameters made ready to send. Rendering a batch of embedded facts is a good part
        of its cost, so upsert renders the next batch in a helper thread while the server
        runs the current one."""
        return params

    @abstractmethod
    def _encode_time(self, moment: datetime | None) -> Any:
        """An aware UTC instant as this backend stores and compares it (None stays None)."""

    @abstractmethod
    def _decode_time(self, value: Any) -> datetime | None:
        """The aware UTC instant a stored value stands for."""

    def _spell_time(self, moment: datetime | None) -> str | None:
        """An instant as an edge row carries it to {instant} in queries.cypher: fixed-width
        UTC ISO-8601 ("2026-03-01T09:30:00.000000+00:00"; None stays None)."""
        return None if moment is None else moment.astimezone(UTC).isoformat(timespec="microseconds")

    def _encode_vector(self, values: list[float]) -> Any:
        """A vector as this backend's driver should send it."""
        return values

    @abstractmethod
    def _prepare_group(self, graph_group: str) -> None:
        """Make sure the group's graph can be written (its indexes exist)."""

    @abstractmethod
    def _has_group(self, graph_group: str) -> bool:
        """Whether anything was ever written to the group's graph."""

    @abstractmethod
    def _drop(self, graph_group: str) -> None:
        """Remove every node and edge of the group's graph."""

    @abstractmethod
    def close(self) -> None: ...

    # ---- the GraphStore ---------------------------------------------------------------

    def _query(self, name: str) -> str:
        return cypher(name, self.vector_function, self.instant_function)

    def _run(self, graph_group: str, query: str, params: Row, *, write: bool) -> list[Row]:
        return self._send(graph_group, query, self._render(params), write=write)

    def upsert(self, group_id: str, nodes: Sequence[GraphNode], edges: Sequence[GraphEdge]) -> int:
        group = graph_group_id(group_id)
        _same_group(group_id, nodes, edges)
        node_rows = list({row["uuid"]: row for row in map(node_row, nodes)}.values())
        edge_rows = list(
            {row["uuid"]: row for row in (edge_row(edge, self._spell_time) for edge in edges)}.values()
        )
        if not node_rows and not edge_rows:
            return 0
        self._prepare_group(group)
        unwritten = self._written.unwritten(group, node_rows)
        # the nodes travel with the first chunk of edges: one transaction where the server has them
        leading = self._node_statements(group, unwritten)
        if not edge_rows:
            self._send_together(group, leading)
            self._written.remember(group, unwritten)
            return 0
        written = 0
        rendered_chunks = ahead(batches(edge_rows, self._batch_size), partial(self._render_edges, group))
        for chunk, rendered in rendered_chunks:
            count = self._write_edges(group, chunk, rendered, leading)
            self._written.remember(group, unwritten)
            leading, unwritten = [], []
            if count != len(chunk):
                # an end node this process wrote is gone (the group was dropped or rebuilt
                # elsewhere): write every node of the call again, then the edges once more
                self._written.forget(group)
                count = self._write_edges(group, chunk, rendered, self._node_statements(group, node_rows))
                self._written.remember(group, node_rows)
            if count != len(chunk):
                raise InvalidArgumentError(
                    f"{len(chunk) - count} edge(s) name an end node that group {group_id!r} does not hold: "
                    "upsert the subject and object nodes with the edges"
                )
            written += count
        return written

    def _send_together(self, graph_group: str, statements: Sequence[tuple[str, Any]]) -> list[list[Row]]:
        """Run write queries, each with its parameters as _render made them, in order; each
        one's rows. A backend may run them as one transaction (Neo4j forces its transaction
        log to disk at every commit)."""
        return [self._send(graph_group, query, rendered, write=True) for query, rendered in statements]

    def _node_statements(self, group: str, rows: list[Row]) -> list[tuple[str, Any]]:
        now = self._encode_time(datetime.now(UTC))
        query = self._query("upsert_nodes")
        return [
            (
                query,
                self._render(
                    {"group": group, "rows": self._with_vectors(chunk, "name_embedding"), "now": now}
                ),
            )
            for chunk in batches(rows, self._batch_size)
        ]

    def _render_edges(self, group: str, chunk: Sequence[Row]) -> Any:
        return self._render({"group": group, "rows": self._with_vectors(chunk, "fact_embedding")})

    def _write_edges(
        self, group: str, chunk: Sequence[Row], rendered: Any, leading: Sequence[tuple[str, Any]]
    ) -> int:
        """After the leading statements (nodes), move the chunk's edges whose end nodes changed
        and upsert all, together; how many were written."""
        ends = [{key: row[key] for key in ("uuid", "source", "target")} for row in chunk]
        statements = [
            *leading,
            (self._query("move_edges"), self._render({"group": group, "rows": ends})),
            (self._query("upsert_edges"), rendered),
        ]
        *_, moved, rows = self._send_together(group, statements)
        self._remove_orphans(group, moved)
        return int(rows[0]["written"]) if rows else 0

    def _with_vectors(self, rows: Sequence[Row], key: str) -> list[Row]:
        return [row if row[key] is None else {**row, key: self._encode_vector(row[key])} for row in rows]

    def remove_edges(self, group_id: str, edge_ids: Sequence[UUID]) -> int:
        group = graph_group_id(group_id)
        ids = list(dict.fromkeys(str(_uuid(edge_id, "edge id")) for edge_id in edge_ids))
        if not ids or not self._has_group(group):
            return 0
        removed = 0
        for chunk in batches(ids, self._batch_size):
            ends = self._run(group, self._query("remove_edges"), {"group": group, "ids": chunk}, write=True)
            removed += len(ends)
            self._remove_orphans(group, ends)
        return removed

    def _remove_orphans(self, group: str, ends: list[Row]) -> None:
        """Of the end nodes of edges just removed (or moved), delete those left without any edge."""
        candidates = sorted({str(row[key]) for row in ends for key in ("source", "target")})
        self._written.forget(group, candidates)
        for chunk in batches(candidates, self._batch_size):
            self._run(group, self._query("remove_orphans"), {"group": group, "ids": list(chunk)}, write=True)

    def drop_group(self, group_id: str) -> None:
        group = graph_group_id(group_id)
        self._written.forget(group)
        if self._has_group(group):
            self._drop(group)

    def edge_states(self, group_id: str) -> list[EdgeState]:
        group = graph_group_id(group_id)
        if not self._has_group(group):
            return []
        rows = self._run(group, self._query("edge_states"), {"group": group}, write=False)
        return [self._edge_state(row) for row in rows]

    def _edge_state(self, row: Row) -> EdgeState:
        valid_from = self._decode_time(row["valid_at"])
        recorded_at = self._decode_time(row["created_at"])
        if valid_from is None or recorded_at is None:
            raise InvalidArgumentError(
                f"edge {row['uuid']} lacks valid_at or created_at: not written by VERA"
            )
        return EdgeState(
            fact_id=UUID(str(row["uuid"])),
            valid_from=valid_from,
            valid_to=self._decode_time(row["invalid_at"]),
            recorded_at=recorded_at,
            retired_at=self._decode_time(row["expired_at"]),
        )

    def node_count(self, group_id: str) -> int:
        group = graph_group_id(group_id)
        if not self._has_group(group):
            return 0
        rows = self._run(group, self._query("node_count"), {"group": group}, write=False)
        return int(rows[0]["nodes"]) if rows else 0

    def explore(self, starts: Sequence[tuple[str, UUID]], depth: int, as_of: datetime) -> list[ExploreStep]:
        if isinstance(depth, bool) or not isinstance(depth, int) or not MIN_DEPTH <= depth <= MAX_DEPTH:
            raise InvalidArgumentError(f"depth must be between {MIN_DEPTH} and {MAX_DEPTH}, got {depth!r}")
        instant = self._encode_time(aware_utc(as_of, "as_of"))
        by_group: dict[str, set[str]] = defaultdict(set)
        for start in starts:
            if not isinstance(start, tuple) or len(start) != 2:
                raise InvalidArgumentError("each start is a (group id, node id) pair")
            group_id, node_id = start
            by_group[graph_group_id(group_id)].add(str(_uuid(node_id, "start node id")))
        steps: list[ExploreStep] = []
        for group, nodes in by_group.items():
            if self._has_group(group):
                steps.extend(self._walk(group, nodes, depth, instant))
        return steps

    def _walk(self, group: str, starts: set[str], depth: int, instant: Any) -> list[ExploreStep]:
        """Breadth-first within one group: each hop asks only from the nodes first reached
        by the hop before (every edge of an older node was returned already)."""
        reached = set(starts)
        frontier = sorted(starts)
        seen: set[str] = set()
        steps: list[ExploreStep] = []
        for hop in range(1, depth + 1):
            if not frontier:
                break
            next_frontier: list[str] = []
            for chunk in batches(frontier, self._batch_size * 5):
                params = {"group": group, "frontier": list(chunk), "as_of": instant}
                for row in self._run(group, self._query("explore_hop"), params, write=False):
                    fact, node = str(row["fact"]), str(row["node"])
                    if fact not in seen:
                        seen.add(fact)
                        steps.append(ExploreStep(fact_id=UUID(fact), hop=hop))
                    if not row["literal"] and node not in reached:
                        reached.add(node)
                        next_frontier.append(node)
            frontier = next_frontier
        return steps


def _same_group(group_id: str, nodes: Sequence[GraphNode], edges: Sequence[GraphEdge]) -> None:
    items: list[GraphNode | GraphEdge] = [*nodes, *edges]
    for item in items:
        if item.group_id != group_id:
            raise InvalidArgumentError(
                f"upsert into group {group_id!r} got an item of group {item.group_id!r}"
            )


def _uuid(value: object, what: str) -> UUID:
    if isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            pass
    raise InvalidArgumentError(f"{what} must be a UUID, got {value!r}")
