"""How `vera ingest` and `vera demo` show a run while it goes: on a terminal a
progress bar per source with counts and the time left (rich); otherwise (a
pipe, a log, a test) a line each tenth of the way. Either way a failed file
is named once, and so is a warning (the first few; the summary counts all).
Progress goes to stderr, so that stdout holds only the result (--json). A set
of runs ends with one line of counts (`summarize`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from vera_cli.output import counted
from vera_worker.adapters.extraction import ExtractionEvent, ExtractionReport
from vera_worker.connectors.events import IngestEvent, IngestReport, combined

# warnings named one by one; past this the summary's count (and --json) carries the rest
SHOWN_WARNINGS = 20
# a plain progress line each time a run of at least PLAIN_FROM files is this much further
PLAIN_STEP = 0.1
PLAIN_FROM = 20
# a progress line each this many passages through the model, when their total is not counted
EXTRACTION_STEP = 25


class IngestProgress:
    """Receives a run's events (the runner's on_progress) and shows them."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self._stream = stream or sys.stderr
        self._console = Console(file=self._stream, highlight=False, soft_wrap=True)
        self._live = self._console.is_terminal if live is None else live
        self._bar: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._next_line: dict[str, int] = {}
        self._warnings = 0

    def __enter__(self) -> IngestProgress:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """End the bar (its last state stays on screen)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def say(self, line: str) -> None:
        """A line above the bar (or a plain line)."""
        if self._bar is not None:
            self._bar.console.print(line, markup=False)
        else:
            print(line, file=self._stream, flush=True)

    def __call__(self, event: IngestEvent) -> None:
        if event.kind == "planned":
            self._planned(event)
            return
        if event.kind == "failed":
            self.say(f"  FAILED {event.source}: {event.key}: {event.message}")
        elif event.kind == "skipped":
            self.say(f"  skipped {event.source}: {event.message}")
        elif event.kind == "warned":
            self._warnings += 1
            if self._warnings <= SHOWN_WARNINGS:
                self.say(f"  warning {event.source}: {event.message}")
            elif self._warnings == SHOWN_WARNINGS + 1:
                self.say("  (more warnings: counted in the summary, listed by --json)")
            return  # the file's own event follows
        self._advance(event)

    def extraction(self, event: ExtractionEvent) -> None:
        """A passage through the extraction model: a line at the first, then each tenth of the way
        (each EXTRACTION_STEP passages when the total is not counted)."""
        step = _step(event.total) if event.total else EXTRACTION_STEP
        if event.done == 1 or event.done % step == 0 or event.done == event.total:
            of = f"/{event.total:,}" if event.total else ""
            self.say(
                f"  extracting {event.group_id}: {event.done:,}{of} passages, "
                f"{counted(event.facts, 'claim')} by the model"
            )

    def _planned(self, event: IngestEvent) -> None:
        if not self._live:
            self.say(f"  {event.source}: {counted(event.total, 'file')} to read or retract")
            if event.total >= PLAIN_FROM:
                self._next_line[event.source] = _step(event.total)
            return
        if self._bar is None:
            self._bar = Progress(
                TextColumn("  {task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("files"),
                TimeElapsedColumn(),
                TextColumn("elapsed,"),
                TimeRemainingColumn(),
                TextColumn("left"),
                console=self._console,
            )
            self._bar.start()
        self._tasks[event.source] = self._bar.add_task(event.source, total=event.total)

    def _advance(self, event: IngestEvent) -> None:
        if self._bar is not None and event.source in self._tasks:
            self._bar.update(self._tasks[event.source], completed=event.done)
            return
        due = self._next_line.get(event.source)
        if due is not None and event.done >= due and event.done < event.total:
            self.say(f"  {event.source}: {event.done}/{counted(event.total, 'file')}")
            self._next_line[event.source] = event.done + _step(event.total)


def _step(total: int) -> int:
    return max(1, int(total * PLAIN_STEP))


def summarize(reports: Sequence[IngestReport]) -> str:
    """One line for a set of runs."""
    total = combined(reports)
    stopped = "; stopped when asked: the next run reads the rest" if total.stopped else ""
    return (
        f"{counted(total.scanned, 'file')}: {total.ingested} ingested, "
        f"{total.unchanged + total.untouched} unchanged, {total.retracted} retracted, "
        f"{len(total.failed)} failed, {len(total.skipped)} skipped, "
        f"{counted(len(total.warnings), 'warning')}; "
        f"{counted(total.passages, 'passage')}, {counted(total.claims, 'claim')}, "
        f"{counted(total.embeddings, 'embedding')}{stopped}"
    )


def summarize_extraction(reports: Sequence[ExtractionReport]) -> str:
    """One line for the extract jobs a drain ran: the model's claims, counted."""
    passages = sum(r.passages for r in reports)
    facts = sum(r.facts for r in reports)
    calls, reused, failed = (
        sum(getattr(r, name) for r in reports) for name in ("model_calls", "reused", "failed")
    )
    return (
        f"extraction: {counted(passages, 'passage')} through the model ({counted(calls, 'call')}, "
        f"{reused} reused, {failed} failed): {counted(facts, 'claim')} by the model"
    )
