"""Which nodes this process has written, as they were written, so an upsert sends only
the nodes that are new or changed.

A group's entities recur in batch after batch (every fact names two), and each carries
a 384-float name embedding: sending them again would cost more than the edges. The
memory is only a shortcut: a store that finds an edge's end node missing (another
process dropped or rebuilt the group) forgets the group and writes the nodes again."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vera_client.domain.vectors import SpelledVector

# Beyond this many remembered nodes the memory starts afresh (a bound, not a tuning knob:
# forgetting only costs a rewrite).
MAX_REMEMBERED = 1_000_000


def node_signature(row: dict[str, Any]) -> int:
    """A hash of what a node row writes."""
    embedding = row["name_embedding"]
    if isinstance(embedding, SpelledVector):
        vector: object = embedding.text  # one string to hash, not 384 floats
    else:
        vector = None if embedding is None else tuple(embedding)
    return hash((row["name"], row["summary"], row["literal"], vector))


class WrittenNodes:
    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self._limit = limit
        self._size = 0
        self._by_group: dict[str, dict[str, int]] = {}

    def unwritten(self, group: str, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows not written before exactly as they are now."""
        known = self._by_group.get(group, {})
        return [row for row in rows if known.get(row["uuid"]) != node_signature(row)]

    def remember(self, group: str, rows: Iterable[dict[str, Any]]) -> None:
        known = self._by_group.setdefault(group, {})
        for row in rows:
            if row["uuid"] not in known:
                self._size += 1
            known[row["uuid"]] = node_signature(row)
        if self._size > self._limit:
            self._by_group.clear()
            self._size = 0

    def forget(self, group: str, uuids: Iterable[str] | None = None) -> None:
        """Forget these nodes of the group (all of them when uuids is None)."""
        known = self._by_group.get(group)
        if known is None:
            return
        if uuids is None:
            self._size -= len(known)
            del self._by_group[group]
            return
        for uuid in uuids:
            if known.pop(uuid, None) is not None:
                self._size -= 1
