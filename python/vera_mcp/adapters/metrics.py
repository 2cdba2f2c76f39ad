"""Prometheus metrics of the MCP server, on a registry of their own.

Every label takes its value from a set fixed when the metrics are built: the
names of the tools the server registered (adapters/instruments.py passes them, so
a new tool needs no list kept in step; anything else is counted as "other"), the
Outcome enum, tool classes, the HTTP routes the app serves, status codes. A
query, a principal, a key or a raw path never becomes a label, so a caller
cannot grow the number of series (nor read anything back from them).
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vera_client.domain.errors import VeraError
from vera_mcp.domain.access import QuotaExceededError, ToolClass

OTHER = "other"

DEFAULT_ROUTES = frozenset(
    {"/mcp", "/metrics", "/health/live", "/health/ready", "/.well-known/oauth-protected-resource"}
)
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_MAX_TOOLS = 200
# tool calls run from a millisecond (a cached whoami) to seconds (a context pack with reranking)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


AUTH_REFUSALS = ("refused", "remembered", "throttled")


class Outcome(enum.StrEnum):
    """How a tool call ended."""

    OK = "ok"
    TOOL_ERROR = "tool_error"  # the caller's mistake or a refusal by the SQL API: an isError result
    REFUSED_SCOPE = "refused_scope"  # the token lacks the tool's scope
    REFUSED_QUOTA = "refused_quota"
    ERROR = "error"  # a fault of the server (a bug, the database away)


class ErrorKind(enum.StrEnum):
    """What the errors counter counts."""

    TOOL = "tool"  # a tool call that ended in Outcome.ERROR
    HTTP = "http"  # an HTTP response with a 5xx status
    QUOTA_BACKEND = "quota_backend"  # Valkey failed; quotas were counted in process


def outcome_of(error: BaseException) -> Outcome:
    """The outcome of a call that raised error (see Outcome); scope refusals are
    told by the caller (ToolCallTimer.outcome), as their exception is the server's own."""
    if isinstance(error, QuotaExceededError):
        return Outcome.REFUSED_QUOTA
    if isinstance(error, VeraError):
        return Outcome.TOOL_ERROR
    return Outcome.ERROR


@dataclass(slots=True)
class ToolCallTimer:
    """What `McpMetrics.tool_call` yields: set `outcome` when a call ends without an
    exception but not OK (a tool error result, a scope refusal)."""

    outcome: Outcome = Outcome.OK


class McpMetrics:
    """The MCP server's metrics. `tools` and `routes` are the only label values
    allowed for tool names and HTTP routes; anything else is "other"."""

    def __init__(self, *, tools: Iterable[str], routes: Iterable[str] = DEFAULT_ROUTES) -> None:
        self.tools = frozenset(tools)
        bad = sorted(name for name in self.tools if not _NAME.match(name))
        if bad or len(self.tools) > _MAX_TOOLS:
            raise ValueError(f"tool names must be lower_snake words, at most {_MAX_TOOLS}: {bad}")
        self.routes = frozenset(routes)
        # a route with ids in its path ("/v1/facts/{fact_id}") is labelled by its template, never by
        # the path asked (one series per id would grow without bound)
        self._templates = [
            (re.compile("^" + re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(route)) + "$"), route)
            for route in sorted(self.routes)
            if "{" in route
        ]
        self.registry = CollectorRegistry(auto_describe=True)
        self._calls = Counter(
            "vera_mcp_tool_calls",
            "Tool calls by tool and outcome.",
            ("tool", "outcome"),
            registry=self.registry,
        )
        self._latency = Histogram(
            "vera_mcp_tool_call_seconds",
            "Tool call latency by tool and outcome.",
            ("tool", "outcome"),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._refusals = Counter(
            "vera_mcp_quota_refusals", "Calls refused by a quota, by tool class.", ("tool_class",),
            registry=self.registry,
        )  # fmt: skip
        self._http = Counter(
            "vera_mcp_http_requests", "HTTP requests by route and status.", ("route", "status"),
            registry=self.registry,
        )  # fmt: skip
        self._errors = Counter("vera_mcp_errors", "Errors by kind.", ("kind",), registry=self.registry)
        self._auth_refusals = Counter(
            "vera_mcp_auth_refusals",
            "Bearer tokens refused: refused (checked and wrong), remembered (refused again from the "
            "negative cache), throttled (429: too many failures from the address or key prefix).",
            ("reason",),
            registry=self.registry,
        )
        for reason in AUTH_REFUSALS:
            self._auth_refusals.labels(reason)
        # the refusal and error series exist from the start: an alert on a rate needs its zero
        for tool_class in ToolClass:
            self._refusals.labels(tool_class.value)
        for kind in ErrorKind:
            self._errors.labels(kind.value)

    def tool_label(self, tool: str) -> str:
        return tool if tool in self.tools else OTHER

    def route_label(self, path: str) -> str:
        if path in self.routes:
            return path
        for pattern, template in self._templates:
            if pattern.match(path):
                return template
        return OTHER

    def observe_tool_call(self, tool: str, outcome: Outcome, seconds: float) -> None:
        """Count one tool call and its latency."""
        outcome = Outcome(outcome)  # a stray string fails here, not as a new label value
        labels = (self.tool_label(tool), outcome.value)
        self._calls.labels(*labels).inc()
        self._latency.labels(*labels).observe(max(0.0, seconds))
        if outcome is Outcome.ERROR:
            self.count_error(ErrorKind.TOOL)

    def observe_quota_refusal(self, tool_class: ToolClass) -> None:
        self._refusals.labels(ToolClass(tool_class).value).inc()

    def observe_auth_refusal(self, reason: str) -> None:
        """One bearer token refused (ChainedTokenVerifier.on_refusal)."""
        self._auth_refusals.labels(reason if reason in AUTH_REFUSALS else OTHER).inc()

    def observe_http_request(self, path: str, status: int) -> None:
        code = str(status) if 100 <= status <= 599 else OTHER
        self._http.labels(self.route_label(path), code).inc()
        if status >= 500:
            self.count_error(ErrorKind.HTTP)

    def count_error(self, kind: ErrorKind) -> None:
        self._errors.labels(ErrorKind(kind).value).inc()

    def quota_backend_failed(self, _error: Exception) -> None:
        """ValkeyQuotaLedger's on_backend_error."""
        self.count_error(ErrorKind.QUOTA_BACKEND)

    @contextmanager
    def tool_call(
        self, tool: str, *, classify: Callable[[BaseException], Outcome] = outcome_of
    ) -> Iterator[ToolCallTimer]:
        """Time the block as a call of tool; its outcome is classify(exception) when
        one escapes (re-raised), else what the block set on the timer."""
        timer = ToolCallTimer()
        started = time.perf_counter()
        try:
            yield timer
        except BaseException as error:
            timer.outcome = classify(error)
            if isinstance(error, QuotaExceededError):
                self.observe_quota_refusal(error.tool_class)
            raise
        finally:
            self.observe_tool_call(tool, timer.outcome, time.perf_counter() - started)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)

    async def endpoint(self, _request: Request) -> Response:
        return Response(self.exposition(), media_type=CONTENT_TYPE_LATEST)

    def route(self, path: str = "/metrics") -> Route:
        """The Starlette route that serves the metrics."""
        return Route(path, self.endpoint, methods=["GET"], name="metrics")


class HttpMetricsMiddleware:
    """ASGI middleware counting every HTTP response by route and status."""

    def __init__(self, app: ASGIApp, metrics: McpMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # what the client gets when the app raises before it answers

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            self.metrics.observe_http_request(str(scope.get("path", "")), status)
