"""JSON log lines with a correlation id.

One JSON object per line: time, level, logger, message, correlation_id, and,
when the record carries them (`extra={...}`), tool, outcome, duration_ms;
trace_id and span_id when a span is active. The correlation id lives in a
contextvar set per HTTP request by CorrelationIdMiddleware, from a sane
incoming X-Request-Id (so a gateway's id follows the request) or a new one,
and is echoed in the response.

Secrets stay out: fields named like a token, key or query are dropped below
DEBUG level, and bearer tokens and VERA API keys in a message are masked.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Any

from opentelemetry import trace
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-request-id"
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{8,128}")
_correlation_id: ContextVar[str | None] = ContextVar("vera_correlation_id", default=None)

# the optional fields of a line, taken from the record's `extra`
FIELDS = ("tool", "outcome", "duration_ms", "tool_class", "route", "status")
# never written above DEBUG, whatever a call site passes in `extra`
SECRET_FIELDS = frozenset({"token", "api_key", "key", "authorization", "query", "password", "secret"})
# a bearer credential, and a VERA API key (vera_<12 hex>_<43 base64url>) wherever it appears;
# names such as vera_mcp_tool_calls stay readable
_SECRETS = re.compile(r"(?i)\b(bearer\s+)\S+|\bvera_[0-9a-f]{12}_[A-Za-z0-9_-]{16,}")


def correlation_id() -> str | None:
    """The correlation id of the request being served, if any."""
    return _correlation_id.get()


def sane_request_id(value: str | None) -> str | None:
    """value when it can travel as our correlation id (8..128 of [A-Za-z0-9._:-]), else None."""
    return value if value is not None and _SANE_ID.fullmatch(value) else None


def new_correlation_id() -> str:
    return uuid.uuid4().hex


@contextmanager
def correlated(value: str | None = None) -> Iterator[str]:
    """Run the block under correlation id value (sane) or a new one; yields the id in force."""
    chosen = sane_request_id(value) or new_correlation_id()
    token = _correlation_id.set(chosen)
    try:
        yield chosen
    finally:
        _correlation_id.reset(token)


def _masked(text: str) -> str:
    return _SECRETS.sub(lambda m: f"{m.group(1)}***" if m.group(1) else "vera_***", text)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object (see the module's docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": _masked(record.getMessage()),
            "correlation_id": correlation_id(),
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                line[name] = str(value) if not isinstance(value, int | float) else value
        if record.levelno <= logging.DEBUG:
            for name in SECRET_FIELDS:
                if (value := record.__dict__.get(name)) is not None:
                    line[name] = str(value)
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            line["trace_id"] = format(context.trace_id, "032x")
            line["span_id"] = format(context.span_id, "016x")
        if record.exc_info:
            line["error"] = _masked(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_json_logging(level: int = logging.INFO, stream: IO[str] | None = None) -> logging.Handler:
    """Send the root logger's records to stream (stderr) as JSON lines; returns the handler."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not isinstance(h.formatter, JsonFormatter)]
    root.addHandler(handler)
    root.setLevel(level)
    return handler


class CorrelationIdMiddleware:
    """ASGI middleware: each HTTP request runs under a correlation id (its sane
    X-Request-Id, else a new one), echoed in the response's X-Request-Id."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = None
        for name, value in scope.get("headers", []):
            if name.lower() == HEADER.encode():
                incoming = value.decode("latin-1")
                break
        with correlated(incoming) as chosen:

            async def send_with_id(message: Message) -> None:
                if message["type"] == "http.response.start":
                    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != HEADER.encode()]
                    message = {**message, "headers": [*headers, (HEADER.encode(), chosen.encode())]}
                await send(message)

            await self.app(scope, receive, send_with_id)
