"""The tool-call wrapper: one span, the metrics and one JSON log line per call."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from vera_client.domain.errors import NotFoundError
from vera_mcp.adapters.logs import JsonFormatter, correlated
from vera_mcp.adapters.metrics import McpMetrics, Outcome
from vera_mcp.adapters.observability import ToolCallObserver
from vera_mcp.adapters.tracing import TracingSettings, configure_tracing, tracing_to
from vera_mcp.domain.access import QuotaExceededError, ToolClass


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("vera_mcp.tool_calls")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield stream
    logger.removeHandler(handler)


# the names a server would have registered (instrument() passes the real ones)
TOOLS = frozenset({"whoami", "search", "get_context", "get_fact", "review"})


def _calls(metrics: McpMetrics, tool: str, outcome: str) -> float | None:
    return metrics.registry.get_sample_value("vera_mcp_tool_calls_total", {"tool": tool, "outcome": outcome})


def test_each_call_is_a_span_a_count_and_a_line(log_lines: io.StringIO) -> None:
    exporter = InMemorySpanExporter()
    tracing = tracing_to(exporter)
    metrics = McpMetrics(tools=TOOLS)
    observer = ToolCallObserver(metrics, tracing)
    with correlated("corr-00000001"):
        with observer.tool_call("search"):
            observe = tracing.sql_observer
            assert observe is not None
            with observe("search"):
                pass
        with pytest.raises(QuotaExceededError), observer.tool_call("get_context"):
            raise QuotaExceededError(ToolClass.CONTEXT, "20/min", 5.0)
        with pytest.raises(NotFoundError), observer.tool_call("get_fact"):
            raise NotFoundError("no such fact")
        with pytest.raises(RuntimeError), observer.tool_call("a query passed as a tool name"):
            raise RuntimeError("a bug")
        with observer.tool_call("review") as call:
            call.outcome = Outcome.REFUSED_SCOPE
    tracing.shutdown()

    assert _calls(metrics, "search", "ok") == 1
    assert _calls(metrics, "get_context", "refused_quota") == 1
    assert _calls(metrics, "get_fact", "tool_error") == 1
    assert _calls(metrics, "other", "error") == 1
    assert _calls(metrics, "review", "refused_scope") == 1
    assert metrics.registry.get_sample_value("vera_mcp_quota_refusals_total", {"tool_class": "context"}) == 1

    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {
        "tool search",
        "sql search",
        "tool get_context",
        "tool get_fact",
        "tool other",
        "tool review",
    }
    assert spans["sql search"].parent is not None
    assert spans["sql search"].parent.span_id == spans["tool search"].context.span_id
    assert spans["tool get_fact"].attributes is not None
    assert spans["tool get_fact"].attributes["vera.outcome"] == "tool_error"

    lines = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    assert [(line["tool"], line["outcome"], line["level"]) for line in lines] == [
        ("search", "ok", "info"),
        ("get_context", "refused_quota", "info"),
        ("get_fact", "tool_error", "info"),
        ("other", "error", "warning"),
        ("review", "refused_scope", "info"),
    ]
    assert all(line["correlation_id"] == "corr-00000001" and line["duration_ms"] >= 0 for line in lines)
    assert all("trace_id" in line for line in lines)
    assert "RuntimeError: a bug" in lines[3]["error"]
    assert "a query passed" not in log_lines.getvalue()


def test_without_tracing_calls_are_still_counted_and_logged(log_lines: io.StringIO) -> None:
    metrics = McpMetrics(tools=TOOLS)
    observer = ToolCallObserver(metrics, configure_tracing(TracingSettings()))
    with observer.tool_call("whoami"):
        pass
    assert _calls(metrics, "whoami", "ok") == 1
    (line,) = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    assert "trace_id" not in line and line["tool"] == "whoami"
