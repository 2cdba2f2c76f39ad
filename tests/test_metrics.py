"""The MCP server's metrics, scraped from /metrics through a Starlette app."""

from __future__ import annotations

import uuid

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from vera_client.domain.errors import InvalidArgumentError, NotFoundError
from vera_mcp.adapters.metrics import AUTH_REFUSALS, OTHER, HttpMetricsMiddleware, McpMetrics, Outcome
from vera_mcp.domain.access import QuotaExceededError, ToolClass

# the names a server would have registered (instrument() passes the real ones)
TOOLS = frozenset({"search", "get_fact", "get_context", "propose", "review"})


def _app(metrics: McpMetrics) -> Starlette:
    async def mcp(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def boom(_request: Request) -> PlainTextResponse:
        raise RuntimeError("a bug")

    return Starlette(
        routes=[metrics.route(), Route("/mcp", mcp, methods=["GET", "POST"]), Route("/health/ready", boom)],
        middleware=[Middleware(HttpMetricsMiddleware, metrics=metrics)],
    )


def _scrape(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _label_values(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], label: str) -> set[str]:
    return {value for (_, labels) in samples for name, value in labels if name == label}


def test_tool_calls_are_counted_and_timed_by_tool_and_outcome() -> None:
    metrics = McpMetrics(tools=TOOLS)
    metrics.observe_tool_call("search", Outcome.OK, 0.004)
    metrics.observe_tool_call("search", Outcome.OK, 0.2)
    metrics.observe_tool_call("search", Outcome.TOOL_ERROR, 0.001)
    with TestClient(_app(metrics)) as client:
        samples = _scrape(client)
    assert _value(samples, "vera_mcp_tool_calls_total", tool="search", outcome="ok") == 2
    assert _value(samples, "vera_mcp_tool_calls_total", tool="search", outcome="tool_error") == 1
    assert _value(samples, "vera_mcp_tool_call_seconds_count", tool="search", outcome="ok") == 2
    assert _value(samples, "vera_mcp_tool_call_seconds_sum", tool="search", outcome="ok") == pytest.approx(
        0.204
    )
    assert _value(samples, "vera_mcp_tool_call_seconds_bucket", tool="search", outcome="ok", le="0.005") == 1
    # the refusal and error series exist before anything was refused: alerts need their zero
    assert ("vera_mcp_quota_refusals_total", frozenset({("tool_class", "snapshot")})) in samples
    assert ("vera_mcp_errors_total", frozenset({("kind", "quota_backend")})) in samples


def test_the_context_manager_records_the_outcome_from_the_exception() -> None:
    metrics = McpMetrics(tools=TOOLS)
    with metrics.tool_call("get_fact"):
        pass
    with pytest.raises(NotFoundError), metrics.tool_call("get_fact"):
        raise NotFoundError("no such fact")
    with pytest.raises(QuotaExceededError), metrics.tool_call("get_context"):
        raise QuotaExceededError(ToolClass.CONTEXT, "20/min", 3.0)
    with pytest.raises(RuntimeError), metrics.tool_call("propose"):
        raise RuntimeError("a bug")
    with metrics.tool_call("review") as call:
        call.outcome = Outcome.REFUSED_SCOPE
    with TestClient(_app(metrics)) as client:
        samples = _scrape(client)
    calls = "vera_mcp_tool_calls_total"
    assert _value(samples, calls, tool="get_fact", outcome="ok") == 1
    assert _value(samples, calls, tool="get_fact", outcome="tool_error") == 1
    assert _value(samples, calls, tool="get_context", outcome="refused_quota") == 1
    assert _value(samples, calls, tool="propose", outcome="error") == 1
    assert _value(samples, calls, tool="review", outcome="refused_scope") == 1
    assert _value(samples, "vera_mcp_quota_refusals_total", tool_class="context") == 1
    assert _value(samples, "vera_mcp_quota_refusals_total", tool_class="read") == 0
    assert _value(samples, "vera_mcp_errors_total", kind="tool") == 1


def test_labels_stay_bounded_whatever_callers_send() -> None:
    metrics = McpMetrics(tools=TOOLS)
    # a caller choosing tool names (or a bug passing a query as one) adds no series
    for _ in range(500):
        metrics.observe_tool_call(f"search {uuid.uuid4()}", Outcome.OK, 0.01)
    metrics.observe_tool_call("search", Outcome.OK, 0.01)
    with TestClient(_app(metrics)) as client:
        for _ in range(50):
            assert client.get(f"/mcp/{uuid.uuid4()}").status_code == 404
        samples = _scrape(client)
    assert _label_values(samples, "tool") == {"search", OTHER}
    assert _value(samples, "vera_mcp_tool_calls_total", tool=OTHER, outcome="ok") == 500
    assert _label_values(samples, "route") <= {*metrics.routes, OTHER}
    assert _value(samples, "vera_mcp_http_requests_total", route=OTHER, status="404") == 50
    assert _label_values(samples, "outcome") <= {o.value for o in Outcome}
    assert _label_values(samples, "reason") <= set(AUTH_REFUSALS)
    # nothing that is not a label we chose
    assert {name for (_, labels) in samples for name, _ in labels} <= {
        "tool", "outcome", "tool_class", "route", "status", "kind", "le", "reason",
    }  # fmt: skip


def test_http_requests_are_counted_by_route_and_status_and_5xx_are_errors() -> None:
    metrics = McpMetrics(tools=TOOLS)
    with TestClient(_app(metrics), raise_server_exceptions=False) as client:
        assert client.post("/mcp").status_code == 200
        assert client.get("/health/ready").status_code == 500
        client.get("/metrics")
        samples = _scrape(client)
    http = "vera_mcp_http_requests_total"
    assert _value(samples, http, route="/mcp", status="200") == 1
    assert _value(samples, http, route="/health/ready", status="500") == 1
    # the scrape being answered is counted once it is done
    assert _value(samples, http, route="/metrics", status="200") == 1
    assert _value(samples, "vera_mcp_errors_total", kind="http") == 1


def test_the_registry_is_its_own() -> None:
    one, two = McpMetrics(tools=TOOLS), McpMetrics(tools=TOOLS)  # two in one process do not collide
    one.observe_tool_call("search", Outcome.OK, 0.1)
    assert (
        one.registry.get_sample_value("vera_mcp_tool_calls_total", {"tool": "search", "outcome": "ok"}) == 1
    )
    assert (
        two.registry.get_sample_value("vera_mcp_tool_calls_total", {"tool": "search", "outcome": "ok"})
        is None
    )
    assert prometheus_client.REGISTRY.get_sample_value("vera_mcp_errors_total", {"kind": "tool"}) is None


def test_the_server_can_name_its_tools_and_bad_names_or_outcomes_are_refused() -> None:
    metrics = McpMetrics(tools={"search", "my_tool"})
    metrics.observe_tool_call("my_tool", Outcome.OK, 0.1)
    metrics.observe_tool_call("whoami", Outcome.OK, 0.1)  # a tool of VERA's, not registered here
    assert (
        metrics.registry.get_sample_value("vera_mcp_tool_calls_total", {"tool": OTHER, "outcome": "ok"}) == 1
    )
    with pytest.raises(ValueError, match="lower_snake"):
        McpMetrics(tools={"Search Everything"})
    with pytest.raises(ValueError, match="not a valid Outcome"):
        metrics.observe_tool_call("search", "fine", 0.1)  # type: ignore[arg-type]


def test_the_quota_ledger_reports_backend_errors_here() -> None:
    metrics = McpMetrics(tools=TOOLS)
    metrics.quota_backend_failed(ConnectionError("refused"))
    assert metrics.registry.get_sample_value("vera_mcp_errors_total", {"kind": "quota_backend"}) == 1


def test_an_invalid_argument_is_a_tool_error_not_a_server_error() -> None:
    metrics = McpMetrics(tools=TOOLS)
    with pytest.raises(InvalidArgumentError), metrics.tool_call("search"):
        raise InvalidArgumentError("k must be 1..50")
    assert metrics.registry.get_sample_value("vera_mcp_errors_total", {"kind": "tool"}) == 0
