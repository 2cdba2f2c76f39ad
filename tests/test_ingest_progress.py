"""What `vera ingest` shows while a run goes, without a terminal: a line each
tenth of a long run, a failed file named once, the first warnings named."""

from __future__ import annotations

import io

from vera_cli.progress import SHOWN_WARNINGS, IngestProgress
from vera_worker.connectors.events import IngestEvent


def _shown(events: list[IngestEvent]) -> list[str]:
    stream = io.StringIO()
    with IngestProgress(stream, live=False) as progress:
        for event in events:
            progress(event)
    return stream.getvalue().splitlines()


def test_a_long_run_shows_a_line_each_tenth_and_names_a_failure_once() -> None:
    events = [IngestEvent("planned", "wiki", total=50)]
    for done in range(1, 51):
        if done == 7:
            events.append(IngestEvent("failed", "wiki", "bad.md", done, 50, message="not UTF-8"))
        else:
            events.append(IngestEvent("ingested", "wiki", f"f{done}.md", done, 50, passages=1))
    lines = _shown(events)
    assert lines == [
        "  wiki: 50 files to read or retract",
        "  wiki: 5/50 files",
        "  FAILED wiki: bad.md: not UTF-8",  # the run names the file once (issue 29)
        "  wiki: 10/50 files",
        *[f"  wiki: {n}/50 files" for n in range(15, 50, 5)],
    ]
    assert sum("bad.md" in line for line in lines) == 1


def test_a_short_run_shows_no_line_per_file() -> None:
    events = [IngestEvent("planned", "cmdb", total=3)]
    events += [IngestEvent("ingested", "cmdb", f"{n}.csv", n, 3, claims=2) for n in range(1, 4)]
    assert _shown(events) == ["  cmdb: 3 files to read or retract"]


def test_warnings_are_named_up_to_a_limit() -> None:
    events = [IngestEvent("planned", "cmdb", total=30)]
    for n in range(1, 31):
        events.append(IngestEvent("warned", "cmdb", f"{n}.csv", n, 30, message=f"{n}.csv row 1: odd"))
        events.append(IngestEvent("ingested", "cmdb", f"{n}.csv", n, 30))
    warned = [line for line in _shown(events) if "warning" in line]
    assert len(warned) == SHOWN_WARNINGS + 1
    assert warned[0] == "  warning cmdb: 1.csv row 1: odd"
    assert warned[-1] == "  (more warnings: counted in the summary, listed by --json)"


def test_on_a_terminal_a_bar_with_counts_and_time_left() -> None:
    stream = io.StringIO()
    with IngestProgress(stream, live=True) as progress:
        progress(IngestEvent("planned", "wiki", total=4))
        for done in range(1, 5):
            progress(IngestEvent("ingested", "wiki", f"{done}.md", done, 4))
    shown = stream.getvalue()
    assert (
        "wiki" in shown and "4/4 files" in shown and "elapsed," in shown and shown.rstrip().endswith("left")
    )
