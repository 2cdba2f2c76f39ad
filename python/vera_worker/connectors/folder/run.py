"""Reads a filesystem source into VERA through the SQL API, incrementally.

One run (the worker's vera.ingest_source job) compares the files below the
source's root with its cursor, reads only what changed, and writes each file
in a transaction of its own. Cursor entries are written in batches (the
cursor is one JSON document per source, rewritten on each write): after a
crash the files since the last batch are read again and found unchanged by
their hash, so nothing is lost or written twice. Per file: the raw bytes go to the object
store (key named after the record and the content's hash), then
record_episode, store_chunks and publish_claims, with vectors from the
group's embedder. A file deleted from disk has its episode retracted. A file
that cannot be read is reported and left out of the cursor, so the next run
tries it again; it does not stop the others. A file is read without following any
link, and only when it is still the file the scan saw and within its kind's size
limit (reading.py); otherwise it is skipped with a warning naming it. So does a file that yields
nothing (no passage, no claim) and has warnings: a semicolon export read as one column must
not count as ingested. A parser's warnings are reported with the file they concern and logged.

Files are read, hashed and parsed ahead and embedded in batches across files
while earlier ones are written (connectors/pipeline.py); they are written and
reported in order, so what was prepared ahead and not written when a run ends
is simply read again by the next.

A run can be asked to stop (`should_stop`, checked between files: the CLI's
first Ctrl-C): it finishes the file in hand, writes the cursor of what was
committed and reports itself stopped; the next run reads what is left.

The worker vouches for the principal who asked for the run
(authenticate_principal), so everything is written with that caller's rights.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from vera_client.adapters.postgres.executor import Executor, Transaction
from vera_client.api import curation as curation_api
from vera_client.api import search as search_api
from vera_client.api import sources as sources_api
from vera_client.config import ReadLimits
from vera_client.domain.callers import Principal
from vera_client.domain.errors import (
    AuthenticationError,
    DatabaseUnavailableError,
    NotFoundError,
    ProviderUnavailableError,
    SourceUnavailableError,
    VeraError,
)
from vera_client.domain.ports import Embedder, ObjectStore
from vera_worker.adapters.usage import metered
from vera_worker.connectors.events import IngestEvent, IngestReport
from vera_worker.connectors.folder.cursor import CursorEntry, FileState, plan_scan
from vera_worker.connectors.folder.episodes import modified_at, record_uri
from vera_worker.connectors.folder.reading import FileSkipped, read_scanned
from vera_worker.connectors.folder.scan import open_source_root, scan_files, scope_path, source_root
from vera_worker.connectors.pipeline import embedded
from vera_worker.connectors.writing import RecordVersion, Shaped, write_version
from vera_worker.domain.formats import mime_type, parse_record
from vera_worker.domain.records import ParsedRecord, RecordFormatError, unnamed
from vera_worker.domain.statements import functional_predicates

logger = logging.getLogger(__name__)

# A file's failure is reported and the run goes on; these end the run (the job fails): the
# database or the caller's rights are gone, or the embedder's circuit is open, and every
# remaining file would fail the same way.
_RUN_STOPPERS = (DatabaseUnavailableError, AuthenticationError, ProviderUnavailableError)

# files whose cursor entries are written together
CURSOR_BATCH = 200

EmbedderForModel = Callable[[str | None], Embedder | None]
"""Given a group's pinned model (None before its first vector), the embedder to use, if any."""


@dataclass(frozen=True, slots=True)
class IngestRequest:
    group_id: str
    source_id: UUID
    principal_id: UUID
    path: str | None = None

    @classmethod
    def from_job_args(cls, args: dict[str, Any]) -> IngestRequest:
        return cls(
            group_id=str(args["group_id"]),
            source_id=UUID(str(args["source_id"])),
            principal_id=UUID(str(args["principal_id"])),
            path=args.get("path") or None,
        )


@dataclass(frozen=True, slots=True)
class _Source:
    name: str
    uri: str | None
    config: dict[str, Any]
    pinned_model: str | None
    roots: list[str]  # the folders its organisation may read (operators': vera tenant roots add)


@dataclass(slots=True)
class _Read:
    """A file as the pipeline prepared it: skipped, failed, unchanged, or read and parsed."""

    state: FileState
    skipped: str | None = None
    failed: str | None = None
    unchanged: CursorEntry | None = None
    data: bytes = b""
    sha256: str = ""
    record: ParsedRecord | None = None
    shaped: Shaped | None = None


@dataclass(slots=True)
class _Run:
    """One run's state, passed along instead of a dozen arguments."""

    sql: Executor
    request: IngestRequest
    source: _Source
    root: Path
    root_fd: int  # the root folder, opened without following links: every file is opened below it
    report: IngestReport
    embedder: Embedder | None
    functional: frozenset[str]
    # asked between files, beside the ingestion's own should_stop (a job's: its worker is stopping)
    should_stop: Callable[[], bool] = lambda: False
    total: int = 0
    done: int = 0
    # cursor entries of committed files, not yet written
    pending: dict[str, Any] = field(default_factory=dict)

    @property
    def caller(self) -> Principal:
        """Every transaction of the worker vouches for the principal who asked for the run."""
        return Principal(self.request.principal_id)

    def advance(self, tx: Transaction, changes: dict[str, Any]) -> None:
        tx.run(sources_api.advance_source_cursor(self.request.group_id, self.request.source_id, changes))

    def remember(self, key: str, entry: CursorEntry) -> None:
        """A committed file's cursor entry, written with the next batch."""
        self.pending[key] = entry.as_json()
        if len(self.pending) >= CURSOR_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            with self.sql.transaction(self.caller) as tx:
                self.advance(tx, self.pending)
            self.pending = {}


class SourceIngestion:
    """Runs ingestion requests through the worker's executor (role vera_worker)."""

    def __init__(
        self,
        sql: Executor,
        *,
        objects: ObjectStore,
        embedder_for_model: EmbedderForModel,
        on_progress: Callable[[IngestEvent], None] | None = None,
        on_report: Callable[[IngestReport], None] | None = None,
        on_failure: Callable[[IngestRequest, str, VeraError], None] | None = None,
        allowed_roots: Sequence[Path],
        should_stop: Callable[[], bool] = lambda: False,
        limits: ReadLimits | None = None,
    ) -> None:
        """allowed_roots: the only folders (and what is below them) a source may name as its root
        (within its organisation's too). should_stop: asked between files; True ends the run after
        the file in hand. limits: what is read of one file (VERA_WORKER__READ_LIMITS)."""
        self._limits = limits or ReadLimits()
        self._should_stop = should_stop
        self._allowed_roots = tuple(allowed_roots)
        self._on_report = on_report
        self._on_failure = on_failure
        self._sql = sql
        self._objects = objects
        self._embedder_for_model = embedder_for_model
        self._on_progress = on_progress

    def run(self, request: IngestRequest, should_stop: Callable[[], bool] = lambda: False) -> IngestReport:
        """One run; a VeraError ends it (the job fails) after on_failure has heard of it, with the
        source's name (its id if unknown). should_stop: asked between files too (the job's)."""
        name = str(request.source_id)
        try:
            # what a hosted embedder's calls for the passages used is recorded for the group
            with metered(self._sql, request.group_id):
                source, cursor = self._load_source(request)
                name = source.name
                return self._run(request, source, cursor, should_stop)
        except VeraError as exc:
            if self._on_failure is not None:
                self._on_failure(request, name, exc)
            raise

    def _run(
        self, request: IngestRequest, source: _Source, cursor: dict[str, Any], should_stop: Callable[[], bool]
    ) -> IngestReport:
        root = source_root(source.config, source.name, self._allowed_roots, source.roots)
        root_fd = open_source_root(root, source.name)
        run = _Run(
            sql=self._sql,
            request=request,
            source=source,
            root=root,
            root_fd=root_fd,
            report=IngestReport(source=source.name),
            embedder=self._embedder_for_model(source.pinned_model),
            functional=functional_predicates(source.config.get("functional")),
            should_stop=should_stop,
        )
        try:
            return self._read(run, cursor)
        finally:
            os.close(root_fd)

    def _read(self, run: _Run, cursor: dict[str, Any]) -> IngestReport:
        request, source, root = run.request, run.source, run.root
        files = list(scan_files(root, request.path))
        plan = plan_scan(cursor, files, scope=request.path)
        if not files and plan.deleted:
            # an unmounted share or an emptied folder looks like every file deleted
            raise SourceUnavailableError(
                f"found no files under {scope_path(root, request.path)} but the cursor of "
                f"{source.name!r} tracks {len(plan.deleted)} there: not retracting them all "
                "(retract the source itself if it is gone)"
            )
        run.report.scanned, run.report.untouched = len(files), plan.untouched
        run.total = len(plan.to_read) + len(plan.deleted)
        self._emit(IngestEvent("planned", source.name, total=run.total))
        try:
            # read, parsed and hashed ahead while the embedder works; written here, in order
            prepared = embedded(
                plan.to_read, lambda state: self._prepare(run, state, cursor.get(state.key)), run.embedder
            )
            with closing(prepared):
                for read, vectors in prepared:
                    if self._stopping(run):
                        break
                    run.done += 1
                    self._ingest_file(run, read, vectors)
            for key, entry in plan.deleted:
                if self._stopping(run):
                    break
                run.done += 1
                self._retract(run, key, entry)
        except DatabaseUnavailableError:
            # nothing more can be written: the files committed since the last batch are found
            # unchanged by their hash on the next run
            raise
        except BaseException:
            run.flush()  # what was committed stays known, also when the run ends early
            raise
        run.flush()
        report = run.report
        logger.info(
            "ingest %s: %d scanned, %d untouched, %d unchanged, %d ingested, %d retracted, %d failed, "
            "%d skipped, %d warnings%s",
            source.name, report.scanned, report.untouched, report.unchanged, report.ingested,
            report.retracted, len(report.failed), len(report.skipped), len(report.warnings),
            f"; stopped when asked, {run.total - run.done} left" if report.stopped else "",
        )  # fmt: skip
        if self._on_report is not None:
            self._on_report(report)
        return report

    def _stopping(self, run: _Run) -> bool:
        if not run.report.stopped and (self._should_stop() or run.should_stop()):
            run.report.stopped = True
        return run.report.stopped

    def _emit(self, event: IngestEvent) -> None:
        if self._on_progress is not None:
            self._on_progress(event)

    def _event(self, run: _Run, kind: Any, key: str, **counts: Any) -> None:
        self._emit(IngestEvent(kind, run.source.name, key, run.done, run.total, **counts))

    def _load_source(self, request: IngestRequest) -> tuple[_Source, dict[str, Any]]:
        with self._sql.transaction(Principal(request.principal_id)) as tx:
            found = tx.run(sources_api.list_sources(request.group_id))
            source = next((s for s in found if s.source_id == request.source_id), None)
            if source is None:
                raise NotFoundError(f"unknown source {request.source_id} in group {request.group_id}")
            if source.retracted_at is not None:
                raise NotFoundError(f"source {source.name!r} was retracted")
            cursor = tx.run(sources_api.source_cursor(request.group_id, request.source_id))
            pins = tx.run(search_api.pinned_models([request.group_id]))
            roots = tx.run(sources_api.source_roots(request.group_id))
        pinned = pins[0][0] if pins else None
        return _Source(
            name=source.name, uri=source.uri, config=dict(source.config), pinned_model=pinned, roots=roots
        ), cursor

    def _prepare(self, run: _Run, state: FileState, previous: Any) -> tuple[_Read, list[str]]:
        """A file read, hashed and parsed (in the pipeline's thread: it reports nothing), with the
        texts to embed."""
        read = _Read(state)
        try:
            read.data = read_scanned(run.root_fd, state, self._limits.max_bytes(mime_type(state.key)))
        except FileSkipped as exc:
            read.skipped = str(exc)
            return read, []
        except OSError as exc:
            read.failed = f"cannot read: {exc.strerror}"
            return read, []
        read.sha256 = hashlib.sha256(read.data).hexdigest()
        known = CursorEntry.from_json(previous) if isinstance(previous, dict) else None
        if known is not None and known.sha256 == read.sha256:
            # touched, not changed: remember the new time so the next scan skips it unread
            read.unchanged = CursorEntry(state.mtime_ns, state.size, read.sha256, known.episode_id)
            return read, []
        try:
            record = parse_record(
                state.key, read.data, functional=run.functional, max_csv_rows=self._limits.csv_rows
            )
            if record.warnings and not record.passages and not record.claims:
                # nothing read, and the parser says why: a failure, tried again on the next run
                read.failed = "nothing read: " + unnamed(state.key, "; ".join(record.warnings))
                return read, []
            read.record, read.shaped = record, Shaped.of(record)
        except _RUN_STOPPERS:
            raise
        except (RecordFormatError, VeraError) as exc:
            read.failed = str(exc)
            return read, []
        return read, read.shaped.texts() if run.embedder is not None else []

    def _ingest_file(self, run: _Run, read: _Read, found: list[list[float]] | VeraError) -> None:
        """Reports a prepared file, in order, and writes it (with found: its vectors, or why it has none)."""
        state = read.state
        if read.skipped is not None:
            run.report.skipped.append((state.key, read.skipped))
            # the reason names the file
            logger.warning("ingest %s: skipped %s", run.source.name, read.skipped)
            self._event(run, "skipped", state.key, message=read.skipped)
            return
        if read.failed is not None:
            self._fail(run, state.key, read.failed)
            return
        if read.unchanged is not None:
            run.remember(state.key, read.unchanged)
            run.report.unchanged += 1
            self._event(run, "unchanged", state.key)
            return
        record, shaped = read.record, read.shaped
        assert record is not None and shaped is not None  # _prepare's contract
        if isinstance(found, _RUN_STOPPERS):
            raise found
        if isinstance(found, VeraError):
            self._fail(run, state.key, str(found))
            return
        vectors = shaped.attach(found)
        passages, claims = shaped.passages, shaped.claims
        for warning in record.warnings:
            run.report.warnings.append((state.key, warning))
            logger.warning("ingest %s: %s", run.source.name, warning)  # the warning names its file
            self._event(run, "warned", state.key, message=warning)
        try:
            created = self._write(run, state=state, data=read.data, sha256=read.sha256, record=record,
                                  passages=passages, claims=claims, vectors=vectors)  # fmt: skip
        except _RUN_STOPPERS:
            raise
        except VeraError as exc:
            self._fail(run, state.key, str(exc))
            return
        if created is None:  # the same bytes again (say, after a cursor write was lost)
            run.report.unchanged += 1
            self._event(run, "unchanged", state.key)
            return
        run.report.episodes.append(created)
        run.report.ingested += 1
        run.report.passages += len(passages)
        run.report.claims += len(claims)
        run.report.embeddings += vectors
        self._event(
            run, "ingested", state.key, passages=len(passages), claims=len(claims), embeddings=vectors
        )

    def _write(
        self,
        run: _Run,
        *,
        state: FileState,
        data: bytes,
        sha256: str,
        record: ParsedRecord,
        passages: list[dict[str, Any]],
        claims: list[dict[str, Any]],
        vectors: int,
    ) -> UUID | None:
        """Raw bytes, then the episode with its passages and claims in one transaction; the new
        episode, or None when the record's content was known already."""
        request = run.request
        model = run.embedder.model if run.embedder is not None and vectors else None
        version = RecordVersion(
            key=state.key, data=data, sha256=sha256, mime=mime_type(state.key),
            observed_at=record.dated_at or modified_at(state), title=record.title,
            uri=record_uri(run.source.uri, run.root, state.key), passages=passages, claims=claims,
            model=model,
        )  # fmt: skip
        episode = write_version(
            run.sql, self._objects, run.caller, group_id=request.group_id, source_id=request.source_id,
            version=version,
        )  # fmt: skip
        # known from here on: the episode is committed, its entry goes with the next batch
        run.remember(state.key, CursorEntry(state.mtime_ns, state.size, sha256, str(episode.episode_id)))
        return episode.episode_id if episode.created else None

    def _retract(self, run: _Run, key: str, entry: CursorEntry) -> None:
        try:
            with run.sql.transaction(run.caller) as tx:
                reason = f"{key} was deleted from {run.source.name}"
                episode = UUID(entry.episode_id)
                tx.run(curation_api.retract_episode_call(run.request.group_id, episode, reason))
                run.advance(tx, {key: None})
        except _RUN_STOPPERS:
            raise
        except VeraError as exc:
            self._fail(run, key, f"deleted, but not retracted: {exc}")
            return
        run.report.retracted += 1
        self._event(run, "retracted", key)

    def _fail(self, run: _Run, key: str, message: str) -> None:
        message = unnamed(key, message)  # shown beside the file's name: said once
        run.report.failed.append((key, message))
        logger.warning("ingest %s: %s: %s", run.source.name, key, message)
        self._event(run, "failed", key, message=message)
