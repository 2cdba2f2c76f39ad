"""`vera ingest` and `vera reprocess`: queue a run, then work the queue off here with progress on
stderr (Ctrl-C stops after the file in hand); `vera demo` drains its ingestion the same way."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vera_cli.interrupt import EXIT_INTERRUPTED, StopRequest, drain_interruptibly
from vera_cli.plumbing import (
    api_key_option,
    check_reachable,
    client_from_env,
    database_from_env,
    fail,
    friendly_errors,
    start_if_embedded,
)

if TYPE_CHECKING:
    from vera_client.bootstrap import Database
    from vera_client.domain.errors import VeraError
    from vera_worker.adapters.extraction import ExtractionReport
    from vera_worker.connectors.dispatch import IngestRequest
    from vera_worker.connectors.events import IngestReport


@dataclass(frozen=True, slots=True)
class Drained:
    """What working the queue off here did: the runs' reports, and whether Ctrl-C cut it short."""

    reports: list[IngestReport]
    interrupted: bool
    extractions: list[ExtractionReport] = field(default_factory=list)


def drain_with_progress(database: Database, extra_roots: Sequence[Path] = ()) -> Drained:
    """Work the queue off here, showing progress; a run that failed as a whole is one error line."""
    from vera_cli.progress import IngestProgress
    from vera_worker.entrypoints.wiring import worker_app

    reports: list[IngestReport] = []
    extractions: list[ExtractionReport] = []
    failures: list[str] = []

    def failed(_request: IngestRequest, name: str, error: VeraError) -> None:
        message = str(error).removeprefix(f"source {name!r}: ")  # the source is named once
        failures.append(f"ingestion of source {name!r} failed: {message}")

    # the failure is reported here in one line; Procrastinate would log it with a traceback
    logging.getLogger("procrastinate").setLevel(logging.CRITICAL)
    # a failed file or a warning is shown once, by the progress: not again by the log's last resort
    quiet = logging.getLogger("vera_worker")
    if not any(isinstance(handler, logging.NullHandler) for handler in quiet.handlers):
        quiet.addHandler(logging.NullHandler())
    check_reachable(database, database.worker_dsn)
    stop = StopRequest()
    with closing(database.worker_executor()) as sql, IngestProgress() as progress:
        app = worker_app(
            database,
            sql,
            on_progress=progress,
            on_report=reports.append,
            on_failure=failed,
            extra_roots=extra_roots,
            on_extraction=progress.extraction,
            on_extracted=extractions.append,
            should_stop=stop,
        )
        interrupted = drain_interruptibly(
            app,
            stop,
            stalled_after=database.settings.worker.stalled_after,
            say=progress.say,
            before_hard_stop=progress.close,
        )
    if failures:
        for line in failures[:-1]:
            click.echo(f"vera: error: {line}", err=True)
        fail(failures[-1])
    return Drained(reports, interrupted, extractions)


def _summary(drained: Drained, as_json: bool) -> None:
    """The runs' counts, and the claims the model found in what they wrote."""
    from vera_cli.progress import summarize, summarize_extraction
    from vera_worker.connectors.events import combined

    if as_json:
        summary = combined(drained.reports).as_json()
        if drained.extractions:
            summary["model_claims"] = sum(r.facts for r in drained.extractions)
        click.echo(json.dumps(summary, ensure_ascii=False))
        return
    click.echo(summarize(drained.reports))
    if drained.extractions:
        click.echo(summarize_extraction(drained.extractions))


@click.command("ingest")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option(
    "--source", "source_name", help="The source to read (name or id); default: the one holding PATH."
)
@click.option("--group", help="The group of the source.")
@click.option("--no-wait", is_flag=True, help="Only queue the run for a running `vera worker`.")
@click.option("--json", "as_json", is_flag=True, help="The summary as one JSON object (progress on stderr).")
@api_key_option("Key of a member of the source's group.")
@friendly_errors
def ingest_command(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    path: Path | None, source_name: str | None, group: str | None, no_wait: bool, as_json: bool, api_key: str
) -> None:
    """Read a registered source (PATH or --source: its name), or the part of one at PATH, incrementally.

    New and changed files are published, unchanged ones skipped, deleted ones
    retracted. Without --no-wait the queued run is worked off here, with progress;
    Ctrl-C stops it after the file in hand (exit 130), a second Ctrl-C at once.
    """
    from vera_cli.commands.sources import source_holding

    if path is None and source_name is None:
        fail("give a PATH below a registered source's folder, or --source NAME")
    if source_name is None and path is not None and "/" not in str(path) and not path.expanduser().exists():
        source_name, path = str(path), None  # `vera ingest NAME`: a source without a folder (cmdb, ...)
    database = database_from_env()
    start_if_embedded(database)
    with client_from_env(api_key, database) as vera:
        if source_name is not None:
            source = vera.find_source(source_name, group)
            scope = None
            if path is not None:
                root = Path(str(source.config.get("root", "")))
                target = path.expanduser().resolve()
                if target != root and root not in target.parents:
                    fail(f"{path} is not inside source {source.name!r} ({root})")
                scope = None if target == root else target.relative_to(root).as_posix()
        else:
            assert path is not None
            source, scope = source_holding(vera, path, group)
        job = vera.request_ingest(source.group_id, source.source_id, scope)
    queued = f"queued ingestion of {source.name!r}{f' ({scope})' if scope else ''}: job {job}"
    if no_wait:
        if as_json:
            click.echo(json.dumps({"queued": job, "source": source.name, "path": scope}))
        else:
            click.echo(queued)
        return
    click.echo(queued, err=as_json)
    drained = drain_with_progress(database)
    _summary(drained, as_json)
    if database.settings.llm.enabled:
        from vera_cli.commands.extract import mention_backlog

        mention_backlog(api_key, database, source.group_id)
    if drained.interrupted:
        click.echo("vera: stopped by Ctrl-C; what was read is kept, `vera ingest` reads the rest", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if any(report.failed for report in drained.reports):
        fail("some files could not be ingested (see above); they are read again on the next run")


@click.command("reprocess")
@click.option("--group", required=True, help="The group whose passages to extract again.")
@click.option(
    "--time-scopes",
    is_flag=True,
    help="Read the passages' time scopes again instead (no model; an admin of the group).",
)
@click.option("--no-wait", is_flag=True, help="Only queue the job for a running `vera worker`.")
@click.option("--api-key", envvar="VERA_API_KEY", required=True, help="Key of a member of the group.")
@friendly_errors
def reprocess_command(group: str, time_scopes: bool, no_wait: bool, api_key: str) -> None:
    """Extract the group's passages again with the configured extraction model.

    Passages the current model and prompt version have already been through are
    skipped; the others (extracted by an earlier version, or never) go to the model.
    With --time-scopes, the periods each passage states are read again by this
    version of VERA's reader, here and now (docs/time.md).
    """
    from vera_client.client import VeraClient
    from vera_client.domain.time_scopes import EXTRACTION_VERSION

    database = database_from_env()
    if time_scopes:
        if no_wait:
            fail("--time-scopes reads here and now, with no job to queue: leave out --no-wait")
        start_if_embedded(database)
        with VeraClient.from_settings(api_key, database.settings) as vera:
            read = vera.read_time_scopes(group)
        click.echo(
            f"time scopes read again: {read} passages of {group} (reader version {EXTRACTION_VERSION})"
        )
        return
    if not database.settings.llm.enabled:
        fail("no extraction model is configured: set VERA_LLM__BASE_URL (see docs/extraction.md)")
    start_if_embedded(database)
    with VeraClient.from_settings(api_key, database.settings) as vera:
        job = vera.request_extraction(group, redo=True)
    click.echo(f"queued extraction of {group}'s passages: job {job}")
    if not no_wait:
        drain_with_progress(database)
        click.echo("extraction done (see the worker's log for counts)")
