"""Opaque cursors of the HTTP API's listings.

A cursor is base64url of {"o": offset, "s": a digest of the request's other parameters}:
a client passes it back as it got it, and a cursor sent with other filters than the
listing it came from is refused (422) instead of paging through a different listing.
The listings the SQL API answers are bounded (1,000 rows at most), so an offset into
them is exact."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from typing import TypeVar

from vera_mcp.domain.problems import ApiProblem

T = TypeVar("T")


def cursor_scope(params: Sequence[tuple[str, str]]) -> str:
    """A digest of a request's query parameters but its cursor: what a cursor is valid for."""
    kept = sorted((k, v) for k, v in params if k != "cursor")
    return hashlib.sha256(json.dumps(kept).encode()).hexdigest()[:16]


def encode_cursor(offset: int, scope: str) -> str:
    raw = json.dumps({"o": offset, "s": scope}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, scope: str) -> int:
    """The offset a cursor holds (ApiProblem 422 when it is not one of ours for this listing)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
        offset = value["o"]
        valid = isinstance(offset, int) and offset >= 0 and value["s"] == scope
    except (ValueError, KeyError, TypeError, binascii.Error):
        valid = False
    if not valid:
        raise ApiProblem(
            422,
            "invalid-cursor",
            "Invalid cursor",
            "the cursor is not one this listing gave (pass next_cursor back as it came)",
        )
    return int(offset)


def page_of(items: Sequence[T], *, limit: int, cursor: str | None, scope: str) -> tuple[list[T], str | None]:
    start = decode_cursor(cursor, scope) if cursor else 0
    end = start + limit
    return list(items[start:end]), encode_cursor(end, scope) if end < len(items) else None
