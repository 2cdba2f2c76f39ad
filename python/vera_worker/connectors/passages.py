"""Free text of a connector's item (an issue's description and comments, a
page, a message) as passages: each text cut on its paragraphs as plain text is
(domain/markdown.parse_plain_text), under a heading that says what it is, with
offsets into the item's texts laid end to end."""

from __future__ import annotations

from collections.abc import Iterable

from vera_worker.connectors.contract import ItemSkipped
from vera_worker.domain.markdown import parse_plain_text
from vera_worker.domain.records import Passage

MAX_TEXT_CHARS = 200_000  # one item's free text, all of it; more is skipped by name, not cut


def passages_of(sections: Iterable[tuple[str, str]], *, what: str = "its text") -> tuple[Passage, ...]:
    """Passages of (heading, text) sections; ItemSkipped when their text is over MAX_TEXT_CHARS."""
    found: list[Passage] = []
    offset = 0
    total = 0
    for heading, raw in sections:
        text = raw.strip()
        if not text:
            continue
        total += len(text)
        if total > MAX_TEXT_CHARS:
            raise ItemSkipped(f"{what} is over {MAX_TEXT_CHARS:,} characters")
        for passage in parse_plain_text(text, name=heading).passages:
            found.append(
                Passage(passage.text, heading, passage.char_start + offset, passage.char_end + offset)
            )
        offset += len(text) + 2
    return tuple(found)
