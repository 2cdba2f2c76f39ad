"""The composition root of the MCP server: settings in, a running server out.

The server's pool logs in as the gateway role (vera_gateway): it runs the SQL
API like an application and may also vouch for principals it verified itself
(OIDC), which an application login may not. On the embedded server that role
is reached over the Unix socket as the demo's roles are; on an external
PostgreSQL, VERA_DB__GATEWAY_DSN names its login.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from importlib import metadata

from starlette.applications import Starlette

from vera_client.bootstrap import Database, build_database, build_providers
from vera_client.client import AsyncVeraClient
from vera_client.config import VeraSettings
from vera_client.distribution import DISTRIBUTION
from vera_client.domain.errors import AuthenticationError, ConfigurationError
from vera_mcp.adapters.api_keys import ApiKeyVerification
from vera_mcp.adapters.http_app import build_api_app, build_http_app, serve_http
from vera_mcp.adapters.instruments import LedgerFactory
from vera_mcp.adapters.metrics import McpMetrics
from vera_mcp.adapters.oidc import OidcVerifier, oidc_verifier
from vera_mcp.adapters.quotas import InProcessQuotaLedger, ValkeyQuotaLedger
from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.stdio import serve_stdio
from vera_mcp.adapters.tracing import Tracing, TracingSettings, configure_tracing
from vera_mcp.config import McpSettings
from vera_mcp.domain.ports import QuotaLedger, TokenVerification

GATEWAY_ROLE = "vera_gateway"


def server_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree without the package installed
        return "unknown"


def gateway_dsn(database: Database) -> str:
    """The DSN of the gateway login the server's pool uses."""
    if database.server is not None:
        return database.server.url(GATEWAY_ROLE)
    if database.settings.db.gateway_dsn:
        return database.settings.db.gateway_dsn
    raise ConfigurationError(
        "the MCP server logs in as the vera_gateway role: set VERA_DB__GATEWAY_DSN to its DSN "
        "(an application login cannot vouch for OAuth principals)"
    )


async def connect_client(vera: VeraSettings, tracing: Tracing | None = None) -> AsyncVeraClient:
    """One client (one pool) for every caller of this process; the embedded server is started if
    used. With tracing on, each SQL call is a span under the tool call's."""
    database = build_database(vera)
    dsn = gateway_dsn(database)  # before starting anything: a missing DSN is a configuration error
    if database.server is not None:
        await asyncio.to_thread(database.server.start)
    return await AsyncVeraClient.connect(
        dsn,
        providers=build_providers(vera),
        pool=vera.pool,
        connect_timeout=vera.db.connect_timeout,
        observe=tracing.sql_observer if tracing is not None else None,
    )


def tracing_for(settings: McpSettings) -> Tracing:
    """Traces exported to OTEL_EXPORTER_OTLP_ENDPOINT, or none at all without it."""
    return configure_tracing(TracingSettings(endpoint=settings.otlp_endpoint))


# The token verifiers of the HTTP transport, in order: the first that recognises a token decides.
Verifiers = Callable[[AsyncVeraClient, McpSettings], Sequence[TokenVerification]]


def default_verifiers(client: AsyncVeraClient, settings: McpSettings) -> Sequence[TokenVerification]:
    """API keys, then OIDC access tokens when configured (their subjects are provisioned through
    the gateway's own pool: only vera_gateway may vouch for a principal)."""
    verifiers: list[TokenVerification] = [ApiKeyVerification(client, cache_seconds=settings.api_key_cache_s)]
    if settings.oidc is not None:
        verifiers.append(oidc_verifier(settings.oidc, client.executor))
    return verifiers


async def close_verifiers(verifiers: Sequence[TokenVerification]) -> None:
    """Release what verifiers hold (the OIDC verifier's HTTP client of the JWKS)."""
    for verifier in verifiers:
        if isinstance(verifier, OidcVerifier):
            await verifier.aclose()


def quota_ledger(settings: McpSettings, vera: VeraSettings) -> LedgerFactory:
    """The quota ledger: in Valkey when VERA_CACHE__VALKEY_URL is set (shared by every instance;
    its failures counted by the metrics), else in this process."""

    def build(metrics: McpMetrics) -> QuotaLedger:
        limits = settings.quotas.limits()
        if vera.cache.valkey_url:
            return ValkeyQuotaLedger(
                vera.cache.valkey_url,
                limits,
                key_prefix=settings.quotas.key_prefix,
                on_backend_error=metrics.quota_backend_failed,
            )
        return InProcessQuotaLedger(limits)

    return build


async def close_ledger(ledger: QuotaLedger | None) -> None:
    if isinstance(ledger, ValkeyQuotaLedger):
        await ledger.close()


# Builds a server's app: the MCP server's (with the API when VERA_MCP_API is on), or the API's alone.
AppBuilder = Callable[..., Awaitable[Starlette]]


def api_settings(settings: McpSettings) -> McpSettings:
    """The settings of `vera api serve`: those of the MCP server, listening on the API's port."""
    return settings.model_copy(update={"port": settings.api_port})


async def run_api(
    settings: McpSettings,
    vera: VeraSettings,
    *,
    verifiers: Verifiers = default_verifiers,
    ready: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """`vera api serve` until stopped: the HTTP API alone, on settings.api_port."""
    await run_http(api_settings(settings), vera, verifiers=verifiers, ready=ready, build=build_api_app)


async def run_http(
    settings: McpSettings,
    vera: VeraSettings,
    *,
    verifiers: Verifiers = default_verifiers,
    ready: Callable[[], Awaitable[None]] | None = None,
    build: AppBuilder = build_http_app,
) -> None:
    """`vera mcp serve --http` (or, with build=build_api_app, `vera api serve`) until stopped."""
    tracing = tracing_for(settings)
    client = await connect_client(vera, tracing)
    verifications = verifiers(client, settings)
    try:
        app = await build(
            settings,
            client,
            verifications,
            server_version=server_version(),
            ledger=quota_ledger(settings, vera),
            tracing=tracing,
        )
        try:
            if ready is not None:
                await ready()
            await serve_http(app, settings)
        finally:
            await close_ledger(app.state.ledger)
    finally:
        await close_verifiers(verifications)
        await client.close()
        tracing.shutdown()


class StartupError(Exception):
    """The server cannot start for a reason the user can fix: one line, and an exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


async def run_stdio(settings: McpSettings, vera: VeraSettings, api_key: str | None) -> None:
    """`vera mcp serve --stdio`: one caller, the key in VERA_API_KEY, verified before serving;
    its quotas counted in process (or in Valkey when configured) as over HTTP."""
    if not api_key or not api_key.strip():
        raise StartupError("VERA_API_KEY is not set: the stdio server acts as the key's principal", 2)
    tracing = tracing_for(settings)
    client = await connect_client(vera, tracing)
    try:
        verification = ApiKeyVerification(client, cache_seconds=0)
        if not verification.handles(api_key.strip()):
            raise StartupError("VERA_API_KEY is not an API key (vera_<prefix>_<secret>)", 2)
        try:
            caller = await verification.check(api_key.strip())
        except AuthenticationError as error:
            raise StartupError(f"VERA_API_KEY was refused: {error}", 2) from error
        runner = ToolRunner(
            client,
            server_version=server_version(),
            timeout_s=settings.request_timeout_s,
            fixed_caller=caller,
        )
        try:
            await serve_stdio(runner, tracing=tracing, ledger=quota_ledger(settings, vera))
        finally:
            await close_ledger(runner.ledger)
    finally:
        await client.close()
        tracing.shutdown()


def stderr_line(message: str) -> None:
    print(f"vera: error: {message}", file=sys.stderr, flush=True)
