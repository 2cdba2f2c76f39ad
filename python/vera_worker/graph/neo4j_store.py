"""The graph projection on Neo4j 5: every group in one database, the graph group id on
every node and edge, indexed, and every query of queries.cypher matching by it.

Instants are stored as Neo4j DATETIME values in UTC (what Graphiti's Neo4j driver
writes) and compared as such; vectors as lists of floats, which Graphiti's Neo4j search
compares with vector.similarity.cosine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import neo4j
import neo4j.exceptions
import neo4j.time

from vera_client.domain.errors import ProviderError, ProviderUnavailableError
from vera_client.domain.graph import GraphBackendName
from vera_worker.graph.cypher_store import DEFAULT_BATCH_SIZE, CypherGraphStore, Row
from vera_worker.graph.graphiti_schema import graphiti_fulltext_indexes

_T = TypeVar("_T")

# (group_id, uuid) is an entity's key: the same entity id in two groups is two nodes, and
# the constraint is also what makes two workers' MERGE of one node create it once. The
# single-property indexes carry Graphiti's names, so Graphiti's own index setup finds them.
_SCHEMA = (
    "CREATE CONSTRAINT vera_entity_key IF NOT EXISTS FOR (n:Entity) REQUIRE (n.group_id, n.uuid) IS UNIQUE",
    "CREATE INDEX entity_uuid IF NOT EXISTS FOR (n:Entity) ON (n.uuid)",
    "CREATE INDEX entity_group_id IF NOT EXISTS FOR (n:Entity) ON (n.group_id)",
    "CREATE INDEX relation_uuid IF NOT EXISTS FOR ()-[e:RELATES_TO]-() ON (e.uuid)",
    "CREATE INDEX relation_group_id IF NOT EXISTS FOR ()-[e:RELATES_TO]-() ON (e.group_id)",
)

# Graphiti's full-text indexes, updated after each commit by a background thread rather than in
# the committing transaction: Lucene's indexing was a good part of Neo4j's CPU per written edge,
# on the write path of every projection batch. What it changes: Graphiti's keyword search may
# miss an edge for a moment after it was written (its vector search and VERA's explore do not
# use these indexes). An index that already exists keeps its settings (IF NOT EXISTS).
_EVENTUALLY_CONSISTENT = " OPTIONS {indexConfig: {`fulltext.eventually_consistent`: true}}"


def _fulltext_indexes() -> tuple[str, ...]:
    statements = graphiti_fulltext_indexes("neo4j")
    if any("OPTIONS" in statement for statement in statements):
        raise ProviderError("Graphiti's Neo4j full-text indexes now carry OPTIONS: merge them with VERA's")
    return tuple(statement + _EVENTUALLY_CONSISTENT for statement in statements)


# edges, then nodes, removed per transaction when a group is dropped: bounded so that one
# transaction stays well inside the server's transaction memory (embeddings included)
_DROP_BATCH = 5_000


class _QuietList(list[Any]):
    """A parameter list the driver sends as any list but does not spell out: the Bolt driver
    builds the text of a debug line, repr() of every parameter, for each query whether or not
    debug logging is on, and for a batch of 1,000 embedded facts that took longer (about 1 s)
    than sending and running it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{len(self)} items>"


class Neo4jGraphStore(CypherGraphStore):
    """GraphStore on a Neo4j 5 server (bolt:// or neo4j:// URL)."""

    vector_function = ""
    instant_function = "datetime"

    def __init__(
        self,
        url: str,
        *,
        user: str | None = None,
        password: str | None = None,
        database: str = "neo4j",
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout_seconds: float = 30.0,
    ) -> None:
        super().__init__(batch_size=batch_size)
        self._url = url
        self._database = database
        auth = (user, password or "") if user else None
        try:
            self._driver = neo4j.GraphDatabase.driver(
                url,
                auth=auth,
                connection_timeout=timeout_seconds,
                connection_acquisition_timeout=timeout_seconds,
                # the server would warn of property keys no edge has yet (expired_at while
                # nothing is retired): expected here, and logged once per query otherwise
                notifications_min_severity="OFF",
            )
        except (ValueError, neo4j.exceptions.ConfigurationError) as error:
            raise ProviderError(f"not a Neo4j URL: {url!r} ({error})") from error
        try:
            self._call(self._driver.verify_connectivity)
        except ProviderError:
            self._driver.close()
            raise

    @property
    def backend(self) -> GraphBackendName:
        return "neo4j"

    def ensure_schema(self) -> None:
        """Create the constraint, the indexes and Graphiti's full-text indexes if missing."""
        for statement in (*_SCHEMA, *_fulltext_indexes()):
            self._execute(statement, {}, neo4j.RoutingControl.WRITE)

    def _prepare_group(self, graph_group: str) -> None:
        """Nothing per group: ensure_schema covers every group."""

    def _has_group(self, graph_group: str) -> bool:
        # every query filters by group: an absent group answers nothing, no need to ask first
        return True

    def _render(self, params: Row) -> Any:
        return {key: _QuietList(value) if isinstance(value, list) else value for key, value in params.items()}

    def _send(self, graph_group: str, query: str, rendered: Any, *, write: bool) -> list[Row]:
        routing = neo4j.RoutingControl.WRITE if write else neo4j.RoutingControl.READ
        return self._execute(query, rendered, routing)

    def _send_together(self, graph_group: str, statements: Sequence[tuple[str, Any]]) -> list[list[Row]]:
        # one transaction, so one commit: each forces the transaction log to disk
        def work(tx: neo4j.ManagedTransaction) -> list[list[Row]]:
            return [
                [dict(zip(record.keys(), record.values(), strict=True)) for record in tx.run(query, rendered)]
                for query, rendered in statements
            ]

        def action() -> list[list[Row]]:
            with self._driver.session(database=self._database) as session:
                return session.execute_write(work)

        return self._call(action)

    def _execute(self, query: str, params: Row, routing: neo4j.RoutingControl) -> list[Row]:
        def action() -> list[Row]:
            records, _, _ = self._driver.execute_query(
                query,
                params,
                database_=self._database,
                routing_=routing,
            )
            return [dict(zip(record.keys(), record.values(), strict=True)) for record in records]

        return self._call(action)

    def _drop(self, graph_group: str) -> None:
        for name in ("drop_group_edges", "drop_group_nodes"):
            drop = self._query(name)
            while True:
                rows = self._run(graph_group, drop, {"group": graph_group, "limit": _DROP_BATCH}, write=True)
                if not rows or int(rows[0]["removed"]) == 0:
                    break

    def _encode_time(self, moment: datetime | None) -> Any:
        return None if moment is None else moment.astimezone(UTC)

    def _encode_vector(self, values: list[float]) -> Any:
        # a plain list, as the driver packs it (a SpelledVector is a tuple subclass)
        return list(values)

    def _decode_time(self, value: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, neo4j.time.DateTime):
            value = value.to_native()
        if not isinstance(value, datetime):
            raise ProviderError(f"Neo4j returned {value!r} where an instant was stored")
        return value.astimezone(UTC)

    def _call(self, action: Callable[[], _T]) -> _T:
        try:
            return action()
        except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired, OSError) as error:
            raise ProviderUnavailableError(f"Neo4j at {self._url} cannot be reached: {error}") from error
        except neo4j.exceptions.AuthError as error:
            raise ProviderError(f"Neo4j at {self._url} refused the credentials: {error}") from error
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as error:
            raise ProviderError(f"Neo4j refused a query: {error}") from error

    def close(self) -> None:
        self._driver.close()
