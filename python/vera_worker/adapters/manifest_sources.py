"""Registers the sources of a manifest (see domain/manifest.py) and asks the worker to read them."""

from __future__ import annotations

from pathlib import Path

from vera_client.api.sources import Source
from vera_client.client import VeraClient
from vera_worker.domain.manifest import read_manifest


def register_manifest(vera: VeraClient, group_id: str, manifest: Path) -> list[Source]:
    """Register every source of the manifest in group_id (admins), in the manifest's order."""
    return [
        vera.register_folder(
            group_id,
            spec.name,
            manifest.parent / spec.path,
            tier=spec.tier,
            kind=spec.kind,
            uri=spec.uri,
            functional=spec.functional,
        )
        for spec in read_manifest(manifest)
    ]


def request_all(vera: VeraClient, registered: list[Source]) -> list[int]:
    """One ingestion job per source, in order (each committed: the worker may start at once)."""
    return [vera.request_ingest(source.group_id, source.source_id) for source in registered]
