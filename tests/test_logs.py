"""JSON log lines and the correlation id of HTTP requests."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from vera_mcp.adapters.logs import (
    CorrelationIdMiddleware,
    JsonFormatter,
    configure_json_logging,
    correlated,
    correlation_id,
    sane_request_id,
)
from vera_mcp.adapters.tracing import tracing_to

GENERATED = re.compile(r"^[0-9a-f]{32}$")


@pytest.fixture
def lines() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger(f"vera_mcp.test_logs.{id(stream)}")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def _records(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_line_is_one_json_object_with_the_fields(lines: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = lines
    with correlated("req-12345678"):
        logger.info("tool call\nended", extra={"tool": "search", "outcome": "ok", "duration_ms": 4.2})
    logger.warning("no request here")
    first, second = _records(stream)
    assert first["message"] == "tool call\nended"  # a newline in a message does not split the line
    assert first["level"] == "info" and first["logger"] == logger.name
    assert first["correlation_id"] == "req-12345678"
    assert (first["tool"], first["outcome"], first["duration_ms"]) == ("search", "ok", 4.2)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$", first["time"])
    assert "trace_id" not in first
    assert second["correlation_id"] is None and "tool" not in second


def test_secrets_stay_out_of_info_lines(lines: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = lines
    key = "vera_0123456789ab_s3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3c"
    logger.info("rejected Bearer eyJhbGciOi.abc.def from %s, key %s (vera_mcp_tool_calls)", "10.0.0.1", key,
                extra={"query": "who owns ledger-db?", "token": "eyJ", "tool": "search"})  # fmt: skip
    logger.debug("debugging", extra={"query": "who owns ledger-db?"})
    info, debug = _records(stream)
    text = json.dumps(info)
    assert "eyJ" not in text and "s3cr3t" not in text and "ledger-db" not in text
    assert "Bearer ***" in info["message"] and "vera_***" in info["message"]
    assert "(vera_mcp_tool_calls)" in info["message"]  # names that look like keys stay readable
    assert info["tool"] == "search"
    # at debug level an operator chose to see them
    assert debug["query"] == "who owns ledger-db?"


def test_the_trace_id_is_in_lines_written_inside_a_span(lines: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = lines
    exporter = InMemorySpanExporter()
    tracing = tracing_to(exporter)
    with tracing.tool_span("search") as span:
        logger.info("inside")
    (line,) = _records(stream)
    assert line["trace_id"] == format(span.get_span_context().trace_id, "032x")
    assert line["span_id"] == format(span.get_span_context().span_id, "016x")
    tracing.shutdown()


@pytest.mark.parametrize(
    ("incoming", "kept"),
    [
        ("0f8fad5b-d9cb-469f-a165-70867728950e", True),
        ("req.2026:abc_DEF-1", True),
        ("short", False),
        ("x" * 129, False),
        ("has space in it", False),
        ("line\nbreak-injected", False),
        ("trailing-newline\n", False),
        ('"><script>', False),
        (None, False),
    ],
)
def test_a_request_id_is_kept_only_when_sane(incoming: str | None, kept: bool) -> None:
    assert (sane_request_id(incoming) is not None) is kept
    with correlated(incoming) as chosen:
        assert correlation_id() == chosen
        assert chosen == incoming if kept else GENERATED.match(chosen)
    assert correlation_id() is None


def _app() -> Starlette:
    async def echo(_request: Request) -> JSONResponse:
        await asyncio.sleep(0.01)  # let concurrent requests interleave
        logging.getLogger("vera_mcp.test_logs.app").info("handled")
        return JSONResponse({"seen": correlation_id()})

    return Starlette(routes=[Route("/mcp", echo)], middleware=[Middleware(CorrelationIdMiddleware)])


def test_the_middleware_takes_a_sane_id_and_echoes_it() -> None:
    with TestClient(_app()) as client:
        response = client.get("/mcp", headers={"X-Request-Id": "gateway-req-0001"})
        assert response.json() == {"seen": "gateway-req-0001"}
        assert response.headers["x-request-id"] == "gateway-req-0001"

        forged = client.get("/mcp", headers={"X-Request-Id": "bad id\twith tab"})
        assert GENERATED.match(forged.headers["x-request-id"])
        assert forged.json() == {"seen": forged.headers["x-request-id"]}

        fresh = [client.get("/mcp").headers["x-request-id"] for _ in range(3)]
        assert len(set(fresh)) == 3 and all(GENERATED.match(i) for i in fresh)


def test_concurrent_requests_keep_their_own_ids() -> None:
    async def scenario() -> list[tuple[str, str]]:
        transport = httpx.ASGITransport(app=_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            ids = [f"concurrent-{n:04d}" for n in range(20)]
            responses = await asyncio.gather(*(client.get("/mcp", headers={"X-Request-Id": i}) for i in ids))
        return [(i, r.json()["seen"]) for i, r in zip(ids, responses, strict=True)]

    for sent, seen in asyncio.run(scenario()):
        assert sent == seen


def test_configure_json_logging_writes_json_lines_once() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    try:
        configure_json_logging(logging.INFO, stream)
        configure_json_logging(logging.INFO, stream)  # configuring again does not double the lines
        with correlated("configure-0001"):
            logging.getLogger("vera_mcp.somewhere").info("hello")
        logging.getLogger("vera_mcp.somewhere").debug("not at info")
    finally:
        root.handlers, _ = before
        root.setLevel(before[1])
    (line,) = _records(stream)
    assert line["message"] == "hello" and line["correlation_id"] == "configure-0001"
