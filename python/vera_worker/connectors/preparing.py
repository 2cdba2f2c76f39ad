"""What the runner's pipeline does to each item of a page before it is written (runner.py,
pipeline.py): read its body (a Pending item's), hash it, compare it with VERA's head of its
record, and only when it changed convert and shape it, with the texts to embed. It runs in the
pipeline's thread, so it reports nothing: the runner reports each Ready in order."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vera_client.domain.errors import (
    AuthenticationError,
    DatabaseUnavailableError,
    ProviderUnavailableError,
    SourceUnavailableError,
    VeraError,
)
from vera_client.domain.ports import Embedder
from vera_worker.connectors.contract import Item, ItemSkipped, Pending, Skip
from vera_worker.connectors.writing import Shaped

# these end the run: every remaining item would fail the same way
RUN_STOPPERS = (
    DatabaseUnavailableError,
    AuthenticationError,
    ProviderUnavailableError,
    SourceUnavailableError,
)


@dataclass(slots=True)
class Ready:
    """A page's item as the pipeline prepared it: read and hashed, and converted and shaped unless
    unchanged, skipped or failed."""

    key: str
    signature: str | None = None
    item: Item | None = None
    skipped: str | None = None  # why it was not read
    sha256: str = ""
    unchanged: bool = False
    shaped: Shaped | None = None
    error: ItemSkipped | VeraError | None = None  # reading, converting or shaping it failed


def prepare(
    entry: Item | Skip | Pending, heads: Mapping[str, Any], embedder: Embedder | None
) -> tuple[Ready, list[str]]:
    """An item read, hashed and compared with VERA's head of its record; converted and shaped,
    with the texts to embed, when it changed (in the pipeline's thread: it reports nothing)."""
    if isinstance(entry, Skip):
        return Ready(entry.key, skipped=entry.reason), []
    ready = Ready(entry.key, entry.signature)
    raw: bytes | Skip
    try:
        raw = entry.read() if isinstance(entry, Pending) else entry.raw
    except ItemSkipped as exc:
        ready.error = exc
        return ready, []
    if isinstance(raw, Skip):
        ready.skipped = raw.reason
        return ready, []
    ready.sha256 = hashlib.sha256(raw).hexdigest()
    head = heads.get(entry.key)
    if head is not None and head.live and head.content_sha256.hex() == ready.sha256:
        ready.unchanged = True
        return ready, []
    try:
        converted = entry.convert(raw) if isinstance(entry, Pending) else entry
        if isinstance(converted, Skip):
            ready.skipped = converted.reason
        else:
            ready.item = converted
            ready.shaped = Shaped.of(converted.record)
    except RUN_STOPPERS:
        raise
    except (ItemSkipped, VeraError) as exc:
        ready.error = exc
    return ready, ready.shaped.texts() if ready.shaped is not None and embedder is not None else []
