"""Markdown to passages and claims, without a model.

- YAML front matter: `title`, `subject` (whom the metadata is about; default
  the title), `valid_from`/`valid_to`, `observed_at`, `functional` (keys whose
  values replace each other over time); every other key states a claim.
- `**Key:** value` lines (also as list items) state claims of the subject and
  stay in the text; the passage holding the line is their evidence.
- Tables: the first column names the subject, the other headers are
  predicates (see tables.py); a table that states claims is not repeated as
  a passage.
- The rest is cut on structure: sections by heading, paragraphs within a
  section, merged up to a size and split at sentence ends only when one
  paragraph is too long; a fenced code block is never split. Passages keep
  the original characters (Unicode as written) and their offsets.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

import yaml

from vera_worker.domain.records import Claim, ParsedRecord, Passage, RecordFormatError
from vera_worker.domain.statements import (
    ClaimContext,
    as_instant,
    claims_from_mapping,
    functional_predicates,
    scalar_text,
)
from vera_worker.domain.tables import claims_from_table

DEFAULT_MAX_PASSAGE_CHARS = 1200
# vera.store_chunks' limit for one chunk's text
MAX_CHUNK_CHARS = 20_000

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_KEY_VALUE = re.compile(
    r"^\s*(?:[-*+]\s+)?\*\*(?P<key>[^*:]{1,80}?)\s*(?::\*\*|\*\*\s*:)\s*(?P<value>\S.*?)\s*$"
)
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+|\n")


@dataclass(frozen=True, slots=True)
class _Block:
    start: int
    end: int
    heading: str | None
    splittable: bool  # a fenced code block is kept whole


def _front_matter(text: str, name: str) -> tuple[dict[str, Any], int]:
    """The front matter mapping and where the body starts."""
    if not text.startswith("---\n"):
        return {}, 0
    match = re.search(r"^(---|\.\.\.)[ \t]*$", text[4:], flags=re.MULTILINE)
    if match is None:
        return {}, 0  # a lone rule at the top, not front matter
    raw = text[4 : 4 + match.start()]
    try:
        data = yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        raise RecordFormatError(f"{name}: malformed YAML front matter: {exc}".splitlines()[0]) from exc
    if not isinstance(data, dict):
        raise RecordFormatError(f"{name}: front matter must be a YAML mapping of key: value")
    body = 4 + match.end()
    return data, body + 1 if text[body : body + 1] == "\n" else body


def _table_rows(lines: list[str]) -> tuple[list[str], list[list[str]]] | None:
    """Header and rows of a pipe table, or None when the lines are not one."""
    if len(lines) < 2 or not _TABLE_SEPARATOR.match(lines[1]):
        return None

    def cells(line: str) -> list[str]:
        inner = line.strip().removeprefix("|").removesuffix("|")
        return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]

    return cells(lines[0]), [cells(line) for line in lines[2:]]


class _Scanner:
    """One pass over the body: blocks of text, claims from tables and key/value lines."""

    def __init__(self, text: str, start: int, subject: str, context: ClaimContext, name: str) -> None:
        self.text, self.subject, self.context, self.name = text, subject, context, name
        self.start = start
        self.blocks: list[_Block] = []
        self.claims: list[tuple[int, Claim]] = []  # (offset of the stating line, claim)
        self.warnings: list[str] = []
        self._headings: list[tuple[int, str]] = []
        self._paragraph: tuple[int, int] | None = None
        self._table: list[tuple[int, int, str]] = []

    def heading_path(self) -> str | None:
        return " > ".join(title for _, title in self._headings) or None

    def flush_paragraph(self, splittable: bool = True) -> None:
        if self._paragraph is not None:
            start, end = self._paragraph
            if self.text[start:end].strip():
                self.blocks.append(_Block(start, end, self.heading_path(), splittable))
            self._paragraph = None

    def flush_table(self) -> None:
        if not self._table:
            return
        rows = self._table
        self._table = []
        parsed = _table_rows([line for _, _, line in rows])
        if parsed is not None:
            claims, warnings = claims_from_table(*parsed, self.context, where=f"{self.name} table")
            self.warnings.extend(warnings)
            if claims:
                self.claims.extend((rows[0][0], claim) for claim in claims)
                return
        self.blocks.append(_Block(rows[0][0], rows[-1][1], self.heading_path(), True))

    def extend_paragraph(self, start: int, end: int) -> None:
        self._paragraph = (self._paragraph[0] if self._paragraph else start, end)

    def scan(self) -> None:
        offset = self.start
        fence: str | None = None
        for line in self.text[self.start :].splitlines(keepends=True):
            start, end = offset, offset + len(line.rstrip("\n"))
            offset += len(line)
            content = line.rstrip("\n")
            if fence is not None:
                self.extend_paragraph(start, end)
                if content.strip().startswith(fence):
                    fence = None
                    self.flush_paragraph(splittable=False)
                continue
            if (fence_match := _FENCE.match(content)) is not None:
                self.flush_table()
                self.flush_paragraph()
                fence = fence_match.group(1)
                self.extend_paragraph(start, end)
                continue
            if content.lstrip().startswith("|"):
                self.flush_paragraph()
                self._table.append((start, end, content))
                continue
            self.flush_table()
            if (heading := _HEADING.match(content)) is not None:
                self.flush_paragraph()
                level, title = len(heading.group(1)), heading.group(2).strip()
                self._headings = [(lvl, t) for lvl, t in self._headings if lvl < level] + [(level, title)]
                continue
            if not content.strip():
                self.flush_paragraph()
                continue
            if (pair := _KEY_VALUE.match(content)) is not None:
                found = claims_from_mapping(self.subject, {pair["key"]: pair["value"]}, self.context)
                for item in found:
                    if isinstance(item, str):
                        self.warnings.append(f"{self.name}: {item}")
                    else:
                        self.claims.append((start, item))
            self.extend_paragraph(start, end)
        self.flush_table()
        self.flush_paragraph(splittable=fence is None)


def _pieces(text: str, block: _Block, max_chars: int) -> list[tuple[int, int]]:
    """A long paragraph cut at sentence ends into pieces of at most max_chars
    (a sentence longer than that is cut where it must be)."""
    if block.end - block.start <= max_chars:
        return [(block.start, block.end)]
    if not block.splittable:
        # a code block stays whole up to what a chunk may hold; beyond, it is cut between lines
        return _lines_within(text, block.start, block.end, MAX_CHUNK_CHARS)
    pieces: list[tuple[int, int]] = []
    start = block.start
    while block.end - start > max_chars:
        window = text[start : start + max_chars]
        ends = [m.end() for m in _SENTENCE_END.finditer(window)]
        cut = start + (ends[-1] if ends and ends[-1] > max_chars // 3 else max_chars)
        pieces.append((start, cut))
        start = cut
    pieces.append((start, block.end))
    return pieces


def _lines_within(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """[start, end) cut after newlines into pieces of at most limit characters (a longer line is cut)."""
    pieces: list[tuple[int, int]] = []
    while end - start > limit:
        newline = text.rfind("\n", start, start + limit)
        cut = newline + 1 if newline > start else start + limit
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def _passages(text: str, blocks: list[_Block], max_chars: int) -> list[Passage]:
    """Paragraphs of one section merged up to max_chars; sections never merge."""
    spans: list[tuple[int, int, str | None]] = []
    for block in blocks:
        for start, end in _pieces(text, block, max_chars):
            if spans and spans[-1][2] == block.heading and end - spans[-1][0] <= max_chars:
                spans[-1] = (spans[-1][0], end, block.heading)
            else:
                spans.append((start, end, block.heading))
    passages = []
    for start, end, heading in spans:
        # trim surrounding whitespace but keep offsets true to the text
        piece = text[start:end]
        left = len(piece) - len(piece.lstrip())
        right = len(piece.rstrip())
        if right > left:
            passages.append(Passage(text=piece[left:right], heading=heading,
                                    char_start=start + left, char_end=start + right))  # fmt: skip
    return passages


def parse_markdown(
    text: str,
    *,
    name: str,
    functional: Collection[str] = (),
    max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
) -> ParsedRecord:
    """Read one Markdown document (name is its path, for messages and the fallback title)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    metadata, body = _front_matter(text, name)
    declared = functional_predicates(metadata.get("functional")) | frozenset(functional)
    context = ClaimContext(
        functional=declared,
        valid_from=as_instant(metadata.get("valid_from")),
        valid_to=as_instant(metadata.get("valid_to")),
    )
    title = scalar_text(metadata.get("title"))
    explicit_subject = scalar_text(metadata.get("subject")) or scalar_text(metadata.get("entity"))
    # the subject of key/value lines is needed before the first H1 is known: find it first
    first_h1 = next((m.group(2).strip() for line in text[body:].splitlines() if (m := _HEADING.match(line))
                     and len(m.group(1)) == 1), None)  # fmt: skip
    fallback = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    subject = explicit_subject or title or first_h1 or fallback
    scanner = _Scanner(text, body, subject, context, name)
    scanner.scan()
    passages = _passages(text, scanner.blocks, max_passage_chars)

    def evidence(offset: int) -> int | None:
        return next((i for i, p in enumerate(passages) if p.char_start <= offset < p.char_end), None)

    claims: list[Claim] = []
    warnings = list(scanner.warnings)
    for item in claims_from_mapping(subject, metadata, context):
        if isinstance(item, str):
            warnings.append(f"{name} front matter: {item}")
        else:
            claims.append(item)
    for offset, claim in scanner.claims:
        chunk = evidence(offset)
        claims.append(claim if chunk is None else replace(claim, chunk=chunk))
    observed = metadata.get("observed_at", metadata.get("date"))
    return ParsedRecord(
        title=title or first_h1 or fallback,
        passages=tuple(passages),
        claims=tuple(claims),
        observed_at=as_instant(observed) if observed is not None else None,
        warnings=tuple(dict.fromkeys(warnings)),
    )


def parse_plain_text(
    text: str, *, name: str, max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS
) -> ParsedRecord:
    """Plain text: paragraphs only (no front matter, headings or tables)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    blocks: list[_Block] = []
    for match in re.finditer(r"\S(?:.|\n(?!\s*\n))*", text):
        blocks.append(_Block(match.start(), match.end(), None, True))
    fallback = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return ParsedRecord(title=fallback, passages=tuple(_passages(text, blocks, max_passage_chars)))
