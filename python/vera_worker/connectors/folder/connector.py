"""The folder connector: a source whose config names a root folder (below the
folders the operator allows the worker and the source's organisation). The
runner (connectors/runner.py) runs it as it runs every kind.

There is no change feed to ask, so a run scans the folder (stat only: the
file's time, size and identity, scan.py), asks VERA which change signature it
holds of each file's record (its mtime_ns:size when last read,
SourceContext.signatures) and yields only the files whose signature differs,
in pages, as Pending items: the runner's pipeline reads each one ahead
(reading.py: no link followed, refused when it is not the file the scan saw or
over its kind's size limit) and hashes it, and parses it only when its content
changed. A touched file whose bytes hash the same is not written again; its
new signature is stored, so the next run does not read it. A re-run with
nothing changed reads no file at all. The position is empty: the signatures
kept with the records are the folder's cursor, so a run that died or was
stopped reads only what it had not committed.

A file that cannot be read, or yields nothing while its parser warns (a
semicolon export read as one column), fails with a message naming it and is
tried again by the next run. Deleted files are found by the slim listing (the
scan's paths) on every run (prune_interval_s 0 by default), within the path
a run reads (`vera ingest PATH`)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

from vera_worker.connectors.contract import Item, ItemSkipped, Page, Pending, Position, Skip, SourceContext
from vera_worker.connectors.folder.reading import FileSkipped, FileState, read_scanned
from vera_worker.connectors.folder.scan import open_source_root, scan_files, source_root
from vera_worker.domain.formats import mime_type, parse_record
from vera_worker.domain.records import RecordFormatError, unnamed
from vera_worker.domain.statements import functional_predicates

PAGE_SIZE = 200  # files yielded (and their signatures stored) together
LOOKUP = 5000  # files whose signatures are asked for in one call


class FolderConnector:
    def __init__(self, context: SourceContext) -> None:
        self._context = context
        self._root = source_root(
            dict(context.config), context.name, context.allowed_roots, context.organisation_roots
        )
        self._functional = functional_predicates(context.config.get("functional"))
        self._listed: list[str] | None = None  # the paths the run's scan found

    def poll(self, position: Position | None) -> Iterator[Page]:
        """The files whose signature VERA does not hold, in pages; the first page counts the
        files found unchanged by their signature (not read) and how many are to read."""
        fd = open_source_root(self._root, self._context.name)
        try:
            files = sorted(scan_files(self._root, self._context.scope), key=lambda f: f.key)
            self._listed = [f.key for f in files]
            known: dict[str, str] = {}
            for start in range(0, len(files), LOOKUP):
                known.update(self._context.signatures([f.key for f in files[start : start + LOOKUP]]))
            todo = [f for f in files if known.get(f.key) != f.signature]
            untouched = len(files) - len(todo)
            if not todo:
                yield Page(items=(), untouched=untouched, planned=0)
                return
            for start in range(0, len(todo), PAGE_SIZE):
                first = start == 0
                yield Page(
                    items=tuple(self._pending(fd, state) for state in todo[start : start + PAGE_SIZE]),
                    untouched=untouched if first else 0,
                    planned=len(todo) if first else None,
                )
        finally:
            os.close(fd)

    def slim(self) -> Iterator[str]:
        """The paths the run's scan found (scanned again when the run did not poll)."""
        if self._listed is None:
            self._listed = [f.key for f in scan_files(self._root, self._context.scope)]
        yield from self._listed

    def _pending(self, fd: int, state: FileState) -> Pending:
        return Pending(
            key=state.key,
            signature=state.signature,
            read=lambda: self._read(fd, state),
            convert=lambda data: self._convert(state, data),
        )

    def _read(self, fd: int, state: FileState) -> bytes | Skip:
        limit = self._context.read_limits.max_bytes(mime_type(state.key))
        try:
            return read_scanned(fd, state, limit)
        except FileSkipped as exc:
            return Skip(key=state.key, reason=str(exc))
        except OSError as exc:
            raise ItemSkipped(f"cannot read: {exc.strerror}") from exc

    def _convert(self, state: FileState, data: bytes) -> Item:
        try:
            record = parse_record(
                state.key, data, functional=self._functional,
                max_csv_rows=self._context.read_limits.csv_rows,
            )  # fmt: skip
        except RecordFormatError as exc:
            raise ItemSkipped(str(exc)) from exc
        if record.warnings and not record.passages and not record.claims:
            # nothing read, and the parser says why: a failure, tried again on the next run
            raise ItemSkipped("nothing read: " + unnamed(state.key, "; ".join(record.warnings)))
        return Item(
            key=state.key, raw=data, mime=mime_type(state.key) or "application/octet-stream", record=record,
            uri=record_uri(self._context.uri, self._root, state.key), observed_at=modified_at(state),
            signature=state.signature,
        )  # fmt: skip


def modified_at(state: FileState) -> str:
    """When the file was last modified (an episode's observed time when the record names none)."""
    return dt.datetime.fromtimestamp(state.mtime_ns / 1e9, tz=dt.UTC).isoformat()


def record_uri(source_uri: str | None, root: Path, key: str) -> str:
    """What an episode cites: below the source's URI when it has one, else the file's own URI."""
    if source_uri:
        return f"{source_uri.rstrip('/')}/{key}"
    return (root / key).as_uri()
