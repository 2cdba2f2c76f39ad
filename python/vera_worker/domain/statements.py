"""Structured metadata to claims, without a model: a subject, a key and its
value(s) become (subject, KEY, value). Shared by front matter, key/value lines
and table rows, so every format reads the same way."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from vera_worker.domain.records import Claim, predicate_name

# Keys that describe the record or steer extraction rather than state a fact.
RESERVED_KEYS = frozenset({
    "title", "subject", "entity", "aliases", "tags", "date", "observed_at", "valid_from", "valid_to",
    "functional", "lang", "language", "description", "summary",
})  # fmt: skip
VALID_FROM_KEYS = frozenset({"VALID_FROM", "SINCE", "FROM", "EFFECTIVE", "EFFECTIVE_FROM"})
VALID_TO_KEYS = frozenset({"VALID_TO", "UNTIL", "TO", "EFFECTIVE_TO"})

_SENTENCE = re.compile(r"[.!?;,:]\s|\n")
_NUMBER = re.compile(r"^[+-]?\d+([.,]\d+)?%?$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_MAX_ENTITY_CHARS = 80
_MAX_ENTITY_WORDS = 6
# what vera.publish_claims accepts; longer values are prose, which the passages carry
MAX_SUBJECT_CHARS = 500
MAX_OBJECT_CHARS = 2000
# owner: {team: {lead: ...}} reads as OWNER_TEAM_LEAD; deeper (or a YAML alias bomb) is not metadata
MAX_NESTING = 3


def looks_like_entity(value: str) -> bool:
    """A short name ("k8s-hanoi-2", "Payments Team") is an entity to resolve;
    prose, numbers, dates and URLs stay literal values."""
    text = value.strip()
    return (
        0 < len(text) <= _MAX_ENTITY_CHARS
        and len(text.split()) <= _MAX_ENTITY_WORDS
        and not _SENTENCE.search(text)
        and not _NUMBER.match(text)
        and not _URL.match(text)
        and text.lower() not in {"true", "false", "yes", "no", "none", "null"}
        and as_instant(text) is None
    )


def as_instant(value: object) -> str | None:
    """An ISO date or timestamp as text, or None when value is not one."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        text = value.strip()
        try:
            # a plain date stays a date: PostgreSQL reads it as midnight of the session's zone
            if len(text) == 10:
                return dt.date.fromisoformat(text).isoformat()
            return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat() if text else None
        except ValueError:
            return None
    return None


def scalar_text(value: object) -> str | None:
    """A YAML/CSV scalar as claim text; None for what is not a scalar."""
    if value is None or isinstance(value, Mapping | list | tuple | set):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value).strip()
    return text or None


def phrase(key: str) -> str:
    """How a key reads inside a sentence: "runs_on" and "RunsOn" read "runs on"."""
    name = predicate_name(key)
    return name.replace("_", " ").lower() if name else key.strip()


@dataclass(frozen=True, slots=True)
class ClaimContext:
    """What applies to every claim of one record."""

    functional: Collection[str] = ()  # UPPER_SNAKE predicates declared functional
    valid_from: str | None = None
    valid_to: str | None = None


def claims_from_mapping(
    subject: str,
    metadata: Mapping[str, Any],
    context: ClaimContext,
    *,
    chunk: int | None = None,
    skip_reserved: bool = True,
    depth: int = 1,
) -> Iterator[Claim | str]:
    """Claims of subject from key -> value(s); a nested mapping's keys extend the
    predicate (owner.team -> OWNER_TEAM). Yields a warning string for what cannot
    be a claim (a key without letters A-Z, a value too long, nesting too deep)
    instead of raising: one odd key must not lose a record."""
    if len(subject) > MAX_SUBJECT_CHARS:
        yield f"subject {subject[:40]!r}... is longer than {MAX_SUBJECT_CHARS} characters: no claims of it"
        return
    for key, value in metadata.items():
        key_text = str(key)
        if skip_reserved and key_text.strip().lower() in RESERVED_KEYS:
            continue
        predicate = predicate_name(key_text)
        if predicate is None:
            yield f"key {key_text!r} cannot be a predicate (it needs letters A-Z)"
            continue
        if isinstance(value, Mapping):
            if depth >= MAX_NESTING:
                yield f"key {key_text!r} nests deeper than {MAX_NESTING} levels: left out"
                continue
            nested = {f"{key_text} {inner}": inner_value for inner, inner_value in value.items()}
            yield from claims_from_mapping(
                subject, nested, context, chunk=chunk, skip_reserved=False, depth=depth + 1
            )
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            text = scalar_text(item)
            if text is None:
                continue
            if len(text) > MAX_OBJECT_CHARS:
                yield f"the value of {key_text!r} is longer than {MAX_OBJECT_CHARS} characters: left out"
                continue
            yield Claim(
                subject=subject,
                predicate=predicate,
                object=text,
                object_is_entity=looks_like_entity(text),
                fact_text=f"{subject} {phrase(key_text)} {text}",
                functional=predicate in context.functional,
                valid_from=context.valid_from,
                valid_to=context.valid_to,
                chunk=chunk,
            )


def functional_predicates(declared: object) -> frozenset[str]:
    """Predicates declared functional by a list of keys (front matter or source config)."""
    if isinstance(declared, str):
        declared = [declared]
    if not isinstance(declared, list | tuple):
        return frozenset()
    return frozenset(name for item in declared if (name := predicate_name(str(item))))
