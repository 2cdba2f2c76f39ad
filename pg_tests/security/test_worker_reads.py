"""What the worker reads, through the real ingestion run (issue 27): a file swapped for a
symbolic link between the scan and the read (the symlink race) is skipped with a warning
naming it, and its target's text never reaches the group; a huge sparse file is refused
before it is read; a CSV over the row cap is cut with a warning naming it; each run goes on
and its summary counts what it skipped."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.ingesting import folder_runs
from pg_tests.support.seed import World, caller, create_project
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.config import ReadLimits
from vera_worker.connectors.dispatch import IngestRequest
from vera_worker.connectors.events import IngestEvent, IngestReport

SECRET = "The launch code is 0000."


def _texts(world: World, group: str, query: str) -> list[str]:
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select text from vera.search(%s, groups => array[%s])", (query, group)
        ).fetchall()
    return [row[0] for row in rows]


def _ingest(
    world: World,
    worker_sql: Executor,
    tmp_path: Path,
    name: str,
    folder: Path,
    *,
    on_planned: object = None,
    limits: ReadLimits | None = None,
) -> tuple[str, IngestReport, list[IngestEvent]]:
    """One run of a new source on folder, in a new project of tenant A; on_planned() runs after the
    scan, before the first file is read (where a racing writer swaps a file)."""
    group = create_project(world, f"reads-{name}")
    with client_for(world, world.a.owner_key) as vera:
        source = vera.register_folder(group, f"docs {name}", folder, tier=2)
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    events: list[IngestEvent] = []

    def progress(event: IngestEvent) -> None:
        events.append(event)
        if event.kind == "planned" and callable(on_planned):
            on_planned()

    ingestion = folder_runs(
        worker_sql, objects=LocalObjectStore(tmp_path / "objects"), embedder_for_model=lambda _: None,
        on_progress=progress, allowed_roots=[folder], limits=limits,
    )  # fmt: skip
    report = ingestion.run(IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal))
    return group, report, events


@pytest.fixture
def share(tmp_path: Path) -> Path:
    folder = tmp_path / "share"
    (folder / "runbooks").mkdir(parents=True)
    (folder / "runbooks" / "billing.md").write_text("# Billing\n\nRestart with kubectl.\n", encoding="utf-8")
    (folder / "notes.md").write_text("# Notes\n\nLedger backups run nightly.\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    return folder


def test_a_file_swapped_for_a_link_after_the_scan_is_skipped_and_its_target_never_read(
    world: World, worker_sql: Executor, tmp_path: Path, share: Path
) -> None:
    def swap() -> None:  # the racing writer: after the scan, before the read
        target = share / "notes.md"
        target.unlink()
        target.symlink_to(tmp_path / "outside" / "secret.md")

    group, report, events = _ingest(world, worker_sql, tmp_path, "swapped-file", share, on_planned=swap)
    assert _texts(world, group, "launch code") == []
    assert [key for key, _ in report.skipped] == ["notes.md"]
    assert "notes.md: a symbolic link on its path" in report.skipped[0][1]
    assert [(e.key, e.message) for e in events if e.kind == "skipped"] == report.skipped
    assert (report.ingested, report.failed) == (1, [])  # the run went on: billing.md
    assert _texts(world, group, "kubectl") == ["Restart with kubectl."]


def test_a_folder_swapped_for_a_link_after_the_scan_is_not_followed(
    world: World, worker_sql: Executor, tmp_path: Path, share: Path
) -> None:
    (tmp_path / "outside" / "billing.md").write_text(f"# Billing\n\n{SECRET}\n", encoding="utf-8")

    def swap() -> None:
        (share / "runbooks").rename(tmp_path / "moved")
        (share / "runbooks").symlink_to(tmp_path / "outside", target_is_directory=True)

    group, report, _ = _ingest(world, worker_sql, tmp_path, "swapped-folder", share, on_planned=swap)
    assert _texts(world, group, "launch code") == []
    assert [key for key, _ in report.skipped] == ["runbooks/billing.md"]


def test_a_huge_sparse_file_is_refused_before_it_is_read(
    world: World, worker_sql: Executor, tmp_path: Path, share: Path
) -> None:
    dump = share / "dump.txt"
    dump.touch()
    os.truncate(dump, 4 << 30)  # 4 GiB of holes: no disk; reading it would take gigabytes of memory
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    _, report, _ = _ingest(world, worker_sql, tmp_path, "sparse", share)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert grown_mib < 512, f"the worker's peak memory grew by {grown_mib:.0f} MiB"
    [(key, reason)] = report.skipped
    assert key == "dump.txt"
    assert "dump.txt: 4,294,967,296 bytes, over the limit of 8,388,608" in reason
    assert (report.scanned, report.ingested, report.failed) == (3, 2, [])


def test_a_csv_over_the_row_cap_is_cut_with_a_warning_naming_it(
    world: World, worker_sql: Executor, tmp_path: Path
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    rows = "".join(f"svc-{n},team-{n}\n" for n in range(12))
    (folder / "cmdb.csv").write_text("service,owned by\n" + rows, encoding="utf-8")
    group, report, _ = _ingest(world, worker_sql, tmp_path, "csv-cap", folder, limits=ReadLimits(csv_rows=10))
    assert (report.ingested, report.claims) == (1, 10)
    [(key, warning)] = report.warnings
    assert key == "cmdb.csv" and warning.startswith("cmdb.csv: more than 10 rows; only the first 10 are read")
    with caller(world.db, world.a.owner_key) as conn:
        published = conn.execute("select fact_text from vera.facts where group_id = %s", (group,)).fetchall()
    assert sorted(text for (text,) in published) == sorted(f"svc-{n} owned by team-{n}" for n in range(10))
