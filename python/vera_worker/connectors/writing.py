"""How every connector writes one record version: raw bytes to the object
store (keyed by record and content, so erasing one version never deletes
another's bytes), then the episode with its passages and claims in one
transaction, with vectors from the group's embedder when one runs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from vera_client.adapters.postgres.executor import Executor
from vera_client.api import curation as curation_api
from vera_client.api import sources as sources_api
from vera_client.domain.callers import Principal
from vera_client.domain.ports import ObjectStore
from vera_worker.domain.records import ParsedRecord


def object_key(group_id: str, source_id: UUID, record_key: str, sha256: str) -> str:
    """Where a record version's raw bytes live: per record, per content (erasing one
    version never deletes another file's bytes)."""
    record = hashlib.sha256(record_key.encode()).hexdigest()[:24]
    return f"sources/{group_id}/{source_id}/{record}/{sha256}"


@dataclass(slots=True)
class Shaped:
    """A record in the SQL API's shapes, and the texts its vectors are embedded from."""

    passages: list[dict[str, Any]]
    claims: list[dict[str, Any]]

    @classmethod
    def of(cls, record: ParsedRecord) -> Shaped:
        return cls(record.chunks(), [c.as_claim() for c in record.claims])

    def texts(self) -> list[str]:
        """One per passage and claim, then the claims' subjects' names: the semantic rung of
        entity resolution compares them (issue 15)."""
        facts = [c["fact_text"] for c in self.claims]
        return [p["text"] for p in self.passages] + facts + [c["subject"] for c in self.claims]

    def attach(self, vectors: list[list[float]]) -> int:
        """Puts texts()'s vectors in place; how many passages and claims carry one."""
        if not vectors:
            return 0
        named = len(self.passages) + len(self.claims)
        for item, vector in zip([*self.passages, *self.claims], vectors[:named], strict=True):
            item["embedding"] = vector
        for claim, vector in zip(self.claims, vectors[named:], strict=True):
            claim["subject_embedding"] = vector
        return named


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordVersion:
    """One version of a record, ready to write."""

    key: str  # its external id
    data: bytes
    sha256: str
    mime: str | None
    observed_at: str | None
    title: str | None
    uri: str | None
    passages: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    model: str | None  # the embedder's, when the passages and claims carry vectors


def write_version(
    sql: Executor,
    objects: ObjectStore,
    caller: Principal,
    *,
    group_id: str,
    source_id: UUID,
    version: RecordVersion,
) -> sources_api.EpisodeVersion:
    """Raw bytes, then the episode with its passages and claims in one transaction. An unchanged
    content (the same hash as the live latest version) writes nothing and says created=False."""
    key = object_key(group_id, source_id, version.key, version.sha256)
    objects.put(key, version.data)
    # not flushed at commit (a record a second, not a disk flush each): a crash loses it only with
    # the page's cursor written after it, so the next run reads it again (runner.py)
    with sql.transaction(caller, flushed=False) as tx:
        episode = tx.run(
            sources_api.record_episode(
                group_id, source_id, version.key, bytes.fromhex(version.sha256), object_key=key,
                mime=version.mime, observed_at=version.observed_at, title=version.title, uri=version.uri,
            )
        )  # fmt: skip
        if episode.created and version.passages:
            tx.run(
                sources_api.store_chunks_call(group_id, episode.episode_id, version.passages, version.model)
            )
        if episode.created and version.claims:
            tx.run(curation_api.publish_claims(group_id, episode.episode_id, version.claims, version.model))
    return episode
