"""Error bodies of the HTTP API: RFC 9457 problem details, one shape for every refusal.

`problem_for(error)` turns an exception into a Problem and its HTTP status in one place,
by the VeraError class the SQLSTATE chose (vera_client.domain.errors): the SQLSTATE itself
travels as `code`, so a program can branch on it without parsing the message."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from vera_client.domain.errors import (
    AuthenticationError,
    ConflictError,
    DatabaseUnavailableError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    SnapshotError,
    VeraError,
)
from vera_mcp.domain.access import QuotaExceededError

PROBLEM_TYPE = "urn:vera:problem:"
PROBLEM_MEDIA_TYPE = "application/problem+json"


class Problem(BaseModel):
    """An RFC 9457 problem detail."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(description="urn:vera:problem:<slug>, one per kind of refusal")
    title: str = Field(description="the kind of refusal in a few words")
    status: int = Field(ge=100, le=599, description="the HTTP status, repeated")
    detail: str = Field(description="what went wrong with this request, in one line")
    code: str | None = Field(
        default=None, description="the SQLSTATE the SQL API raised (e.g. VN001, 42501, 22023), if any"
    )
    request_id: str | None = Field(default=None, description="the X-Request-Id of the request (logs name it)")
    errors: list[str] | None = Field(
        default=None, description="each invalid parameter and what is wrong with it (status 422)"
    )


class ApiProblem(Exception):
    """A refusal decided in the HTTP layer (a bad header, a missing token, a stale precondition)."""

    def __init__(
        self,
        status: int,
        slug: str,
        title: str,
        detail: str,
        *,
        errors: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.errors = errors
        self.headers = headers or {}


# the first class an error is an instance of decides (subclasses before their parents)
_BY_CLASS: tuple[tuple[type[VeraError], int, str, str], ...] = (
    (QuotaExceededError, 429, "quota-exceeded", "Quota exceeded"),
    (DatabaseUnavailableError, 503, "unavailable", "Temporarily unavailable"),
    (AuthenticationError, 401, "unauthenticated", "Not authenticated"),
    (PermissionDeniedError, 403, "forbidden", "Permission denied"),
    (NotFoundError, 404, "not-found", "Not found"),
    (ConflictError, 409, "conflict", "Conflict"),
    (SnapshotError, 409, "snapshot-conflict", "Snapshot conflict"),
    (InvalidArgumentError, 400, "invalid-argument", "Invalid argument"),
)


def problem_for(error: BaseException, request_id: str | None) -> tuple[Problem, dict[str, str]]:
    """The problem detail of an exception, and the headers its response carries."""
    if isinstance(error, ApiProblem):
        problem = Problem(
            type=PROBLEM_TYPE + error.slug,
            title=error.title,
            status=error.status,
            detail=error.detail,
            request_id=request_id,
            errors=error.errors,
        )
        return problem, dict(error.headers)
    if isinstance(error, TimeoutError):
        return Problem(
            type=PROBLEM_TYPE + "timeout",
            title="Timed out",
            status=504,
            detail="the request took too long and was stopped",
            request_id=request_id,
        ), {}
    if isinstance(error, VeraError):
        status, slug, title = next(
            ((s, slug, t) for cls, s, slug, t in _BY_CLASS if isinstance(error, cls)),
            (400, "refused", "Refused"),
        )
        headers = {}
        if isinstance(error, QuotaExceededError):
            headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
        elif isinstance(error, DatabaseUnavailableError):
            headers["Retry-After"] = "5"
        detail = str(error) or title
        code = getattr(error, "sqlstate", None)
        problem = Problem(
            type=PROBLEM_TYPE + slug,
            title=title,
            status=status,
            detail=detail,
            code=code,
            request_id=request_id,
        )
        return problem, headers
    problem = Problem(
        type=PROBLEM_TYPE + "internal",
        title="Internal error",
        status=500,
        detail=f"internal error (request id {request_id})",
        request_id=request_id,
    )
    return problem, {}
