"""Traces: spans for tool calls with SQL calls as their children, exported
over OTLP/HTTP to a real local receiver only when an endpoint is configured.
(pg_tests/client/test_sql_spans.py runs the same through the executor on the real
PostgreSQL.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from vera_mcp.adapters.tracing import TracingSettings, configure_tracing, mark_outcome, traces_url, tracing_to


@dataclass
class Receiver:
    """What a local OTLP/HTTP receiver was sent."""

    url: str
    requests: list[tuple[str, str, bytes]] = field(default_factory=list)

    def span_names(self) -> list[str]:
        names = []
        for path, _, body in self.requests:
            assert path == "/v1/traces"
            export = ExportTraceServiceRequest.FromString(body)
            for resource in export.resource_spans:
                for scope in resource.scope_spans:
                    names += [span.name for span in scope.spans]
        return names


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    received = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            received.requests.append((self.path, self.headers.get("content-type", ""), body))
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    received.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()


def test_with_an_endpoint_spans_are_exported_over_otlp_http(receiver: Receiver) -> None:
    tracing = configure_tracing(TracingSettings(endpoint=receiver.url, service_name="vera-mcp-test"))
    assert tracing.enabled and tracing.sql_observer is not None
    with tracing.tool_span("search"), tracing.sql_observer("search"):
        pass
    tracing.shutdown()  # flushes the batch
    assert sorted(receiver.span_names()) == ["sql search", "tool search"]
    assert all(content_type == "application/x-protobuf" for _, content_type, _ in receiver.requests)
    export = ExportTraceServiceRequest.FromString(receiver.requests[0][2])
    service = {a.key: a.value.string_value for a in export.resource_spans[0].resource.attributes}
    assert service["service.name"] == "vera-mcp-test"


def test_without_an_endpoint_nothing_is_recorded_or_sent(receiver: Receiver) -> None:
    tracing = configure_tracing(TracingSettings(endpoint=None))
    assert not tracing.enabled
    assert tracing.sql_observer is None  # the executor runs SQL with nothing around it
    with tracing.tool_span("search") as span:
        assert not span.is_recording()
        assert not trace.get_current_span().get_span_context().is_valid
    tracing.shutdown()
    assert receiver.requests == []
    assert not configure_tracing(TracingSettings(endpoint="")).enabled


def test_a_sql_span_is_a_child_of_its_tool_span() -> None:
    exporter = InMemorySpanExporter()
    tracing = tracing_to(exporter)
    observe = tracing.sql_observer
    assert observe is not None
    with tracing.tool_span("get_context") as tool:
        with observe("search"):
            pass
        with observe("record_feedback"):
            pass
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"tool get_context", "sql search", "sql record_feedback"}
    for name in ("sql search", "sql record_feedback"):
        child = spans[name]
        assert child.parent is not None and child.parent.span_id == tool.get_span_context().span_id
        assert child.context.trace_id == tool.get_span_context().trace_id
        assert child.kind is trace.SpanKind.CLIENT
        assert child.attributes is not None
        assert dict(child.attributes) == {"db.system.name": "postgresql", "db.operation.name": name[4:]}
    assert spans["tool get_context"].parent is None
    tracing.shutdown()


def test_an_exception_is_recorded_on_the_spans_and_the_outcome_marked() -> None:
    exporter = InMemorySpanExporter()
    tracing = tracing_to(exporter)
    observe = tracing.sql_observer
    assert observe is not None
    with pytest.raises(RuntimeError), tracing.tool_span("propose"), observe("publish_claims"):
        raise RuntimeError("database away")
    with tracing.tool_span("search") as span:
        mark_outcome(span, "tool_error")
    spans = {span.name: span for span in exporter.get_finished_spans()}
    for name in ("tool propose", "sql publish_claims"):
        assert spans[name].status.status_code is StatusCode.ERROR
        assert [event.name for event in spans[name].events] == ["exception"]
    assert spans["tool search"].attributes is not None
    assert spans["tool search"].attributes["vera.outcome"] == "tool_error"
    tracing.shutdown()


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://collector:4318", "http://collector:4318/v1/traces"),
        ("http://collector:4318/", "http://collector:4318/v1/traces"),
        ("http://collector:4318/v1/traces", "http://collector:4318/v1/traces"),
    ],
)
def test_the_endpoint_is_a_base_url_like_otel_exporter_otlp_endpoint(endpoint: str, url: str) -> None:
    assert traces_url(endpoint) == url
