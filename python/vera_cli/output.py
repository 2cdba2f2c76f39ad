"""How the commands print: JSON for scripts (--json), and hits and explored facts for people."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from vera_client.api.hits import Hit
    from vera_client.api.reads import ExploredFact


def echo_json(data: object) -> None:
    """One JSON document on stdout (dates and ids as strings, text as written)."""
    click.echo(json.dumps(data, default=str, ensure_ascii=False))


def echo_json_lines(items: Sequence[object]) -> None:
    """One JSON object per line for each item (a dataclass): what a list command's --json prints."""
    for item in items:
        echo_json(dataclasses.asdict(item))  # type: ignore[call-overload]


def _citation_line(hit: Hit) -> str:
    citation = hit.citation
    source = citation.get("source") or {}
    episode = citation.get("episode") or {}
    assert isinstance(source, dict) and isinstance(episode, dict)
    valid = str(citation.get("valid_from") or "")[:10]
    until = str(citation.get("valid_to") or "")[:10]
    lifecycle = citation.get("lifecycle")
    parts = [f"{source.get('name', '?')} (tier {citation.get('tier')})", str(episode.get("external_id", ""))]
    parts.append(f"valid {valid}..{until}" if until else f"valid from {valid}")
    if lifecycle and lifecycle != "published":
        parts.append(str(lifecycle))
    return " · ".join(part for part in parts if part)


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """A count and its noun, singular for one: "1 file", "3 files"."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


# what each signal of the blend measures, in the words --explain prints them with; recency is
# how lately its source stated the item (docs/sql-api.md, sql/functions/170_ranking.sql), which
# a reader takes for how new the fact is unless it says so
SIGNAL_LABELS = {"recency": "stated lately"}
_ABSENT = {"period": " (no period asked)"}
EXPLAIN_LEGEND = (
    "  signals 0..1; stated lately = recency: how lately its source stated or confirmed it "
    "(1.00 now, halved every 30 days by default), not how new the fact is"
)


def print_hits(hits: list[Hit], *, explain: bool) -> None:
    during = getattr(hits, "during", None)
    if during is not None:
        shown = f"{during.start or '...'} .. {during.end or '...'}"
        read = f" (from {during.text!r})" if during.text != shown else ""
        click.echo(f"  asked about {shown}{read}")
    if explain and hits:
        click.echo(EXPLAIN_LEGEND)
    if not hits:
        click.echo("  (no hits)")
    elif getattr(hits, "no_good_match", False):
        click.echo(
            "  no good match: every hit's confidence is below the threshold (0.5); nothing known answers"
        )
    for hit in hits:
        click.echo(f"  {hit.rank:>2}. {hit.score:.3f}  confidence {hit.confidence:.2f}  {hit.text}")
        click.echo(f"      {_citation_line(hit)}")
        if explain:
            click.echo("      " + signals_line(dataclasses.asdict(hit.signals)))
            click.echo("      " + _measures(hit))


def _measures(hit: Hit) -> str:
    """The two measures the confidence is read from: the lexical match and the similarity."""
    lexical = f"{hit.lexical_match:.2f}" if hit.lexical_match is not None else "-"
    similarity = f"{hit.similarity:.2f}" if hit.similarity is not None else "-"
    return f"confidence read from: lexical match {lexical}  similarity {similarity}"


def signals_line(signals: dict[str, float | None]) -> str:
    """The seven signals as "name value" pairs; period is "-" when the search asked about no period."""
    return "  ".join(
        f"{SIGNAL_LABELS.get(name, name)} {value:.2f}"
        if value is not None
        else f"{name} -{_ABSENT.get(name, '')}"
        for name, value in signals.items()
    )


def print_explored(facts: list[ExploredFact]) -> None:
    """One line per fact: hop, subject, predicate, object, and where it comes from."""
    if not facts:
        click.echo("  (nothing reached)")
    for fact in facts:
        source = (fact.citation.get("source") or {}).get("name") if fact.citation else None
        cited = f"  [{source}]" if source else ""
        click.echo(f"  hop {fact.hop}  {fact.subject} {fact.predicate} {fact.object}{cited}")
