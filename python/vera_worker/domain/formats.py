"""Which reader a record's name calls for, and the reading of raw bytes."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from vera_worker.domain.documents import DOCUMENT_MIMES, parse_document
from vera_worker.domain.markdown import parse_markdown, parse_plain_text
from vera_worker.domain.records import ParsedRecord, RecordFormatError
from vera_worker.domain.statements import ClaimContext
from vera_worker.domain.tables import parse_csv
from vera_worker.domain.text_decoding import decode_text

MIME_BY_SUFFIX = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".txt": "text/plain",
    **DOCUMENT_MIMES,  # PDF, DOCX, PPTX, HTML (documents.py)
}
DOCUMENT_TYPES = frozenset(DOCUMENT_MIMES.values())


def mime_type(name: str) -> str | None:
    """The MIME type of a record this connector reads, or None for one it does not."""
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name.rsplit("/", 1)[-1] else ""
    return MIME_BY_SUFFIX.get(suffix)


# what one call of vera.store_chunks / vera.publish_claims takes
MAX_PASSAGES = 10_000
MAX_CLAIMS = 10_000


def parse_record(
    name: str, data: bytes, *, functional: Collection[str] = (), max_csv_rows: int | None = None
) -> ParsedRecord:
    """Passages and claims of one file's bytes; RecordFormatError when they cannot be read.
    max_csv_rows: a CSV's data rows past it are not read (a warning names the file)."""
    record = _parse(name, data, functional, max_csv_rows)
    if len(record.passages) > MAX_PASSAGES:
        raise RecordFormatError(
            f"{name}: {len(record.passages):,} passages, more than the {MAX_PASSAGES:,} one record may have"
        )
    if len(record.claims) > MAX_CLAIMS:
        dropped = f"{name}: {len(record.claims):,} claims, only the first {MAX_CLAIMS:,} are published"
        return replace(record, claims=record.claims[:MAX_CLAIMS], warnings=(*record.warnings, dropped))
    return record


def _parse(name: str, data: bytes, functional: Collection[str], max_csv_rows: int | None) -> ParsedRecord:
    mime = mime_type(name)
    if mime is None:
        raise RecordFormatError(f"{name}: not a Markdown, CSV, text or document file")
    if mime in DOCUMENT_TYPES:
        return parse_document(name, data, mime, functional=functional)
    text, decoding_warnings = decode_text(name, data)
    if "\x00" in text:
        raise RecordFormatError(f"{name}: contains NUL characters (a binary file?)")
    if mime == "text/markdown":
        record = parse_markdown(text, name=name, functional=functional)
    elif mime == "text/csv":
        context = ClaimContext(functional=frozenset(functional))
        record = parse_csv(text, name=name, context=context, max_rows=max_csv_rows)
    else:
        record = parse_plain_text(text, name=name)
    if decoding_warnings:
        record = replace(record, warnings=(*decoding_warnings, *record.warnings))
    return record
