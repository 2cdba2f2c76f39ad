"""The connector contract: what a kind of source offers the runner (runner.py).

A connector reads one source. `poll(position)` yields the source's items that
changed since a cursor position (None: the first run, everything), in pages;
each page carries the position to resume from once its items are committed, so
a run that dies mid-way starts again after the last committed page. `slim()`
lists the ids of every item still present, reading no bodies: what VERA holds
and the listing lacks was deleted at the source and is retracted.

An item may carry a change signature: what the connector can tell of it
without reading its body (a file's modification time and size). The runner
stores it with the version it writes (or finds unchanged by its hash), and
`SourceContext.signatures(keys)` tells a later poll which signatures VERA
holds, so a connector whose source has no change feed (a folder) reads only
what changed, without a cursor entry per record. Such a connector may yield
a Pending item instead: its body is read and converted in the runner's
pipeline, ahead of the writes, and converted only when its content changed.

An item that cannot be converted raises ItemSkipped from `convert` (or is
yielded as a Skip): the run names it in a warning, counts it and goes on."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from vera_client.config import ReadLimits, ResilienceSettings
from vera_worker.domain.records import ParsedRecord

Position = Mapping[str, Any]
"""A connector's own cursor (JSON): a time, a version, a commit, a page token."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Item:
    """One record of a source as fetched: its raw bytes (kept in the object store, hashed for the
    no-op check) and what it becomes (passages and claims, built without a model)."""

    key: str  # the record's id at the source (an issue key, a CI id, a path): its episodes' external_id
    raw: bytes
    mime: str
    record: ParsedRecord
    uri: str | None = None  # what its episode cites (a URL, a commit and path)
    observed_at: str | None = None  # when the source says it last changed (ISO)
    version: str | None = None  # the source's own version (a commit, a page version), for the citation
    signature: str | None = None  # see the module's docstring; None: the source tells none


@dataclass(frozen=True, kw_only=True, slots=True)
class Pending:
    """An item whose body the runner's pipeline reads (`read`: its raw bytes, or a Skip; raises
    ItemSkipped when it cannot be read) and converts (`convert`, given those bytes: the Item, or
    a Skip for bytes that hold nothing VERA can use; raises ItemSkipped for a failure to try
    again), ahead of the writes and off the writer's thread; convert is not called when the
    content hashes as VERA's live latest version."""

    key: str
    signature: str | None
    read: Callable[[], bytes | Skip]
    convert: Callable[[bytes], Item | Skip]


@dataclass(frozen=True, kw_only=True, slots=True)
class Skip:
    """An item the connector could not turn into an Item: named, with why."""

    key: str
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Page:
    """Items to write, then the position to resume from once they are committed."""

    items: tuple[Item | Skip | Pending, ...]
    position: Position = field(default_factory=dict)
    untouched: int = 0  # records the connector found unchanged by their signature, not yielded
    planned: int | None = None  # on a first page: how many items the run will yield, when known


def in_scope(key: str, scope: str | None) -> bool:
    """Whether a record key lies at or below scope (a relative path; None: everything)."""
    if not scope:
        return True
    scope = scope.strip("/")
    return key == scope or key.startswith(scope + "/")


Signatures = Callable[[Sequence[str]], Mapping[str, str]]
"""The signatures VERA holds of these records' live latest versions (at most 10,000 keys a call;
records without one are left out)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceContext:
    """What building a connector for one source takes: its settings and its secret (for this run only)."""

    name: str
    config: Mapping[str, Any]
    uri: str | None
    token: str | None
    token_env: str | None
    resilience: ResilienceSettings
    transport: httpx.BaseTransport | None = None  # tests may route requests; None: the network
    # for a kind that reads files (git): the worker's size limits, where it may keep clones, and
    # the folders a local path must lie in (the worker's and the source's organisation's)
    read_limits: ReadLimits = field(default_factory=ReadLimits)
    cache_dir: Path | None = None
    allowed_roots: tuple[Path, ...] = ()
    organisation_roots: tuple[str, ...] = ()
    # a folder's run may read one path below its root (`vera ingest PATH`); prune stays within it
    scope: str | None = None
    signatures: Signatures = lambda _keys: {}


class ItemSkipped(Exception):
    """One item cannot be converted (a corrupt document, an oversized field); the run goes on."""


class Connector(Protocol):
    """One source of one kind, ready to read."""

    def poll(self, position: Position | None) -> Iterator[Page]:
        """The items changed since position (None: all), page by page."""
        ...

    def slim(self) -> Iterator[str]:
        """The ids of every item still present at the source, without their bodies."""
        ...
