"""A Jira issue as claims and passages, by a fixed mapping (no model, no
config): the subject is the issue key (PROJ-12).

    status        -> STATUS       (functional; its history from the changelog)
    assignee      -> ASSIGNEE     (functional, display name; history too)
    priority      -> PRIORITY     (functional; history too)
    issuetype     -> ISSUE_TYPE   (functional)
    components    -> COMPONENT    (one claim per component)
    fixVersions   -> FIX_VERSION  (one claim per version)
    issuelinks    -> the link type's phrase from this issue's side ("blocks",
                     "is blocked by", "relates to") -> BLOCKS, IS_BLOCKED_BY, ...
                     with the other issue's key as object
    project       -> PROJECT      (the project's key)

A changelog entry that changed status, assignee or priority closes the old
value's claim (valid_to) and opens the new one's (valid_from), so the issue's
timeline reads from its episode. The summary is the episode's title; the
description and each comment (Atlassian Document Format, adf.py) become
passages. Any other field (custom fields, watchers, ...) is left out."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any

from vera_worker.connectors.contract import ItemSkipped
from vera_worker.connectors.jira.adf import AdfError, adf_text
from vera_worker.connectors.passages import passages_of
from vera_worker.domain.records import Claim, ParsedRecord
from vera_worker.domain.statements import MAX_OBJECT_CHARS, looks_like_entity, scalar_text

# the fields a search asks for: what the mapping reads, and nothing else
FIELDS = (
    "summary", "status", "assignee", "priority", "issuetype", "components", "fixVersions", "issuelinks",
    "project", "description", "comment", "created", "updated",
)  # fmt: skip
_HISTORY = {"status": "STATUS", "assignee": "ASSIGNEE", "priority": "PRIORITY"}
FUNCTIONAL = frozenset({"STATUS", "ASSIGNEE", "PRIORITY", "ISSUE_TYPE"})
_PHRASES = {
    "STATUS": "has status", "ASSIGNEE": "is assigned to", "PRIORITY": "has priority",
    "ISSUE_TYPE": "is a", "COMPONENT": "is in component", "FIX_VERSION": "is fixed in version",
    "PROJECT": "is in project",
}  # fmt: skip


def issue_key(issue: Any) -> str:
    if not isinstance(issue, Mapping):
        raise ItemSkipped("not a JSON object")
    key = issue.get("key")
    if not isinstance(key, str) or not key.strip() or len(key) > 255:
        raise ItemSkipped("an issue without a key")
    return key.strip()


def issue_record(issue: Mapping[str, Any], key: str) -> ParsedRecord:
    """The issue's claims and passages; ItemSkipped when its fields cannot be read."""
    fields = issue.get("fields")
    if not isinstance(fields, Mapping):
        raise ItemSkipped("no 'fields' object")
    warnings: list[str] = []
    claims = list(_claims(key, fields, _changes(issue), warnings))
    summary = scalar_text(fields.get("summary")) or key
    try:
        sections = [(f"{key}: {summary}", adf_text(fields.get("description")))]
        comments = fields.get("comment")
        listed = comments.get("comments") if isinstance(comments, Mapping) else None
        for comment in listed if isinstance(listed, list) else []:
            if not isinstance(comment, Mapping):
                continue
            author = _name(comment.get("author")) or "someone"
            when = utc_instant(comment.get("created")) or ""
            sections.append((f"{key}: comment by {author} {when}".strip(), adf_text(comment.get("body"))))
    except AdfError as exc:
        raise ItemSkipped(str(exc)) from None
    passages = passages_of(sections, what="its description and comments")
    return ParsedRecord(
        title=f"{key}: {summary}"[:500], passages=passages, claims=tuple(claims),
        observed_at=utc_instant(fields.get("updated")), warnings=tuple(warnings),
    )  # fmt: skip


def _claims(
    key: str, fields: Mapping[str, Any], changes: list[tuple[str, str, str | None, str | None]],
    warnings: list[str],
) -> Iterator[Claim]:  # fmt: skip
    yield from _history(key, fields, changes, warnings)
    if issue_type := _name(fields.get("issuetype")):
        yield _claim(key, "ISSUE_TYPE", issue_type, warnings)
    if project := _project(fields.get("project")):
        yield _claim(key, "PROJECT", project, warnings)
    for predicate, field in (("COMPONENT", "components"), ("FIX_VERSION", "fixVersions")):
        values = fields.get(field)
        for value in values if isinstance(values, list) else []:
            if name := _name(value):
                yield _claim(key, predicate, name, warnings)
    yield from _links(key, fields.get("issuelinks"), warnings)


def _history(
    key: str, fields: Mapping[str, Any], changes: list[tuple[str, str, str | None, str | None]],
    warnings: list[str],
) -> Iterator[Claim]:  # fmt: skip
    """Status, assignee and priority: each value the changelog says it held, from when to when, then
    the current one from its last change (without a change in the changelog: with no stated start)."""
    created = utc_instant(fields.get("created"))
    for field, predicate in _HISTORY.items():
        current = _name(fields.get(field))
        timeline = [(when, old) for when, name, old, _new in changes if name == field]
        start = created
        for when, old in timeline:  # each change closes the value before it
            if old:
                yield _claim(key, predicate, old, warnings, valid_from=start, valid_to=when)
            start = when
        if current:
            yield _claim(key, predicate, current, warnings, valid_from=start if timeline else None)


def _links(key: str, links: Any, warnings: list[str]) -> Iterator[Claim]:
    """An issue link as a claim of this issue, in the words of the link type from its side."""
    for link in links if isinstance(links, list) else []:
        if not isinstance(link, Mapping) or not isinstance(link.get("type"), Mapping):
            continue
        for side, phrase_field in (("outwardIssue", "outward"), ("inwardIssue", "inward")):
            other = link.get(side)
            phrase = link["type"].get(phrase_field)
            if isinstance(other, Mapping) and isinstance(other.get("key"), str) and isinstance(phrase, str):
                predicate = "_".join(phrase.upper().replace("-", " ").split())
                if predicate and predicate.replace("_", "").isalpha():
                    yield _claim(key, predicate, other["key"], warnings, phrase=phrase)


def _claim(
    key: str, predicate: str, value: str, warnings: list[str], *, valid_from: str | None = None,
    valid_to: str | None = None, phrase: str | None = None,
) -> Claim:  # fmt: skip
    if len(value) > MAX_OBJECT_CHARS:
        warnings.append(f"its {predicate.lower()} is longer than {MAX_OBJECT_CHARS} characters: cut")
        value = value[:MAX_OBJECT_CHARS]
    words = phrase or _PHRASES.get(predicate, predicate.replace("_", " ").lower())
    return Claim(
        subject=key, predicate=predicate, object=value, object_is_entity=looks_like_entity(value),
        fact_text=f"{key} {words} {value}", functional=predicate in FUNCTIONAL,
        valid_from=valid_from, valid_to=valid_to,
    )  # fmt: skip


def _changes(issue: Mapping[str, Any]) -> list[tuple[str, str, str | None, str | None]]:
    """(when, field, from, to) of the changelog's status, assignee and priority changes, oldest first."""
    changelog = issue.get("changelog")
    histories = changelog.get("histories") if isinstance(changelog, Mapping) else None
    found = []
    for history in histories if isinstance(histories, list) else []:
        if not isinstance(history, Mapping) or not (when := utc_instant(history.get("created"))):
            continue
        for item in history.get("items") or []:
            if not isinstance(item, Mapping):
                continue
            field = item.get("fieldId") or item.get("field")
            if field in _HISTORY:
                found.append((when, str(field), _text(item.get("fromString")), _text(item.get("toString"))))
    return sorted(found, key=lambda change: change[0])


def _name(value: Any) -> str | None:
    if isinstance(value, Mapping):
        for field in ("displayName", "name", "value"):
            if text := scalar_text(value.get(field)):
                return text
        return None
    return None


def _project(value: Any) -> str | None:
    return scalar_text(value.get("key")) if isinstance(value, Mapping) else None


def _text(value: Any) -> str | None:
    return scalar_text(value)


def utc_instant(value: Any) -> str | None:
    """A Jira time ("2026-01-02T10:30:00.000+0700") as ISO in UTC (so they sort as text), or None."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).isoformat()
