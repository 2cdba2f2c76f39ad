"""Runs any connector of the contract (contract.py) over its source: one loop
for every kind, the folder's included.

A run polls from the position its source's cursor holds (`@position`), page by
page. Each item is hashed: when VERA holds the same content as the record's live
latest version it is a no-op (nothing embedded or written); otherwise its raw
bytes go to the object store and its episode, passages and claims are written in
one transaction (writing.py). Once a page's items are committed its position is
written (one small cursor entry, not one per record: the cursor does not grow
with the source), so a run that dies resumes after the last committed page, and
what it wrote of the page in hand is found unchanged by its hash: nothing is
lost or written twice. A page's items are read (a Pending item's body), hashed
and embedded ahead (preparing.py, pipeline.py), and written in order; one
pipeline runs through all the pages (page_stream.py), so the next page is fetched, read and
embedded while this one is written (not started and drained once a page). An item
that cannot be converted is skipped with a warning that names it and counted;
the run goes on.

Change signatures: an item's signature (a file's mtime and size) is stored with
the version written, or found unchanged by its hash (a touched file), for each
page once it is written, and also when the run stops or fails mid-page; the
connector asks for them (SourceContext.signatures, through record_heads) and
yields only what changed, so a re-run with nothing changed reads no body.

A run can be asked to stop (`should_stop`, the worker's and the job's, checked
between items: the CLI's first Ctrl-C): it finishes the item in hand, keeps the
signatures of what was committed, writes no position for the page in hand and
reports itself stopped; the next run reads what is left.

Pruning: at most once per `prune_interval_s` (source config; the kind's
default, else an hour; folders and git: every run) a run lists the ids still
at the source (slim, no bodies) and retracts the records VERA holds that the
listing lacks (within the run's scope, when it reads one path of a folder). An
empty listing while VERA holds records is refused (an outage, an unmounted
share or a wrong filter looks like everything deleted).

The secret comes from the variable the source's token_env names (secrets.py),
for this run only; every message that leaves the run passes `redacted`."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from vera_client.adapters.postgres.executor import Executor, Transaction
from vera_client.api import curation as curation_api
from vera_client.api import search as search_api
from vera_client.api import sources as sources_api
from vera_client.config import ReadLimits, ResilienceSettings
from vera_client.domain.callers import Principal
from vera_client.domain.errors import (
    DatabaseUnavailableError,
    NotFoundError,
    SourceUnavailableError,
    VeraError,
)
from vera_client.domain.ports import Embedder, ObjectStore
from vera_worker.adapters.usage import metered
from vera_worker.connectors.contract import (
    Connector,
    ItemSkipped,
    Page,
    Skip,
    SourceContext,
    in_scope,
)
from vera_worker.connectors.events import IngestEvent, IngestReport
from vera_worker.connectors.page_stream import PageEnd, PageStart, page_stream, prepared
from vera_worker.connectors.pipeline import embedded
from vera_worker.connectors.preparing import RUN_STOPPERS, Ready
from vera_worker.connectors.registry import Kind
from vera_worker.connectors.secrets import redacted, source_token
from vera_worker.connectors.writing import RecordVersion, write_version
from vera_worker.domain.records import unnamed

logger = logging.getLogger(__name__)

POSITION_KEY = "@position"  # the connector's own cursor, in the source's cursor document

EmbedderForModel = Callable[[str | None], Embedder | None]


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectorRequest:
    group_id: str
    source_id: UUID
    principal_id: UUID
    scope: str | None = None  # one path below a folder's root (`vera ingest PATH`); None: all of it


@dataclass(slots=True)
class _Run:
    request: ConnectorRequest
    name: str
    token: str | None
    embedder: Embedder | None
    report: IngestReport
    should_stop: Callable[[], bool]
    done: int = 0
    total: int = 0
    planned: bool = False  # the "planned" event was sent
    counted: bool = False  # the connector said how many items it will yield: they count as scanned
    # signatures of the page in hand's committed items, stored with its position (or when the
    # run ends mid-page)
    noted: list[sources_api.NotedSignature] = field(default_factory=list)

    @property
    def caller(self) -> Principal:
        return Principal(self.request.principal_id)


def source_of(tx: Transaction, group_id: str, source_id: UUID) -> sources_api.Source:
    """The source a run reads, or NotFoundError."""
    found = next((s for s in tx.run(sources_api.list_sources(group_id)) if s.source_id == source_id), None)
    if found is None:
        raise NotFoundError(f"unknown source {source_id} in group {group_id}")
    return found


class ConnectorIngestion:
    """Runs a connector kind's source through the worker's executor (role vera_worker)."""

    def __init__(
        self,
        sql: Executor,
        *,
        objects: ObjectStore,
        embedder_for_model: EmbedderForModel,
        environ: Mapping[str, str],
        resilience: ResilienceSettings | None = None,
        on_progress: Callable[[IngestEvent], None] | None = None,
        transport: Any = None,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        read_limits: ReadLimits | None = None,
        cache_dir: Path | None = None,
        allowed_roots: tuple[Path, ...] = (),
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        """environ: where token_env variables are read (the worker's environment). transport: an
        httpx transport for tests; None reaches the network. read_limits, cache_dir,
        allowed_roots: for kinds that read files (folders and git: what is read of one file, its
        clones' folder, the folders a source's root or local repository may lie in). should_stop:
        asked between items beside each run's own (the CLI's Ctrl-C)."""
        self._should_stop = should_stop
        self._read_limits = read_limits or ReadLimits()
        self._cache_dir = cache_dir
        self._allowed_roots = allowed_roots
        self._sql = sql
        self._objects = objects
        self._embedder_for_model = embedder_for_model
        self._environ = environ
        self._resilience = resilience or ResilienceSettings()
        self._on_progress = on_progress
        self._transport = transport
        self._clock = clock

    def run(self, kind: Kind, request: ConnectorRequest, should_stop: Callable[[], bool]) -> IngestReport:
        """One run; a VeraError that ends it carries no secret. What a hosted embedder's calls for
        its passages used is recorded for the group when it ends."""
        with metered(self._sql, request.group_id):
            return self._run(kind, request, should_stop)

    def _run(self, kind: Kind, request: ConnectorRequest, should_stop: Callable[[], bool]) -> IngestReport:
        with self._sql.transaction(Principal(request.principal_id)) as tx:
            source = source_of(tx, request.group_id, request.source_id)
            if source.retracted_at is not None:
                raise NotFoundError(f"source {source.name!r} was retracted")
            settings = tx.run(sources_api.source_run_settings(request.group_id, request.source_id))
            cursor = tx.run(sources_api.source_cursor(request.group_id, request.source_id))
            pins = tx.run(search_api.pinned_models([request.group_id]))
            roots = tx.run(sources_api.source_roots(request.group_id))
        token = source_token(source.name, settings.token_env, self._environ)
        run = _Run(
            request=request, name=source.name, token=token,
            embedder=self._embedder_for_model(pins[0][0] if pins else None),
            report=IngestReport(source=source.name),
            should_stop=lambda: self._should_stop() or should_stop(),
        )  # fmt: skip
        context = SourceContext(
            name=source.name, config=dict(source.config), uri=source.uri, token=token,
            token_env=settings.token_env, resilience=self._resilience, transport=self._transport,
            read_limits=self._read_limits, cache_dir=self._cache_dir, allowed_roots=self._allowed_roots,
            organisation_roots=tuple(roots), scope=request.scope,
            signatures=lambda keys: self._signatures(run, keys),
        )  # fmt: skip
        try:
            connector = kind.build(context)
            self._poll(run, connector, cursor.get(POSITION_KEY))
            if not run.report.stopped and kind.prune_due(source.config, settings.pruned_at, self._clock()):
                self._prune(run, connector.slim())
                run.report.pruned = request.scope is None  # a scoped run compared part of the source
        except VeraError as exc:
            # the last guard: a server that echoed the token must not put it in a log or a job row
            raise type(exc)(redacted(str(exc), token)) from None
        report = run.report
        logger.info(
            "ingest %s: %d scanned, %d untouched, %d unchanged, %d ingested, %d retracted, %d failed, "
            "%d skipped, %d warnings%s",
            source.name, report.scanned, report.untouched, report.unchanged, report.ingested,
            report.retracted, len(report.failed), len(report.skipped), len(report.warnings),
            f"; stopped when asked, {max(run.total - run.done, 0)} left" if report.stopped else "",
        )  # fmt: skip
        return report

    def _poll(self, run: _Run, connector: Connector, position: Any) -> None:
        """The connector's pages, their items written in turn, until the last or a stop. One
        pipeline runs through every page (pipeline.py): the next page is fetched, and its items
        read, hashed and embedded, while this one's are written, so a run of many pages keeps the
        embedder as busy as a run of one; each page's position is written once its items are."""
        pages = connector.poll(position if isinstance(position, dict) else None)
        try:
            self._write_pages(run, pages)
        finally:
            close = getattr(pages, "close", None)  # a generator: what it holds open (a folder) is closed
            if close is not None:
                close()
        self._plan(run, None)

    def _plan(self, run: _Run, planned: int | None) -> None:
        """The "planned" event, once, with the first page's count when the connector knows it."""
        if not run.planned:
            run.planned, run.total = True, planned or 0
            if planned is not None:  # what the connector found, read or not (a folder's scan)
                run.counted = True
                run.report.scanned += planned
            self._emit(IngestEvent("planned", run.name, total=run.total))

    def _signatures(self, run: _Run, keys: Sequence[str]) -> dict[str, str]:
        """What the connector asks: the signatures of these records' live latest versions."""
        if not keys:
            return {}
        request = run.request
        with self._sql.transaction(run.caller) as tx:
            heads = tx.run(sources_api.record_heads(request.group_id, request.source_id, keys))
        return {h.external_id: h.signature for h in heads if h.live and h.signature is not None}

    def _heads(self, run: _Run, page: Page) -> dict[str, Any]:
        """VERA's heads of the page's records (the pipeline's thread asks, before reading them)."""
        keys = [item.key for item in page.items if not isinstance(item, Skip)]
        if not keys:
            return {}
        request = run.request
        with self._sql.transaction(run.caller) as tx:
            return {
                h.external_id: h
                for h in tx.run(sources_api.record_heads(request.group_id, request.source_id, keys))
            }

    def _write_pages(self, run: _Run, pages: Iterable[Page]) -> None:
        """Write the pages' items, and after each page's its position and their signatures,
        until the pages end or the run is asked to stop. The items are read, hashed and embedded
        ahead (pipeline.py) and written here, in order. A run that stops or fails mid-page keeps
        the signatures of what it committed (so the next run does not read those again), not the
        page's position."""
        stream = page_stream(pages, lambda page: self._heads(run, page))
        items = embedded(stream, lambda entry: prepared(entry, run.embedder), run.embedder)
        try:
            with closing(items):
                for ready, found in items:
                    if isinstance(ready, PageStart):
                        self._plan(run, ready.page.planned)
                        run.report.scanned += ready.page.untouched
                        run.report.untouched += ready.page.untouched
                        continue
                    if isinstance(ready, PageEnd):
                        self._note(run, ready.page)  # its items are committed: its position
                        continue
                    if run.should_stop():
                        run.report.stopped = True
                        self._note(run, None)
                        return  # the page's position is not written: the next run reads it again
                    run.done += 1
                    run.report.scanned += 0 if run.counted else 1
                    if ready.skipped is not None:
                        self._skip(run, ready.key, ready.skipped)
                    elif ready.unchanged:
                        run.report.unchanged += 1
                        self._noted(run, ready)
                        self._emit(IngestEvent("unchanged", run.name, ready.key, run.done, run.total))
                    else:
                        self._write_item(run, ready, found)
        except DatabaseUnavailableError:
            raise  # nothing can be written: the next run finds what was committed unchanged by hash
        except BaseException:
            self._note(run, None)  # what was committed stays known, also when the run ends early
            raise

    def _noted(self, run: _Run, ready: Ready) -> None:
        """A committed item's signature, stored with the page's position."""
        if ready.signature is not None:
            run.noted.append(sources_api.NotedSignature(
                external_id=ready.key, sha256=ready.sha256, signature=ready.signature))  # fmt: skip

    def _note(self, run: _Run, page: Page | None) -> None:
        """The signatures noted, with the page's position once it is written (None: mid-page)."""
        request = run.request
        if page is None and not run.noted:
            return
        with self._sql.transaction(run.caller) as tx:
            if run.noted:
                tx.run(sources_api.note_record_signatures(request.group_id, request.source_id, run.noted))
            if page is not None:
                position = {POSITION_KEY: dict(page.position)}
                tx.run(sources_api.advance_source_cursor(request.group_id, request.source_id, position))
        run.noted = []

    def _write_item(self, run: _Run, ready: Ready, found: list[list[float]] | VeraError) -> None:
        try:
            if ready.error is not None:
                raise ready.error
            item = ready.item
            assert item is not None  # converted unless skipped, unchanged or failed (preparing.py)
            if isinstance(found, VeraError):
                raise found
            assert ready.shaped is not None  # prepare's contract
            vectors = ready.shaped.attach(found)
            passages, claims = ready.shaped.passages, ready.shaped.claims
            for warning in item.record.warnings:  # a parser's warnings, named with their item
                run.report.warnings.append((item.key, warning))
                logger.warning("ingest %s: %s: %s", run.name, item.key, unnamed(item.key, warning))
                self._emit(IngestEvent("warned", run.name, item.key, run.done, run.total, message=warning))
            version = RecordVersion(
                key=item.key, data=item.raw, sha256=ready.sha256, mime=item.mime,
                observed_at=item.record.dated_at or item.observed_at, title=item.record.title, uri=item.uri,
                passages=passages, claims=claims,
                model=run.embedder.model if run.embedder is not None and vectors else None,
            )  # fmt: skip
            request = run.request
            episode = write_version(
                self._sql, self._objects, run.caller,
                group_id=request.group_id, source_id=request.source_id, version=version,
            )  # fmt: skip
        except RUN_STOPPERS:
            raise
        except (ItemSkipped, VeraError) as exc:
            self._fail(run, ready.key, str(exc))
            return
        self._noted(run, ready)
        if not episode.created:  # the same content again (say, after a position write was lost)
            run.report.unchanged += 1
            self._emit(IngestEvent("unchanged", run.name, item.key, run.done, run.total))
            return
        run.report.episodes.append(episode.episode_id)
        run.report.ingested += 1
        run.report.passages += len(passages)
        run.report.claims += len(claims)
        run.report.embeddings += vectors
        self._emit(IngestEvent("ingested", run.name, item.key, run.done, run.total, passages=len(passages),
                               claims=len(claims), embeddings=vectors))  # fmt: skip

    def _prune(self, run: _Run, listing: Any) -> None:
        scope = run.request.scope
        present = set(listing)
        with self._sql.transaction(run.caller) as tx:
            live = tx.run(sources_api.live_records(run.request.group_id, run.request.source_id))
        live = [record for record in live if in_scope(record.external_id, scope)]
        gone = [record for record in live if record.external_id not in present]
        if gone and not present:
            where = f"{run.name!r} under {scope}" if scope else repr(run.name)
            raise SourceUnavailableError(
                f"source {where} lists no items but VERA holds {len(live)} of it: not retracting "
                "them all (retract the source itself if it is gone)"
            )
        for record in gone:
            try:
                with self._sql.transaction(run.caller) as tx:
                    reason = f"{record.external_id} is no longer in {run.name}"
                    tx.run(curation_api.retract_episode_call(run.request.group_id, record.episode_id, reason))
            except RUN_STOPPERS:
                raise
            except VeraError as exc:
                self._fail(run, record.external_id, f"deleted, but not retracted: {exc}")
                continue
            run.report.retracted += 1
            self._emit(IngestEvent("retracted", run.name, record.external_id))

    def _skip(self, run: _Run, key: str, reason: str) -> None:
        # named once, as the progress line and the summary show it alone ("notes.md: a symbolic link ...")
        reason = f"{key}: {redacted(unnamed(key, reason), run.token)}"
        run.report.skipped.append((key, reason))
        logger.warning("ingest %s: skipped %s", run.name, reason)
        self._emit(IngestEvent("skipped", run.name, key, run.done, run.total, message=reason))

    def _fail(self, run: _Run, key: str, message: str) -> None:
        message = redacted(unnamed(key, message), run.token)
        run.report.failed.append((key, message))
        logger.warning("ingest %s: %s: %s", run.name, key, message)
        self._emit(IngestEvent("failed", run.name, key, run.done, run.total, message=message))

    def _emit(self, event: IngestEvent) -> None:
        if self._on_progress is not None:
            self._on_progress(event)
