"""Documents (PDF, DOCX, PPTX, HTML) to passages, without a model.

- PDF (pypdf): the text of each page; every passage of a page is headed
  `page N`, so a citation names the page.
- PPTX (python-pptx): the text of each slide (its shapes, tables and speaker
  notes); passages headed `slide N` (with the slide's title when it has one).
- DOCX (python-docx): paragraphs as Markdown (Heading styles as `#` headings,
  list paragraphs as items, table rows as lines), then read as Markdown.
- HTML (BeautifulSoup, markdownify): <script>, <style> and other
  non-content elements are removed first (a warning names the file when a
  script was), the rest converted to Markdown and read as Markdown.

A document that cannot be read (corrupt, encrypted, a zip that unpacks to
more than MAX_UNPACKED_BYTES, more than MAX_PAGES pages, or still being read
after MAX_READ_SECONDS) raises RecordFormatError naming the file: the run
reports it and goes on. The time is checked between pages and slides: a PDF
crafted to make its text extraction slow must not hold a run for hours, and a
part-read document is not written (its hash would mark it as read for good)."""

from __future__ import annotations

import io
import logging
import time
import zipfile
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from vera_worker.domain.markdown import parse_markdown, parse_plain_text
from vera_worker.domain.records import ParsedRecord, Passage, RecordFormatError

DOCUMENT_MIMES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".html": "text/html",
    ".htm": "text/html",
}

# a DOCX or PPTX is a zip: one that unpacks to more than this is refused unread (a zip bomb)
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
# a PDF or a deck is read page by page: past either bound it is refused, not part-read
MAX_PAGES = 10_000
MAX_READ_SECONDS = 120.0
# elements of an HTML page that are not its text
_NOT_TEXT = ("script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas", "head")


def parse_document(name: str, data: bytes, mime: str, *, functional: Collection[str] = ()) -> ParsedRecord:
    """Passages of one document's bytes; RecordFormatError naming the file when it cannot be read."""
    readers: dict[str, Callable[[str, bytes, Collection[str]], ParsedRecord]] = {
        DOCUMENT_MIMES[".pdf"]: _pdf,
        DOCUMENT_MIMES[".docx"]: _docx,
        DOCUMENT_MIMES[".pptx"]: _pptx,
        DOCUMENT_MIMES[".html"]: _html,
    }
    reader = readers.get(mime)
    if reader is None:
        raise RecordFormatError(f"{name}: not a document VERA reads")
    try:
        return reader(name, data, functional)
    except RecordFormatError:
        raise
    except Exception as exc:  # a parser of untrusted bytes may raise anything
        raise RecordFormatError(f"{name}: cannot be read as {_label(mime)} ({type(exc).__name__})") from exc


class _ReadingBudget:
    """The pages and the time one document may take, checked between its pages."""

    def __init__(self, name: str, pages: int, unit: str) -> None:
        if pages > MAX_PAGES:
            raise RecordFormatError(f"{name}: {pages:,} {unit}s, over the {MAX_PAGES:,} read of one document")
        self._name = name
        self._pages = pages
        self._unit = unit
        self._deadline = time.monotonic() + MAX_READ_SECONDS

    def check(self, number: int) -> None:
        """After page `number` was read: refuse the document if its time is up."""
        if time.monotonic() > self._deadline and number < self._pages:
            raise RecordFormatError(
                f"{self._name}: still reading after {MAX_READ_SECONDS:g} s ({self._unit} {number} of "
                f"{self._pages:,}): not read"
            )


def _label(mime: str) -> str:
    return next((s[1:].upper() for s, m in DOCUMENT_MIMES.items() if m == mime), mime)


def _title(name: str) -> str:
    return name.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _paged(name: str, pages: list[tuple[str, str]], warnings: list[str], title: str | None) -> ParsedRecord:
    """Passages of pages' texts (heading, text), each headed by its page; offsets in the pages'
    texts joined by blank lines (what the object store's bytes convert to)."""
    passages: list[Passage] = []
    offset = 0
    for heading, text in pages:
        for passage in parse_plain_text(text, name=name).passages:
            passages.append(
                Passage(passage.text, heading, passage.char_start + offset, passage.char_end + offset)
            )
        offset += len(text) + 2
    if not passages and not warnings:
        warnings.append(f"{name}: no text found (a scanned document without a text layer?)")
    return ParsedRecord(title=title or _title(name), passages=tuple(passages), warnings=tuple(warnings))


def _pdf(name: str, data: bytes, _functional: Collection[str]) -> ParsedRecord:
    from pypdf import PdfReader  # noqa: PLC0415 (only a run that meets a PDF pays for the import)

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its own warnings would not name the file
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise RecordFormatError(f"{name}: an encrypted PDF (it needs a password): not read")
    pages: list[tuple[str, str]] = []
    warnings: list[str] = []
    budget = _ReadingBudget(name, len(reader.pages), "page")
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception as exc:  # one broken page must not lose the others
            warnings.append(f"{name}: page {number} cannot be read ({type(exc).__name__}): left out")
            text = None
        if text is not None:
            pages.append((f"page {number}", text.replace("\x00", "")))
        budget.check(number)
    metadata = reader.metadata
    title = metadata.title if metadata is not None and isinstance(metadata.title, str) else None
    return _paged(name, pages, warnings, title.strip() if title and title.strip() else None)


def _check_zip(name: str, data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except zipfile.BadZipFile:
        raise RecordFormatError(f"{name}: not a readable Office file (a broken zip)") from None
    if unpacked > MAX_UNPACKED_BYTES:
        raise RecordFormatError(
            f"{name}: unpacks to {unpacked:,} bytes, over the {MAX_UNPACKED_BYTES:,} read of one document"
        )


def _pptx(name: str, data: bytes, _functional: Collection[str]) -> ParsedRecord:
    _check_zip(name, data)
    from pptx import Presentation  # noqa: PLC0415

    deck = Presentation(io.BytesIO(data))
    pages: list[tuple[str, str]] = []
    budget = _ReadingBudget(name, len(deck.slides), "slide")
    for number, slide in enumerate(deck.slides, start=1):
        lines: list[str] = []
        title = None
        for shape in slide.shapes:
            lines.extend(_shape_lines(shape))
        title_shape = slide.shapes.title
        if title_shape is not None and title_shape.has_text_frame and title_shape.text_frame.text.strip():
            title = " ".join(title_shape.text_frame.text.split())
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                lines.append(notes)
        pages.append((f"slide {number}: {title}" if title else f"slide {number}", "\n\n".join(lines)))
        budget.check(number)
    core_title = deck.core_properties.title
    return _paged(name, pages, [], core_title.strip() if core_title and core_title.strip() else None)


def _shape_lines(shape: Any) -> list[str]:
    lines: list[str] = []
    if getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
        lines.append(shape.text_frame.text.strip())
    if getattr(shape, "has_table", False):
        for row in shape.table.rows:
            cells = [" ".join(cell.text.split()) for cell in row.cells]
            if any(cells):
                lines.append(" | ".join(cells))
    for inner in getattr(shape, "shapes", ()):  # a group of shapes
        lines.extend(_shape_lines(inner))
    return lines


def _docx(name: str, data: bytes, functional: Collection[str]) -> ParsedRecord:
    _check_zip(name, data)
    import docx  # noqa: PLC0415
    from docx.table import Table  # noqa: PLC0415
    from docx.text.paragraph import Paragraph  # noqa: PLC0415

    document = docx.Document(io.BytesIO(data))
    blocks: list[str] = []
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            text = " ".join(block.text.split())
            if not text:
                continue
            style = (block.style.name if block.style is not None else "") or ""
            if style == "Title":
                blocks.append(f"# {text}")
            elif style.startswith("Heading") and style.removeprefix("Heading").strip().isdigit():
                level = min(int(style.removeprefix("Heading").strip()), 6)
                blocks.append(f"{'#' * level} {text}")
            elif style.startswith("List"):
                blocks.append(f"- {text}")
            else:
                blocks.append(_escaped(text))
        elif isinstance(block, Table):
            rows = [" | ".join(" ".join(c.text.split()) for c in row.cells) for row in block.rows]
            blocks.append("\n".join(_escaped(r) for r in rows if r.strip(" |")))
    record = parse_markdown("\n\n".join(blocks), name=name, functional=functional)
    title = document.core_properties.title
    if title and title.strip():
        record = replace(record, title=title.strip())
    return record


def _escaped(text: str) -> str:
    """A line of a document's text that Markdown must not read as structure (a heading, a
    table, front matter, a `**Key:** value` claim): the text as written, its lead escaped."""
    if text[:1] in {"#", "-", "|", "*", "+", ">", "="} or text[:1].isdigit():
        return "\\" + text
    return text


def _html(name: str, data: bytes, functional: Collection[str]) -> ParsedRecord:
    from bs4 import BeautifulSoup  # noqa: PLC0415
    from markdownify import MarkdownConverter  # noqa: PLC0415

    soup = BeautifulSoup(data, "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag is not None else ""
    scripts = len(soup.find_all("script"))
    for element in soup.find_all(_NOT_TEXT):
        element.decompose()
    converter = MarkdownConverter(heading_style="ATX", escape_asterisks=False, escape_underscores=False,
                                  strip=["img"])  # fmt: skip
    body = soup.body if soup.body is not None else soup
    markdown = converter.convert_soup(body).strip()
    record = parse_markdown(markdown, name=name, functional=functional)
    warnings = list(record.warnings)
    if scripts:
        warnings.insert(0, f"{name}: {scripts} <script> element(s) removed, not read as text")
    return replace(record, title=title or record.title, warnings=tuple(warnings))
