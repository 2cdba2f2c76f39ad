"""A file as the SQL API stores it: where its raw bytes go, its passages and
claims with their vectors, and the URI its episode cites."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from typing import Any
from uuid import UUID

from vera_client.domain.ports import Embedder
from vera_worker.connectors.folder.cursor import FileState
from vera_worker.domain.records import ParsedRecord


def object_key(group_id: str, source_id: UUID, record_key: str, sha256: str) -> str:
    """Where a record version's raw bytes live: per record, per content (erasing one
    version never deletes another file's bytes)."""
    record = hashlib.sha256(record_key.encode()).hexdigest()[:24]
    return f"sources/{group_id}/{source_id}/{record}/{sha256}"


def with_vectors(
    record: ParsedRecord, embedder: Embedder | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The record in the SQL API's shapes, with one vector per passage and claim when an embedder runs."""
    passages = record.chunks()
    claims = [c.as_claim() for c in record.claims]
    if embedder is None:
        return passages, claims, 0
    # subjects' names too: the semantic rung of entity resolution compares them (issue 15)
    texts = [p["text"] for p in passages] + [c["fact_text"] for c in claims] + [c["subject"] for c in claims]
    vectors = embedder.embed(texts) if texts else []
    named = len(passages) + len(claims)
    for item, vector in zip([*passages, *claims], vectors[:named], strict=True):
        item["embedding"] = vector
    for claim, vector in zip(claims, vectors[named:], strict=True):
        claim["subject_embedding"] = vector
    return passages, claims, named


def modified_at(state: FileState) -> str:
    """When the file was last modified (an episode's observed time when the record names none)."""
    return dt.datetime.fromtimestamp(state.mtime_ns / 1e9, tz=dt.UTC).isoformat()


def record_uri(source_uri: str | None, root: Path, key: str) -> str:
    """What an episode cites: below the source's URI when it has one, else the file's own URI."""
    if source_uri:
        return f"{source_uri.rstrip('/')}/{key}"
    return (root / key).as_uri()
