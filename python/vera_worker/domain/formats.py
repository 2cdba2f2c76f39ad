"""Which reader a record's name calls for, and the reading of raw bytes."""

from __future__ import annotations

from collections.abc import Collection

from vera_worker.domain.markdown import parse_markdown, parse_plain_text
from vera_worker.domain.records import ParsedRecord, RecordFormatError
from vera_worker.domain.statements import ClaimContext
from vera_worker.domain.tables import parse_csv

MIME_BY_SUFFIX = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".txt": "text/plain",
}


def mime_type(name: str) -> str | None:
    """The MIME type of a record this connector reads, or None for one it does not."""
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name.rsplit("/", 1)[-1] else ""
    return MIME_BY_SUFFIX.get(suffix)


def parse_record(name: str, data: bytes, *, functional: Collection[str] = ()) -> ParsedRecord:
    """Passages and claims of one file's bytes; RecordFormatError when they cannot be read."""
    mime = mime_type(name)
    if mime is None:
        raise RecordFormatError(f"{name}: not a Markdown, CSV or text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordFormatError(f"{name}: not UTF-8 (byte {exc.start})") from exc
    if "\x00" in text:
        raise RecordFormatError(f"{name}: contains NUL characters (a binary file?)")
    if mime == "text/markdown":
        return parse_markdown(text, name=name, functional=functional)
    if mime == "text/csv":
        return parse_csv(text, name=name, context=ClaimContext(functional=frozenset(functional)))
    return parse_plain_text(text, name=name)
