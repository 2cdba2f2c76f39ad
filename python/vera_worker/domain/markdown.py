"""Markdown to passages and claims, without a model. The document is parsed by
markdown-it-py (CommonMark, with tables, and YAML front matter from
mdit-py-plugins); passages are spans of the original text, found through the
parser's line map, so their offsets are exact.

- YAML front matter: `title`, `subject` (whom the metadata is about; default
  the title), `valid_from`/`valid_to`, `observed_at`, `functional` (keys whose
  values replace each other over time); every other key states a claim.
- `**Key:** value` lines (also as list items, bulleted or numbered) state claims of the subject and
  stay in the text; the passage holding the line is their evidence.
- Tables: the first column names the subject, the other headers are
  predicates (see tables.py); a table that states claims is not repeated as
  a passage.
- The rest is cut on structure: sections by heading (ATX `#` or setext
  underlines), blocks within a section (paragraphs, lists, quotes), merged up
  to a size and split at sentence ends only when one block is too long; a
  code block is never split. Passages keep the original characters (Unicode
  as written) and their offsets.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

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

# CommonMark with GFM tables and front matter; raw HTML blocks stay text. Only the block
# structure is read (headings' and cells' text as written), so inline parsing is off.
_PARSER = MarkdownIt("commonmark").use(front_matter_plugin).enable("table").disable("inline")
_KEY_VALUE = re.compile(
    r"^\s*(?:(?:[-*+]|\d{1,9}[.)])\s+)?\*\*(?P<key>[^*:]{1,80}?)\s*(?::\*\*|\*\*\s*:)\s*(?P<value>\S.*?)\s*$"
)
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+|\n")
# blocks whose lines may state `**Key:** value` claims
_STATING_BLOCKS = frozenset({"paragraph_open", "bullet_list_open", "ordered_list_open"})
_CODE_BLOCKS = frozenset({"fence", "code_block"})


@dataclass(frozen=True, slots=True)
class _Block:
    start: int
    end: int
    heading: str | None
    splittable: bool  # a code block is kept whole


class _Lines:
    """Character offsets of the text's lines, for the parser's line maps ([first, last + 1))."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(newline.end() for newline in re.finditer("\n", text))]

    def span(self, line_map: Sequence[int]) -> tuple[int, int]:
        first, stop = line_map[0], line_map[1]
        end = self.starts[stop] - 1 if stop < len(self.starts) else len(self.text)
        return self.starts[first], max(end, self.starts[first])

    def lines(self, line_map: Sequence[int]) -> list[tuple[int, str]]:
        """(offset, text) of each line in the map."""
        found = []
        for number in range(line_map[0], min(line_map[1], len(self.starts))):
            start = self.starts[number]
            end = self.starts[number + 1] - 1 if number + 1 < len(self.starts) else len(self.text)
            found.append((start, self.text[start:end]))
        return found


def _front_matter(tokens: list[Token], name: str) -> dict[str, Any]:
    """The front matter mapping (the parser found it at the top), or {}."""
    if not tokens or tokens[0].type != "front_matter":
        return {}
    raw = tokens[0].content
    try:
        data = yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        raise RecordFormatError(f"{name}: malformed YAML front matter: {exc}".splitlines()[0]) from exc
    if not isinstance(data, dict):
        raise RecordFormatError(f"{name}: front matter must be a YAML mapping of key: value")
    return data


def _table(tokens: list[Token], start: int) -> tuple[list[str], list[list[str]], int]:
    """Header cells, body rows and the index after table_close, from table_open at start."""
    rows: list[list[str]] = []
    index = start + 1
    while tokens[index].type != "table_close":
        token = tokens[index]
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(token.content.strip())
        index += 1
    return (rows[0] if rows else []), rows[1:], index + 1


def _first_h1(tokens: list[Token]) -> str | None:
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and token.level == 0:
            return tokens[index + 1].content.strip() or None
    return None


class _Scanner:
    """One pass over the parsed body: blocks of text, claims from tables and key/value lines."""

    def __init__(self, lines: _Lines, subject: str, context: ClaimContext, name: str) -> None:
        self.lines, self.subject, self.context, self.name = lines, subject, context, name
        self.blocks: list[_Block] = []
        self.claims: list[tuple[int, Claim]] = []  # (offset of the stating line, claim)
        self.warnings: list[str] = []
        self._headings: list[tuple[int, str]] = []

    def heading_path(self) -> str | None:
        return " > ".join(title for _, title in self._headings) or None

    def scan(self, tokens: list[Token]) -> None:
        index = 0
        while index < len(tokens):
            token = tokens[index]
            index += 1
            if token.level != 0 or token.map is None or token.type in {"front_matter", "hr"}:
                continue
            if token.type == "heading_open":
                level, title = int(token.tag[1:]), tokens[index].content.strip()
                self._headings = [(lvl, t) for lvl, t in self._headings if lvl < level] + [(level, title)]
            elif token.type == "table_open":
                header, rows, index = _table(tokens, index - 1)
                self.table(token.map, header, rows)
            else:
                if token.type in _STATING_BLOCKS:
                    self.key_values(token.map)
                self.block(token.map, splittable=token.type not in _CODE_BLOCKS)

    def block(self, line_map: Sequence[int], *, splittable: bool) -> None:
        start, end = self.lines.span(line_map)
        if self.lines.text[start:end].strip():
            self.blocks.append(_Block(start, end, self.heading_path(), splittable))

    def table(self, line_map: Sequence[int], header: list[str], rows: list[list[str]]) -> None:
        claims, warnings = claims_from_table(header, rows, self.context, where=f"{self.name} table")
        self.warnings.extend(warnings)
        if claims:
            start, _ = self.lines.span(line_map)
            self.claims.extend((start, claim) for claim in claims)
        else:
            self.block(line_map, splittable=True)

    def key_values(self, line_map: Sequence[int]) -> None:
        for offset, line in self.lines.lines(line_map):
            if (pair := _KEY_VALUE.match(line)) is None:
                continue
            for item in claims_from_mapping(self.subject, {pair["key"]: pair["value"]}, self.context):
                if isinstance(item, str):
                    self.warnings.append(f"{self.name}: {item}")
                else:
                    self.claims.append((offset, item))


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
    tokens = _PARSER.parse(text)
    metadata = _front_matter(tokens, name)
    declared = functional_predicates(metadata.get("functional")) | frozenset(functional)
    context = ClaimContext(
        functional=declared,
        valid_from=as_instant(metadata.get("valid_from")),
        valid_to=as_instant(metadata.get("valid_to")),
    )
    title = scalar_text(metadata.get("title"))
    explicit_subject = scalar_text(metadata.get("subject")) or scalar_text(metadata.get("entity"))
    # the subject of key/value lines is needed before the first H1 is reached: find it first
    first_h1 = _first_h1(tokens)
    fallback = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    subject = explicit_subject or title or first_h1 or fallback
    scanner = _Scanner(_Lines(text), subject, context, name)
    scanner.scan(tokens)
    passages = _passages(text, scanner.blocks, max_passage_chars)

    starts = [p.char_start for p in passages]  # in order: the passage a line is in, by bisection

    def evidence(offset: int) -> int | None:
        index = bisect.bisect_right(starts, offset) - 1
        return index if index >= 0 and offset < passages[index].char_end else None

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
    stated = (context.valid_from, context.valid_to)
    return ParsedRecord(
        title=title or first_h1 or fallback,
        passages=tuple(passages),
        claims=tuple(claims),
        observed_at=as_instant(observed) if observed is not None else None,
        warnings=tuple(dict.fromkeys(warnings)),
        validity=stated if stated != (None, None) else None,
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
