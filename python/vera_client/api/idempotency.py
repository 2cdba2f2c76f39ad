"""Idempotency keys of the HTTP API: a write sent again with the same Idempotency-Key
is answered as it was the first time instead of being done twice
(sql/functions/260_idempotency.sql; queries in idempotency.sql; tests in pg_tests/api/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vera_client.api.call import Call, Json, record, scalar
from vera_client.api.operation import operation


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedAnswer:
    """The answer a request with an idempotency key got (its HTTP status and JSON body), or, both
    None, none yet: the key was new and is now the caller's to run and finish."""

    status: int | None
    response: Any


def begin_idempotent(key: str, request_hash: str) -> Call[RecordedAnswer]:
    """Claim key for a request of the caller (request_hash: sha256 hex of what it sends): nothing
    recorded when the key is new (run the request, then finish_idempotent), else the answer
    recorded before. ConflictError when the key was used for another request or its request
    still runs."""
    return Call("begin_idempotent", {"key": key, "request_hash": request_hash}, record(RecordedAnswer))


def finish_idempotent(key: str, status: int, response: Any) -> Call[bool]:
    """Record the answer of the request that claimed key; whether the caller held it running."""
    return Call("finish_idempotent", {"key": key, "status": status, "response": Json(response)}, scalar)


def forget_idempotent(key: str) -> Call[bool]:
    """Forget a running key whose request failed before anything committed; whether there was one."""
    return Call("forget_idempotent", {"key": key}, scalar)


class Idempotency:
    """The idempotency key operations of the client."""

    begin_idempotent = operation(begin_idempotent)
    finish_idempotent = operation(finish_idempotent)
    forget_idempotent = operation(forget_idempotent)
