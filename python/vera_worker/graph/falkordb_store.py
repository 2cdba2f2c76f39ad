"""The graph projection on FalkorDB: one graph per group, named by its graph group id
(Graphiti's convention, so Graphiti's FalkorDriver finds a group's graph by its group_id).

Instants are stored as fixed-width UTC ISO-8601 strings ("2026-03-01T09:30:00.000000+00:00"):
FalkorDB's Graphiti driver stores times as ISO strings and parses them back, and at one
width and one offset string order is time order, so the as_of comparisons of
queries.cypher hold."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import redis.exceptions
from falkordb import FalkorDB
from falkordb.helpers import stringify_param_value

from vera_client.domain.errors import ProviderError, ProviderUnavailableError
from vera_client.domain.graph import GraphBackendName
from vera_client.domain.vectors import SpelledVector
from vera_worker.graph.cypher_store import DEFAULT_BATCH_SIZE, CypherGraphStore, Row
from vera_worker.graph.graphiti_schema import graphiti_fulltext_indexes

# The range indexes of a group's graph: lookups by uuid and group_id (FalkorDB indexes each
# property of a label separately). Not Graphiti's longer list (get_range_indices), which also
# indexes the edges' times and names: every index is upkeep on each write, and with a range
# index on an edge property FalkorDB answers a traversal's filter on it from the index,
# slowly and, for an undirected pattern, wrongly (one direction only; queries.cypher).
_RANGE_INDEXES = (
    "CREATE INDEX FOR (n:Entity) ON (n.uuid, n.group_id)",
    "CREATE INDEX FOR ()-[e:RELATES_TO]-() ON (e.uuid, e.group_id)",
)


def _already_there(error: Exception) -> bool:
    text = str(error)
    return "already indexed" in text or "Stopwords are already set" in text


class FalkorDBGraphStore(CypherGraphStore):
    """GraphStore on a FalkorDB server (falkor://, redis:// or unix:// URL)."""

    vector_function = "vecf32"

    def __init__(
        self,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout_seconds: float = 30.0,
    ) -> None:
        super().__init__(batch_size=batch_size)
        self._url = url
        options: dict[str, Any] = {
            "socket_timeout": timeout_seconds,
            "socket_connect_timeout": timeout_seconds,
        }
        if username is not None:
            options["username"] = username
        if password is not None:
            options["password"] = password
        try:
            self._db = FalkorDB.from_url(url, **options)
            self._db.connection.ping()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as error:
            raise ProviderUnavailableError(f"FalkorDB at {_safe(url)} cannot be reached: {error}") from error
        except (redis.exceptions.RedisError, ValueError) as error:
            raise ProviderError(f"FalkorDB at {_safe(url)} refused the connection: {error}") from error
        self._prepared: set[str] = set()

    @property
    def backend(self) -> GraphBackendName:
        return "falkordb"

    def ensure_schema(self) -> None:
        """Nothing server-wide: each group's graph gets its indexes when first written."""

    def _prepare_group(self, graph_group: str) -> None:
        # asked each time, not only once per process: another process may have dropped the
        # graph since, and a graph recreated by a write would have no indexes
        if graph_group in self._prepared and self._has_group(graph_group):
            return
        graph = self._db.select_graph(graph_group)
        statements = [*_RANGE_INDEXES, *graphiti_fulltext_indexes("falkordb")]
        for statement in statements:
            try:
                self._call(lambda s=statement: graph.query(s))
            except ProviderError as error:
                if not _already_there(error):
                    raise
        self._prepared.add(graph_group)

    def _has_group(self, graph_group: str) -> bool:
        return bool(self._call(lambda: self._db.connection.exists(graph_group)))

    def _render(self, params: Row) -> Any:
        # FalkorDB takes parameters as a "CYPHER name=value ..." prefix of the query text,
        # spelled by the client's own encoder; built here, it can be built ahead
        return "CYPHER " + "".join(
            f"{name}={stringify_param_value(value)} " for name, value in params.items()
        )

    def _send(self, graph_group: str, query: str, rendered: Any, *, write: bool) -> list[Row]:
        graph = self._db.select_graph(graph_group)
        text = str(rendered) + query
        result = self._call(lambda: graph.query(text) if write else graph.ro_query(text))
        header = [column[1] for column in result.header]
        return [dict(zip(header, row, strict=False)) for row in result.result_set]

    def _drop(self, graph_group: str) -> None:
        self._call(lambda: self._db.select_graph(graph_group).delete())
        self._prepared.discard(graph_group)

    def _encode_vector(self, values: list[float]) -> Any:
        return _CypherFloats(values)

    def _encode_time(self, moment: datetime | None) -> Any:
        return self._spell_time(moment)

    def _decode_time(self, value: Any) -> datetime | None:
        if value is None:
            return None
        return datetime.fromisoformat(str(value)).astimezone(UTC)

    def _call(self, action: Any) -> Any:
        try:
            return action()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as error:
            raise ProviderUnavailableError(
                f"FalkorDB at {_safe(self._url)} cannot be reached: {error}"
            ) from error
        except redis.exceptions.RedisError as error:
            raise ProviderError(f"FalkorDB refused a query: {error}") from error

    def close(self) -> None:
        self._db.close()


class _CypherFloats:
    """A vector the FalkorDB client sends as written here: its parameter encoder turns each
    float into text one call at a time, which took longer than the server's own work on a
    384-float vector; a type it does not know it sends as str(value). A vector read from
    PostgreSQL comes spelled already (vectors.py); any other is spelled here, with nine
    significant digits, which give back every float32 exactly (vecf32 stores float32)."""

    __slots__ = ("_text",)

    def __init__(self, values: Sequence[float]) -> None:
        if isinstance(values, SpelledVector):
            self._text = values.text
        else:
            self._text = "[" + ",".join(map("{:.9g}".format, values)) + "]"

    def __str__(self) -> str:
        return self._text


def _safe(url: str) -> str:
    """The URL without its credentials, for messages."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else url
