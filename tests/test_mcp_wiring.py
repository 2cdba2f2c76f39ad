"""How `vera mcp serve` is put together, without a database: nested settings
from the environment, the verifiers and quota ledger chosen from them, and the
outcome every kind of tool call is counted under."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

import httpx
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vera_client.client import AsyncVeraClient
from vera_client.config import CacheSettings, DbSettings, VeraSettings
from vera_client.domain.callers import ApiKey
from vera_client.domain.errors import ConfigurationError, DatabaseUnavailableError, PermissionDeniedError
from vera_mcp.adapters.api_keys import ApiKeyVerification
from vera_mcp.adapters.http_app import DatabaseUnavailableMiddleware
from vera_mcp.adapters.instruments import instrument
from vera_mcp.adapters.logs import correlated
from vera_mcp.adapters.metrics import McpMetrics
from vera_mcp.adapters.observability import ToolCallObserver
from vera_mcp.adapters.oidc import OidcVerifier
from vera_mcp.adapters.quotas import InProcessQuotaLedger, ValkeyQuotaLedger
from vera_mcp.adapters.runner import ToolCall, ToolRunner
from vera_mcp.adapters.tools import build_mcp_server
from vera_mcp.adapters.tracing import Tracing
from vera_mcp.config import McpSettings, read_settings
from vera_mcp.domain.access import QuotaExceededError, Scope, ToolClass, VerifiedCaller
from vera_mcp.domain.oidc import OidcSettings
from vera_mcp.entrypoints.wiring import close_ledger, close_verifiers, default_verifiers, quota_ledger

KEY = "vera_0123456789ab_" + "s" * 43
READER = VerifiedCaller(caller=ApiKey(KEY), principal_id="p-ada", scopes=frozenset({Scope.READ}), via="oidc",
                        organisations=frozenset())  # fmt: skip
OIDC = {"issuer": "https://login.example.com/realm", "audience": "https://vera.example.com/mcp",
        "jwks_url": "https://login.example.com/realm/jwks.json"}  # fmt: skip


def no_pool_client() -> AsyncVeraClient:
    # no pool is opened: nothing here reaches the database
    return AsyncVeraClient(executor=None, caller=None, providers=None)  # type: ignore[arg-type]


def test_nested_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_MCP_OIDC__ISSUER", OIDC["issuer"])
    monkeypatch.setenv("VERA_MCP_OIDC__AUDIENCE", OIDC["audience"])
    monkeypatch.setenv("VERA_MCP_OIDC__JWKS_URL", OIDC["jwks_url"])
    monkeypatch.setenv(
        "VERA_MCP_OIDC__CLAIM_MAPPING",
        '[{"claim": "groups", "value": "eng", "group_id": "w:9b1c2d3e4f5a6b7c", "role": "viewer"}]',
    )
    monkeypatch.setenv("VERA_MCP_QUOTAS__READ", "3/min")
    monkeypatch.setenv("VERA_MCP_LOG_LEVEL", "debug")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    monkeypatch.setenv("VERA_DB__GATEWAY_DSN", "postgresql://vera_gateway@db.internal/vera")
    settings, vera = read_settings(port=9000)
    assert settings.oidc is not None and settings.oidc.claim_mapping[0].group_id == "w:9b1c2d3e4f5a6b7c"
    limits = settings.quotas.limits()
    assert str(limits.rate(ToolClass.READ)) == "3/min" and str(limits.rate(ToolClass.SNAPSHOT)) == "10/hour"
    assert (settings.log_level, settings.otlp_endpoint, settings.port) == (
        "debug",
        "http://collector:4318",
        9000,
    )
    assert vera.db.gateway_dsn == "postgresql://vera_gateway@db.internal/vera"


@pytest.mark.parametrize(
    ("name", "value", "named"),
    [
        ("VERA_MCP_QUOTAS__CONTEXT", "20 per minute", "VERA_MCP_QUOTAS__CONTEXT: bad quota"),
        ("VERA_MCP_OIDC__ISSUER", "https://login.example.com", "VERA_MCP_OIDC__AUDIENCE: Field required"),
        ("VERA_MCP_PORT", "0", "VERA_MCP_PORT: Input should be greater than or equal to 1"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "OTEL_EXPORTER_OTLP_ENDPOINT: must be an http"),
        ("VERA_DB__GATEWAY_DSN", "vera_gateway@db", "VERA_DB__GATEWAY_DSN: must be a postgresql:// URL"),
    ],
)
def test_a_bad_setting_is_one_line_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, named: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError) as raised:
        read_settings()
    message = str(raised.value)
    assert message.startswith(f"invalid setting {named}") and "\n" not in message


def test_the_gateway_dsn_is_checked_like_the_others() -> None:
    assert DbSettings(gateway_dsn="host=db user=vera_gateway").gateway_dsn == "host=db user=vera_gateway"
    assert DbSettings(gateway_dsn=" ").gateway_dsn is None


def test_oidc_tokens_are_verified_after_api_keys_only_when_configured() -> None:
    client = no_pool_client()
    assert [type(v) for v in default_verifiers(client, McpSettings())] == [ApiKeyVerification]
    verifiers = default_verifiers(client, McpSettings(oidc=OidcSettings(**OIDC)))
    assert [type(v) for v in verifiers] == [ApiKeyVerification, OidcVerifier]
    asyncio.run(close_verifiers(verifiers))


def test_quotas_count_in_valkey_when_the_cache_has_one_else_in_process() -> None:
    metrics = McpMetrics(tools=())
    settings = McpSettings(quotas={"feedback": "7/min"})
    local = quota_ledger(settings, VeraSettings())(metrics)
    assert isinstance(local, InProcessQuotaLedger)
    shared = quota_ledger(settings, VeraSettings(cache=CacheSettings(valkey_url="valkey://127.0.0.1:1/0")))(
        metrics
    )
    assert isinstance(shared, ValkeyQuotaLedger)
    asyncio.run(close_ledger(shared))


class Refusing:
    async def take(
        self, principal_id: str, tool_class: ToolClass, organisations: Collection[str] = ()
    ) -> None:
        raise QuotaExceededError(tool_class, "3/min", 12.0)


async def ok(_call: ToolCall) -> str:
    return "ok"


async def refused_by_sql(_call: ToolCall) -> str:
    raise PermissionDeniedError("only admins may")


async def refused_by_the_tool(_call: ToolCall) -> str:
    raise ToolError("a snapshot search names exactly one scope")


async def crashes(_call: ToolCall) -> str:
    raise RuntimeError("secret detail")


@pytest.mark.parametrize(
    ("work", "scope", "ledger", "outcome"),
    [
        (ok, Scope.READ, None, "ok"),
        (refused_by_sql, Scope.READ, None, "tool_error"),
        (refused_by_the_tool, Scope.READ, None, "tool_error"),
        (crashes, Scope.READ, None, "error"),
        (ok, Scope.FEEDBACK, None, "refused_scope"),
        (ok, Scope.READ, Refusing(), "refused_quota"),
    ],
)
def test_each_tool_call_is_counted_under_its_outcome(
    work: Any, scope: Scope, ledger: Any, outcome: str
) -> None:
    metrics = McpMetrics(tools=["search"])
    runner = ToolRunner(
        no_pool_client(),
        server_version="test",
        fixed_caller=READER,
        ledger=ledger,
        observer=ToolCallObserver(metrics, Tracing(None)),
    )
    try:
        asyncio.run(runner.run_tool(None, "search", ToolClass.READ, scope, work))
    except ToolError:
        assert outcome != "ok"
    scrape = metrics.exposition().decode()
    assert f'vera_mcp_tool_calls_total{{outcome="{outcome}",tool="search"}} 1.0' in scrape
    refusals = 'vera_mcp_quota_refusals_total{tool_class="read"} 1.0' in scrape
    assert refusals == (outcome == "refused_quota")


def test_arguments_refused_before_run_tool_count_as_a_tool_error() -> None:
    metrics = McpMetrics(tools=["search"])
    runner = ToolRunner(
        no_pool_client(), server_version="test", observer=ToolCallObserver(metrics, Tracing(None))
    )
    runner.invalid_arguments("search")
    assert (
        'vera_mcp_tool_calls_total{outcome="tool_error",tool="search"} 1.0' in metrics.exposition().decode()
    )


def test_the_metrics_name_every_tool_the_server_registered_and_no_other() -> None:
    runner = ToolRunner(no_pool_client(), server_version="test")
    server = build_mcp_server(runner)
    metrics = asyncio.run(instrument(server, runner, tracing=Tracing(None)))
    registered = {tool.name for tool in asyncio.run(server.list_tools())}
    assert metrics.tools == registered and {"search", "get_evidence", "remember"} <= registered
    assert runner.observer.metrics is metrics


def test_an_internal_error_names_the_requests_correlation_id() -> None:
    runner = ToolRunner(no_pool_client(), server_version="test", fixed_caller=READER)

    async def scenario() -> None:
        with correlated("req-7f3a9c2e5b1d"):
            await runner.run_tool(None, "search", ToolClass.READ, Scope.READ, crashes)

    with pytest.raises(ToolError) as raised:
        asyncio.run(scenario())
    assert str(raised.value) == "internal error in search (correlation id req-7f3a9c2e5b1d)"


def test_a_database_out_of_reach_is_a_503_to_retry_not_a_500() -> None:
    async def needs_the_database(_request: Request) -> Response:
        raise DatabaseUnavailableError("cannot connect to postgresql://…@db/vera within 3s")

    app = Starlette(routes=[Route("/mcp", needs_the_database, methods=["POST"])])
    app.add_middleware(DatabaseUnavailableMiddleware)

    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1") as http:
            return await http.post("/mcp", json={})

    answer = asyncio.run(scenario())
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    assert answer.json()["error"] == "temporarily_unavailable" and "postgresql" not in answer.text
