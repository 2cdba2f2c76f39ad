"""A folder tree of sources described by a sources.toml manifest (the bundled
example corpus has one): each [[source]] names a folder below the manifest,
its kind, trust tier and the predicates that are functional in it. Registering
a manifest registers each folder as a source and asks the worker to read it."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vera_client.api.sources import Source
from vera_client.client import VeraClient
from vera_client.domain.errors import InvalidArgumentError


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceSpec:
    name: str
    kind: str
    tier: int
    path: str  # folder relative to the manifest
    uri: str | None = None
    functional: tuple[str, ...] = ()


def read_manifest(path: Path) -> list[SourceSpec]:
    """The sources of a manifest, in its order; one InvalidArgumentError for a malformed one."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgumentError(f"cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgumentError(f"{path} is not valid TOML: {exc}") from exc
    entries = data.get("source")
    if not isinstance(entries, list) or not entries:
        raise InvalidArgumentError(f"{path}: expected one or more [[source]] tables")
    specs = []
    for number, entry in enumerate(entries, start=1):
        where = f"{path} source {number}"
        if not isinstance(entry, dict):
            raise InvalidArgumentError(f"{where}: not a table")
        name, kind, tier, folder = (
            entry.get("name"),
            entry.get("kind", "markdown"),
            entry.get("tier"),
            entry.get("path"),
        )
        if not isinstance(name, str) or not isinstance(kind, str) or not isinstance(folder, str):
            raise InvalidArgumentError(f"{where}: name, kind and path must be strings")
        if not isinstance(tier, int) or isinstance(tier, bool) or tier not in range(1, 5):
            raise InvalidArgumentError(f"{where}: tier must be 1, 2, 3 or 4")
        if PurePosixPath(folder).is_absolute() or ".." in PurePosixPath(folder).parts:
            raise InvalidArgumentError(f"{where}: path must be a folder below the manifest")
        functional = entry.get("functional", [])
        if not isinstance(functional, list) or not all(isinstance(f, str) for f in functional):
            raise InvalidArgumentError(f"{where}: functional must be a list of strings")
        uri = entry.get("uri")
        specs.append(
            SourceSpec(
                name=name,
                kind=kind,
                tier=tier,
                path=folder,
                uri=uri if isinstance(uri, str) else None,
                functional=tuple(functional),
            )
        )
    return specs


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
