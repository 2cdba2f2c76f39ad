"""Registers the sources of a manifest (see domain/manifest.py) and asks the worker to read them."""

from __future__ import annotations

from pathlib import Path

import psycopg

from vera_client.adapters.postgres import sources
from vera_client.domain.models import Source
from vera_worker.domain.manifest import read_manifest


def register_manifest(conn: psycopg.Connection, group_id: str, manifest: Path) -> list[Source]:
    """Register every source of the manifest in group_id (admins), in the manifest's order."""
    registered = []
    for spec in read_manifest(manifest):
        source_id = sources.register_folder(
            conn, group_id, spec.name, manifest.parent / spec.path,
            tier=spec.tier, kind=spec.kind, uri=spec.uri, functional=spec.functional,
        )  # fmt: skip
        registered.append(next(s for s in sources.list_sources(conn, group_id) if s.source_id == source_id))
    return registered


def request_all(conn: psycopg.Connection, registered: list[Source]) -> list[int]:
    """One ingestion job per source, deferred in order (commit to hand them to the worker)."""
    return [sources.request_ingest(conn, source) for source in registered]
