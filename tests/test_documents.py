"""Documents (PDF, DOCX, PPTX, HTML) to passages: the text is found, a page's or
slide's number heads its passages, a script is removed with a warning, and a
corrupt document is one error naming the file."""

from __future__ import annotations

import io
import zipfile

import pytest

from tests.document_files import docx, html, pdf, pptx
from vera_client.config import ReadLimits
from vera_worker.domain import documents
from vera_worker.domain.formats import mime_type, parse_record
from vera_worker.domain.records import RecordFormatError


def test_pdf_passages_are_headed_by_their_page() -> None:
    data = pdf(["The ledger database runs on cluster one.", "Backups run nightly at two."], title="Runbook")
    record = parse_record("ops/runbook.pdf", data)
    assert record.title == "Runbook"
    by_heading = {p.heading: p.text for p in record.passages}
    assert "ledger database runs on cluster one" in by_heading["page 1"]
    assert "Backups run nightly" in by_heading["page 2"]
    assert record.warnings == ()


def test_pptx_passages_are_headed_by_their_slide() -> None:
    data = pptx(
        [("Roadmap", "Ship the billing API in March."), ("Risks", "The vendor contract ends in June.")]
    )
    record = parse_record("deck.pptx", data)
    headings = [p.heading for p in record.passages]
    assert headings[0] == "slide 1: Roadmap"
    assert any(p.heading == "slide 2: Risks" and "vendor contract" in p.text for p in record.passages)


def test_docx_headings_become_sections() -> None:
    data = docx("Handbook", [("Leave", "Staff take 25 days of leave a year."), ("Travel", "Book trains.")])
    record = parse_record("handbook.docx", data)
    leave = next(p for p in record.passages if "25 days" in p.text)
    assert leave.heading is not None and "Leave" in leave.heading
    assert any("Book trains." in p.text for p in record.passages)


def test_html_scripts_and_styles_are_removed_with_a_warning() -> None:
    record = parse_record("site/index.html", html("Status page", "All systems are operational."))
    text = " ".join(p.text for p in record.passages)
    assert "All systems are operational." in text
    assert "secretTracker" not in text and "injected" not in text and "color" not in text
    assert record.title == "Status page"
    assert record.warnings == ("site/index.html: 2 <script> element(s) removed, not read as text",)


def test_a_corrupt_pdf_is_one_error_naming_the_file() -> None:
    with pytest.raises(RecordFormatError, match=r"^broken\.pdf: cannot be read as PDF"):
        parse_record("broken.pdf", b"%PDF-1.4\nthis is not a pdf at all")


def test_a_corrupt_office_file_and_a_zip_bomb_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RecordFormatError, match=r"^x\.docx: not a readable Office file"):
        parse_record("x.docx", b"PK\x03\x04 not really")
    monkeypatch.setattr(documents, "MAX_UNPACKED_BYTES", 100_000)  # a smaller bomb, the same check
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * 100_001)
    with pytest.raises(RecordFormatError, match=r"^bomb\.docx: unpacks to"):
        parse_record("bomb.docx", bomb.getvalue())


def test_a_document_past_its_pages_or_its_time_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    three_pages = pdf(["One.", "Two.", "Three."])
    deck = pptx([("First", "one"), ("Second", "two")])
    monkeypatch.setattr(documents, "MAX_PAGES", 2)
    with pytest.raises(RecordFormatError, match=r"^long\.pdf: 3 pages, over the 2 read of one document$"):
        parse_record("long.pdf", three_pages)
    monkeypatch.setattr(documents, "MAX_PAGES", 10_000)
    monkeypatch.setattr(documents, "MAX_READ_SECONDS", -1.0)  # the time is up before the first page ends
    late = r"^slow\.pdf: still reading after -1 s \(page 1 of 3\): not read$"  # not part-read
    with pytest.raises(RecordFormatError, match=late):
        parse_record("slow.pdf", three_pages)
    with pytest.raises(RecordFormatError, match=r"^slow\.pptx: still reading after -1 s \(slide 1 of 2\)"):
        parse_record("slow.pptx", deck)
    one_page = parse_record("short.pdf", pdf(["Only page."]))  # its last page read: nothing left to refuse
    assert [p.text for p in one_page.passages] == ["Only page."]


def test_documents_have_their_own_size_limit() -> None:
    limits = ReadLimits(document_bytes=1234)
    for name in ("a.pdf", "a.docx", "a.pptx", "a.html", "a.htm"):
        assert limits.max_bytes(mime_type(name)) == 1234
    assert limits.max_bytes(mime_type("a.md")) == limits.markdown_bytes
