"""Tables to claims: a CSV file or a Markdown table whose first column names
the subject and whose other headers are predicates. A "valid from" / "since"
column dates the row's claims, a "valid to" / "until" column ends them; empty
cells state nothing. Two rows of one subject with different "valid from"
values are the history of a functional predicate (CMDB exports look so).

A CSV file's dialect is sniffed from its start (comma, semicolon, tab or
pipe; quoted fields), so a spreadsheet's semicolon export is read as a table
rather than as one column; a quoted field that never closes is a warning
naming its line, and the rows before it are kept."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from vera_worker.domain.records import Claim, ParsedRecord, predicate_name
from vera_worker.domain.statements import (
    VALID_FROM_KEYS,
    VALID_TO_KEYS,
    ClaimContext,
    as_instant,
    claims_from_mapping,
)


def claims_from_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], context: ClaimContext, *, where: str
) -> tuple[list[Claim], list[str]]:
    """Claims of every row, and warnings for what was skipped."""
    claims: list[Claim] = []
    warnings: list[str] = []
    if len(header) < 2:
        return claims, [f"{where}: a table needs a subject column and at least one more"]
    for number, row in enumerate(rows, start=1):
        cells = [cell.strip() for cell in row]
        subject = cells[0] if cells else ""
        if not subject:
            continue
        valid_from, valid_to = context.valid_from, context.valid_to
        metadata: dict[str, str] = {}
        for column, cell in zip(header[1:], cells[1:], strict=False):
            name = predicate_name(column)
            if not cell:
                continue
            if name in VALID_FROM_KEYS or name in VALID_TO_KEYS:
                instant = as_instant(cell)
                if instant is None:
                    warnings.append(f"{where} row {number}: {column!r} is not a date: {cell!r}")
                elif name in VALID_FROM_KEYS:
                    valid_from = instant
                else:
                    valid_to = instant
                continue
            metadata[column] = cell
        row_context = ClaimContext(functional=context.functional, valid_from=valid_from, valid_to=valid_to)
        for item in claims_from_mapping(subject, metadata, row_context, skip_reserved=False):
            if isinstance(item, str):
                warnings.append(f"{where}: {item}")
            else:
                claims.append(item)
    # a bad header repeats on every row: say it once
    return claims, list(dict.fromkeys(warnings))


# the delimiters a CSV export uses in practice; the sniffer picks among them
CSV_DELIMITERS = ",;\t|"
_SNIFFED_CHARS = 64 * 1024


def csv_dialect(text: str) -> type[csv.Dialect] | csv.Dialect:
    """The dialect of a CSV text, sniffed from its start; plain commas when the sniffer cannot tell
    (one column) or picks a character its header line does not even hold."""
    sample = text[:_SNIFFED_CHARS]
    header = next((line for line in sample.splitlines() if line.strip()), "")
    try:
        sniffed = csv.Sniffer().sniff(sample, delimiters=CSV_DELIMITERS)
    except csv.Error:
        return csv.excel
    return sniffed if sniffed.delimiter in header else csv.excel


def read_csv_rows(text: str, *, name: str, max_rows: int | None = None) -> tuple[list[list[str]], list[str]]:
    """The rows of a CSV text in its dialect (the header and at most max_rows data rows, blank
    ones not counted), and a warning for where reading had to stop."""
    reader = csv.reader(io.StringIO(text), dialect=csv_dialect(text), strict=True)
    rows: list[list[str]] = []
    started = 1  # the line the next row starts on
    data_rows = -1  # the header is not a data row
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                data_rows += 1
                if max_rows is not None and data_rows > max_rows:
                    return rows, [
                        f"{name}: more than {max_rows:,} rows; only the first {max_rows:,} are read, "
                        f"from line {started} on the rest are left out (VERA_WORKER__READ_LIMITS__CSV_ROWS)"
                    ]
            rows.append(row)
            started = reader.line_num + 1
    except csv.Error as exc:
        reason = (
            "a quoted field opened here is never closed (unterminated quote)"
            if "unexpected end of data" in str(exc)
            else f"malformed CSV ({exc})"
        )
        return rows, [f"{name} line {started}: {reason}; the rows from here on are left out"]
    return rows, []


def parse_csv(text: str, *, name: str, context: ClaimContext, max_rows: int | None = None) -> ParsedRecord:
    """A CSV export: the header row names predicates, each row states facts of its first cell
    (of the first max_rows rows: the rest is cut, with a warning naming the file)."""
    rows, warnings = read_csv_rows(text, name=name, max_rows=max_rows)
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return ParsedRecord(title=name, warnings=tuple(warnings))
    claims, table_warnings = claims_from_table(rows[0], rows[1:], context, where=name)
    return ParsedRecord(title=name, claims=tuple(claims), warnings=(*warnings, *table_warnings))
