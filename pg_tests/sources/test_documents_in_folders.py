"""Documents in a folder source through the real worker: a PDF, a DOCX, a PPTX
and an HTML page become passages that vera.search finds, a PDF's page and a
slide's number in the passage's heading; a corrupt PDF, a document over the
size limit and a page's scripts are named in the run's report, and the run
goes on."""

from __future__ import annotations

from pathlib import Path

from tests.document_files import docx, html, pdf, pptx

from pg_tests.support.clients import client_for
from pg_tests.support.ingesting import run_worker
from pg_tests.support.seed import World, caller, create_project
from vera_client.config import ReadLimits


def _search(world: World, group: str, query: str) -> list[tuple[str, str | None, str]]:
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select text, citation -> 'chunk' ->> 'heading', citation -> 'episode' ->> 'external_id' "
            "from vera.search(%s, groups => array[%s])",
            (query, group),
        ).fetchall()
    return [(row[0], row[1], row[2]) for row in rows]


def test_documents_are_read_with_their_pages_and_bad_ones_named(world: World, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "runbook.pdf").write_bytes(
        pdf(["Introduction to the ledger.", "Failover of the ledger takes four minutes."])
    )
    (folder / "roadmap.pptx").write_bytes(
        pptx([("Goals", "Open the Hanoi office."), ("Risks", "Hiring is slow.")])
    )
    (folder / "policy.docx").write_bytes(
        docx("Travel policy", [("Trains", "Staff travel by train under 600 km.")])
    )
    (folder / "status.html").write_bytes(html("Status", "The mail relay is degraded."))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj garbage")
    (folder / "huge.pdf").write_bytes(pdf(["x" * 60_000]))
    group = create_project(world, "documents")
    with client_for(world, world.a.owner_key) as vera:
        source = vera.register_folder(group, "documents", folder, tier=2)
        vera.request_ingest(group, source.source_id)

    [report] = run_worker(world.db, tmp_path / "objects", read_limits=ReadLimits(document_bytes=50_000))
    assert report.ingested == 4
    assert [key for key, _why in report.failed] == ["broken.pdf"]
    assert "cannot be read as PDF" in report.failed[0][1]
    assert [key for key, _why in report.skipped] == ["huge.pdf"]
    assert "over the limit of 50,000" in report.skipped[0][1]
    assert report.warnings == [
        ("status.html", "status.html: 2 <script> element(s) removed, not read as text")
    ]

    assert ("Failover of the ledger takes four minutes.", "page 2", "runbook.pdf") in _search(
        world, group, "ledger failover minutes"
    )
    found = _search(world, group, "Hanoi office")
    assert any(h == "slide 1: Goals" and "Hanoi office" in t and k == "roadmap.pptx" for t, h, k in found)
    assert any("train under 600 km" in t for t, _h, _k in _search(world, group, "travel by train"))
    relay = _search(world, group, "mail relay degraded")
    assert any("mail relay is degraded" in t for t, _h, _k in relay)
    assert not any("secretTracker" in t or "injected" in t for t, _h, _k in _search(world, group, "injected"))
