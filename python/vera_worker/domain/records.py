"""What a connector makes of one source record (a file): passages to store
and claims to publish, in the shapes the SQL API takes (store_chunks,
publish_claims). Pure data; parsing lives in markdown.py and tables.py."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from vera_client.domain.time_scopes import with_time_scope

_PREDICATE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
# camelCase splits before upper-casing, as vera.normalize_predicate does
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NOT_ALNUM = re.compile(r"[\W_]+")


def predicate_name(phrase: str) -> str | None:
    """UPPER_SNAKE form of a key or column header ("runs on" -> RUNS_ON), or None
    when nothing of it survives (the SQL function vera.normalize_predicate agrees
    for ASCII; a key in another script cannot be a predicate)."""
    text = _CAMEL.sub(r"\1_\2", unicodedata.normalize("NFKC", phrase))
    name = _NOT_ALNUM.sub("_", text).strip("_").upper()
    return name if _PREDICATE.match(name) and len(name) <= 100 else None


@dataclass(frozen=True, slots=True)
class Passage:
    """A piece of the record's text, cut on its structure; offsets are characters."""

    text: str
    heading: str | None
    char_start: int
    char_end: int

    def as_chunk(self) -> dict[str, Any]:
        chunk: dict[str, Any] = {"text": self.text, "char_start": self.char_start, "char_end": self.char_end}
        if self.heading:
            chunk["heading"] = self.heading
        return chunk


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement read from structure (front matter, a key/value line, a table row)."""

    subject: str
    predicate: str  # UPPER_SNAKE
    object: str
    object_is_entity: bool
    fact_text: str
    functional: bool = False
    valid_from: str | None = None
    valid_to: str | None = None
    chunk: int | None = None  # ordinal of the evidence passage

    def as_claim(self) -> dict[str, Any]:
        claim: dict[str, Any] = {
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "object_is_entity": self.object_is_entity,
            "fact_text": self.fact_text,
        }
        if self.functional:
            claim["functional"] = True
        for name in ("valid_from", "valid_to", "chunk"):
            value = getattr(self, name)
            if value is not None:
                claim[name] = value
        return claim


@dataclass(frozen=True, slots=True)
class ParsedRecord:
    """A record ready to publish."""

    title: str | None
    passages: tuple[Passage, ...] = ()
    claims: tuple[Claim, ...] = ()
    observed_at: str | None = None
    # what could not become a claim, said once per record (an unreadable key, ...)
    warnings: tuple[str, ...] = field(default=())
    # the period the whole record holds for, stated outright (front matter valid_from/valid_to,
    # ISO dates or timestamps; None where open): every passage's time scope, over what it says
    validity: tuple[str | None, str | None] | None = None

    @property
    def dated_at(self) -> str | None:
        """The time its episode is dated by, which its passages answer from at an `as_of`: the
        observed_at it states, else the start of its stated validity, however old (a museum's
        record "since 1797" is dated 1797; not a future one, which would hide the text until
        then), else None (the file's own time is used). docs/time.md, "Stated outright"."""
        start = self.validity[0] if self.validity is not None else None
        if self.observed_at is not None or start is None or start[:10] > dt.date.today().isoformat():
            return self.observed_at
        return start

    def chunks(self) -> list[dict[str, Any]]:
        """The passages in the shape vera.store_chunks takes, each with its time scope: the
        record's stated validity when it has one, else the times the passage's own words state."""
        chunks = []
        for passage in self.passages:
            chunk = passage.as_chunk()
            if self.validity is not None:
                chunk["time_scope"], chunk["time_scope_version"] = [list(self.validity)], 0
            chunks.append(with_time_scope(chunk))
        return chunks


class RecordFormatError(ValueError):
    """The record cannot be read (not UTF-8, malformed front matter or CSV)."""


def unnamed(name: str, message: str) -> str:
    """A failure's message without the file name its parts begin with (a parser's warning and
    error name their file, "team.md front matter: ..."), for a report that names the file
    beside it already: the name is said once."""
    parts = []
    for part in message.split("; "):
        prefix = next((p for p in (f"{name}: ", f"{name} ") if part.startswith(p)), "")
        parts.append(part.removeprefix(prefix))
    return "; ".join(parts)
