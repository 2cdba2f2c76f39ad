"""The executor's observer on the real PostgreSQL: with the MCP server's
tracing, each SQL call of a tool is a child span of the tool's span, named by
the query and carrying no parameter; without tracing, calls run as before."""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World
from vera_client.adapters.postgres.executor import AsyncExecutor, Executor
from vera_client.api import access as access_api
from vera_client.api import search as search_api
from vera_client.domain.callers import ApiKey
from vera_client.domain.errors import AuthenticationError
from vera_mcp.adapters.tracing import TracingSettings, configure_tracing, tracing_to


def test_a_tool_span_has_a_child_span_per_sql_call(world: World) -> None:
    exporter = InMemorySpanExporter()
    tracing = tracing_to(exporter)
    executor = Executor.connect(world.db.dsn(APP_LOGIN), observe=tracing.sql_observer)
    try:
        with tracing.tool_span("whoami") as tool:
            memberships = executor.run(ApiKey(world.a.owner_key), access_api.whoami())
            with executor.transaction(ApiKey(world.a.owner_key)) as tx:
                tx.run(
                    search_api.search_call(
                        "runbook", vector=None, embedding_model=None, k=3, as_of=None, groups=None,
                        weights=None, lexical_weight=1.0, vector_weight=1.0, k_rrf=1, candidates=None,
                        ef_search=None,
                    )
                )  # fmt: skip
    finally:
        executor.close()
        tracing.shutdown()
    assert memberships
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["sql whoami", "sql search", "tool whoami"]
    for span in spans[:2]:
        assert span.parent is not None and span.parent.span_id == tool.get_span_context().span_id
    # names only: neither the query's words nor the key travel in a trace
    exported = json.dumps([dict(s.attributes or {}) for s in spans])
    assert "runbook" not in exported and world.a.owner_key not in exported


def test_an_async_executor_traces_too(world: World) -> None:
    exporter = InMemorySpanExporter()
    tracing = tracing_to(exporter)

    async def scenario() -> None:
        executor = await AsyncExecutor.connect(world.db.dsn(APP_LOGIN), observe=tracing.sql_observer)
        try:
            with tracing.tool_span("search"):
                await executor.run(ApiKey(world.a.owner_key), access_api.whoami())
        finally:
            await executor.close()

    asyncio.run(scenario())
    tracing.shutdown()
    assert [s.name for s in exporter.get_finished_spans()] == ["sql whoami", "tool search"]


def test_without_tracing_the_executor_runs_calls_unobserved(world: World) -> None:
    tracing = configure_tracing(TracingSettings(endpoint=None))
    executor = Executor.connect(world.db.dsn(APP_LOGIN), observe=tracing.sql_observer)
    try:
        assert executor.observe is None
        assert executor.run(ApiKey(world.a.owner_key), access_api.whoami())
        with pytest.raises(AuthenticationError):
            executor.run(ApiKey("vera_nope00_notakeyatall"), access_api.whoami())
    finally:
        executor.close()
