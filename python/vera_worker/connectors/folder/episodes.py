"""A file as its episode records it: the time it is dated by and the URI it cites
(how a version is written is every connector's: connectors/writing.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from vera_worker.connectors.folder.cursor import FileState


def modified_at(state: FileState) -> str:
    """When the file was last modified (an episode's observed time when the record names none)."""
    return dt.datetime.fromtimestamp(state.mtime_ns / 1e9, tz=dt.UTC).isoformat()


def record_uri(source_uri: str | None, root: Path, key: str) -> str:
    """What an episode cites: below the source's URI when it has one, else the file's own URI."""
    if source_uri:
        return f"{source_uri.rstrip('/')}/{key}"
    return (root / key).as_uri()
