"""The composition root of the MCP server: settings in, a running server out.

The server's pool logs in as the gateway role (vera_gateway): it runs the SQL
API like an application and may also vouch for principals it verified itself
(OIDC), which an application login may not. On the embedded server that role
is reached over the Unix socket as the demo's roles are; on an external
PostgreSQL, VERA_MCP_GATEWAY_DSN names its login.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from importlib import metadata

from vera_client.bootstrap import Database, build_database, build_providers
from vera_client.client import AsyncVeraClient
from vera_client.config import VeraSettings
from vera_client.domain.errors import AuthenticationError, ConfigurationError
from vera_mcp.adapters.api_keys import ApiKeyVerification
from vera_mcp.adapters.http_app import build_http_app, serve_http
from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.stdio import serve_stdio
from vera_mcp.config import McpSettings
from vera_mcp.domain.ports import QuotaLedger, TokenVerification

GATEWAY_ROLE = "vera_gateway"


def server_version() -> str:
    try:
        return metadata.version("vera")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree without the package installed
        return "unknown"


def gateway_dsn(database: Database, settings: McpSettings) -> str:
    """The DSN of the gateway login the server's pool uses."""
    if database.server is not None:
        return database.server.url(GATEWAY_ROLE)
    if settings.gateway_dsn:
        return settings.gateway_dsn
    raise ConfigurationError(
        "the MCP server logs in as the vera_gateway role: set VERA_MCP_GATEWAY_DSN to its DSN "
        "(an application login cannot vouch for OAuth principals)"
    )


async def connect_client(vera: VeraSettings, settings: McpSettings) -> AsyncVeraClient:
    """One client (one pool) for every caller of this process; the embedded server is started if used."""
    database = build_database(vera)
    if database.server is not None:
        await asyncio.to_thread(database.server.start)
    return await AsyncVeraClient.connect(
        gateway_dsn(database, settings),
        providers=build_providers(vera),
        pool=vera.pool,
        connect_timeout=vera.db.connect_timeout,
    )


# What the lead wires in after merging: more verifiers (OIDC after API keys) and a quota ledger.
Verifiers = Callable[[AsyncVeraClient, McpSettings], Sequence[TokenVerification]]
Ledger = Callable[[McpSettings], QuotaLedger | None]


def default_verifiers(client: AsyncVeraClient, settings: McpSettings) -> Sequence[TokenVerification]:
    return [ApiKeyVerification(client, cache_seconds=settings.api_key_cache_s)]


def no_ledger(_settings: McpSettings) -> QuotaLedger | None:
    return None


async def run_http(
    settings: McpSettings,
    vera: VeraSettings,
    *,
    verifiers: Verifiers = default_verifiers,
    ledger: Ledger = no_ledger,
    ready: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """`vera mcp serve --http` until stopped."""
    client = await connect_client(vera, settings)
    try:
        app = build_http_app(
            settings, client, verifiers(client, settings), ledger(settings), server_version=server_version()
        )
        if ready is not None:
            await ready()
        await serve_http(app, settings)
    finally:
        await client.close()


class StartupError(Exception):
    """The server cannot start for a reason the user can fix: one line, and an exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


async def run_stdio(settings: McpSettings, vera: VeraSettings, api_key: str | None) -> None:
    """`vera mcp serve --stdio`: one caller, the key in VERA_API_KEY, verified before serving."""
    if not api_key or not api_key.strip():
        raise StartupError("VERA_API_KEY is not set: the stdio server acts as the key's principal", 2)
    client = await connect_client(vera, settings)
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
        await serve_stdio(runner)
    finally:
        await client.close()


def stderr_line(message: str) -> None:
    print(f"vera: error: {message}", file=sys.stderr, flush=True)
