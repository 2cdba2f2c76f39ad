"""OpenTelemetry traces from a tool call down to each SQL call.

`configure_tracing` builds a TracerProvider that exports over OTLP/HTTP only
when an endpoint is configured; without one there is no provider at all, so
nothing is recorded and nothing is sent. The provider is VERA's own, never
OpenTelemetry's global one: a process (or a test session) may build several,
and the global can be set only once.

SQL spans come from the client's executor, which knows no tracing library:
it takes an optional observer (`Tracing.sql_observer`), called with the
query's name around each call. Spans carry names, never parameters: a query
text or a key must not leave the process in a trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from vera_client.adapters.postgres.executor import SqlObserver

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True, slots=True, kw_only=True)
class TracingSettings:
    """endpoint: the OTLP/HTTP collector's base URL (as OTEL_EXPORTER_OTLP_ENDPOINT:
    "/v1/traces" is appended), or None for no tracing at all."""

    endpoint: str | None = None
    service_name: str = "vera-mcp"
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float = 10.0


class Tracing:
    """The tracer of one process, or none (every method then does nothing)."""

    def __init__(self, provider: TracerProvider | None) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer("vera_mcp") if provider is not None else None

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    @contextmanager
    def tool_span(self, tool: str) -> Iterator[Span]:
        """A span around one tool call (an exception escaping is recorded on it)."""
        if self._tracer is None:
            yield trace.INVALID_SPAN
            return
        with self._tracer.start_as_current_span(
            f"tool {tool}", kind=SpanKind.SERVER, attributes={"vera.tool": tool}
        ) as span:
            yield span

    def _sql_span(self, query_name: str) -> AbstractContextManager[object]:
        assert self._tracer is not None
        return self._tracer.start_as_current_span(
            f"sql {query_name}",
            kind=SpanKind.CLIENT,
            attributes={"db.system.name": "postgresql", "db.operation.name": query_name},
        )

    @property
    def sql_observer(self) -> SqlObserver | None:
        """What to pass as the executor's `observe` (None when tracing is off)."""
        return self._sql_span if self._tracer is not None else None

    def shutdown(self) -> None:
        """Flush the spans not yet exported and stop the exporter."""
        if self._provider is not None:
            self._provider.shutdown()


def mark_outcome(span: Span, outcome: str) -> None:
    """Record how a tool call ended on its span (a bounded word, see metrics.Outcome)."""
    span.set_attribute("vera.outcome", outcome)
    if outcome == "error":
        span.set_status(Status(StatusCode.ERROR))


def traces_url(endpoint: str) -> str:
    base = endpoint.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def configure_tracing(settings: TracingSettings) -> Tracing:
    """A Tracing that exports to settings.endpoint in batches, or a disabled one."""
    if not settings.endpoint:
        return Tracing(None)
    exporter = OTLPSpanExporter(
        endpoint=traces_url(settings.endpoint),
        headers=dict(settings.headers),
        timeout=settings.timeout_seconds,
    )
    return tracing_to(exporter, settings.service_name, batch=True)


def tracing_to(exporter: SpanExporter, service_name: str = "vera-mcp", *, batch: bool = False) -> Tracing:
    """A Tracing exporting to exporter (batch=False: each span as it ends, for tests)."""
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return Tracing(provider)
