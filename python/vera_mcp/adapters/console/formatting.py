"""The console's formatting helpers: a hit's citation in one line, an evidence span cut out of
its passage, a moment read back from the API's JSON."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any


def moment(value: str) -> datetime:
    return datetime.fromisoformat(value)


def citation(citation: Mapping[str, Any]) -> str:
    """A hit's citation in one line: its source, episode and section, its address, the day it
    holds from, and its tier and verification."""
    source = citation.get("source") or {}
    episode = citation.get("episode") or {}
    chunk = citation.get("chunk") or {}
    parts = []
    if source.get("name"):
        parts.append(f"{source['name']} ({source.get('kind')})")
    if episode.get("title") or episode.get("external_id"):
        version = f" v{episode['version']}" if episode.get("version") else ""
        parts.append(f"{episode.get('title') or episode.get('external_id')}{version}")
    if chunk.get("heading"):
        parts.append(f"§ {chunk['heading']}")
    if episode.get("uri") or source.get("uri"):
        parts.append(str(episode.get("uri") or source.get("uri")))
    if citation.get("valid_from"):
        parts.append(f"from {str(citation['valid_from'])[:10]}")
    if citation.get("tier") is not None:
        parts.append(f"tier {citation['tier']}, {citation.get('verification')}")
    return " · ".join(parts)


def spans(evidence: Mapping[str, Any]) -> list[tuple[str, bool]] | None:
    """The episode's passage cut around the evidence span: (text, is_evidence) pieces."""
    text = evidence.get("chunk_text")
    if not text:
        return None
    start, end = evidence.get("evidence_start"), evidence.get("evidence_end")
    if start is None or end is None or not 0 <= start <= end <= len(text):
        return [(text, False)]
    return [(text[:start], False), (text[start:end], True), (text[end:], False)]
