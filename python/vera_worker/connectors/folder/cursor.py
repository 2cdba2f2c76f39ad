"""Incremental reading: what changed in a source since its cursor.

The cursor holds one entry per record key (a file's path below the source's
root): modification time, size, content hash and the episode it became. A
file whose time and size are unchanged is not even read; one whose bytes hash
the same is unchanged whatever its time says; a key in the cursor that is no
longer on disk was deleted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FileState:
    """A file as the scan saw it."""

    key: str  # POSIX path relative to the source's root
    mtime_ns: int
    size: int
    # which file it was: the read opens it again and refuses another (a file swapped for a link)
    device: int = 0
    inode: int = 0


@dataclass(frozen=True, slots=True)
class CursorEntry:
    mtime_ns: int
    size: int
    sha256: str
    episode_id: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CursorEntry | None:
        try:
            return cls(
                mtime_ns=int(data["mtime_ns"]),
                size=int(data["size"]),
                sha256=str(data["sha256"]),
                episode_id=str(data["episode_id"]),
            )
        except (KeyError, TypeError, ValueError):
            return None  # an entry this code did not write: read the file again

    def as_json(self) -> dict[str, Any]:
        return {
            "mtime_ns": self.mtime_ns,
            "size": self.size,
            "sha256": self.sha256,
            "episode_id": self.episode_id,
        }


@dataclass(frozen=True, slots=True)
class ScanPlan:
    to_read: tuple[FileState, ...]  # new, or touched since the cursor
    untouched: int  # same time and size: not read
    deleted: tuple[tuple[str, CursorEntry], ...]  # in the cursor, gone from disk


def in_scope(key: str, scope: str | None) -> bool:
    """Whether a record key lies at or below scope (a relative path; None = everything)."""
    if not scope:
        return True
    scope = scope.strip("/")
    return key == scope or key.startswith(scope + "/")


def plan_scan(cursor: Mapping[str, Any], files: Iterable[FileState], scope: str | None = None) -> ScanPlan:
    """Compare a scan of the files in scope with the cursor."""
    entries = {
        key: CursorEntry.from_json(value) for key, value in cursor.items() if isinstance(value, Mapping)
    }
    seen: set[str] = set()
    to_read: list[FileState] = []
    untouched = 0
    for state in sorted(files, key=lambda f: f.key):
        seen.add(state.key)
        entry = entries.get(state.key)
        if entry is not None and entry.mtime_ns == state.mtime_ns and entry.size == state.size:
            untouched += 1
        else:
            to_read.append(state)
    deleted = tuple(
        (key, entry)
        for key, entry in sorted(entries.items())
        if entry is not None and key not in seen and in_scope(key, scope)
    )
    return ScanPlan(to_read=tuple(to_read), untouched=untouched, deleted=deleted)
