"""Real MCP servers for the tests: `vera mcp serve --stdio` as a subprocess, and
the streamable HTTP app under uvicorn on 127.0.0.1 in a thread of its own, both
over a test database; and the SDK's own client sessions to talk to them."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult

from pg_tests.support.databases import Database
from vera_client.client import AsyncVeraClient
from vera_client.config import DbSettings, EmbedderSettings, PoolSettings, VeraSettings
from vera_mcp.adapters.api_keys import ApiKeyVerification
from vera_mcp.adapters.http_app import build_http_app, uvicorn_config
from vera_mcp.adapters.instruments import LedgerFactory, no_ledger
from vera_mcp.adapters.tracing import Tracing
from vera_mcp.config import McpSettings
from vera_mcp.domain.access import Scope, VerifiedCaller
from vera_mcp.domain.ports import TokenVerification
from vera_mcp.entrypoints.wiring import (
    AppBuilder,
    close_ledger,
    close_verifiers,
    connect_client,
    default_verifiers,
)

T = TypeVar("T")
VERA = Path(sys.executable).with_name("vera")
# the prefix of a token ReadOnlyTokens knows (tests of scopes: a reader that may only read)
NARROW = "narrow:"


class ReadOnlyTokens:
    """A real TokenVerification: 'narrow:<api key>' is that key's caller, allowed to read only
    (as an OIDC token whose scope claim says 'read' would be)."""

    def __init__(self, keys: ApiKeyVerification) -> None:
        self.keys = keys

    async def verify(self, token: str) -> VerifiedCaller | None:
        if not token.startswith(NARROW):
            return None
        verified = await self.keys.verify(token.removeprefix(NARROW))
        if verified is None:
            return None
        return VerifiedCaller(
            caller=verified.caller,
            principal_id=verified.principal_id,
            scopes=frozenset({Scope.READ}),
            via="oidc",
        )


def with_read_only_tokens(client: AsyncVeraClient, settings: McpSettings) -> Sequence[TokenVerification]:
    """A server's verifiers: API keys, and NARROW tokens (read only) for the same keys."""
    keys = ApiKeyVerification(client, cache_seconds=settings.api_key_cache_s)
    return [keys, ReadOnlyTokens(keys)]


def vera_settings(db: Database) -> VeraSettings:
    return VeraSettings(
        db=DbSettings(data_dir=db.server.data_dir, port=db.server.port, database=db.name),
        # no model to load: the seeded data has no vectors, so search goes by words
        embedder=EmbedderSettings(provider="deterministic"),
        # a test that takes the database away waits this long for a connection, not 30 s
        pool=PoolSettings(timeout_seconds=3),
    )


def cli_env(db: Database, **extra: str) -> dict[str, str]:
    return {
        "VERA_DB__DATA_DIR": str(db.server.data_dir),
        "VERA_DB__PORT": str(db.server.port),
        "VERA_DB__DATABASE": db.name,
        "VERA_DB__DSN": "",
        "VERA_DB__ADMIN_DSN": "",
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_WORKER__SOURCE_ROOTS": json.dumps([tempfile.gettempdir()]),
        "PATH": str(VERA.parent),
        **extra,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


Verifiers = Callable[[AsyncVeraClient, McpSettings], Sequence[TokenVerification]]


class HttpServer:
    """`vera mcp serve --http` as build_http_app makes it, under uvicorn in a thread
    (with a quota ledger and tracing when given, as run_http builds them)."""

    def __init__(
        self,
        db: Database,
        settings: McpSettings,
        verifiers: Verifiers = default_verifiers,
        *,
        ledger: LedgerFactory = no_ledger,
        tracing: Tracing | None = None,
        build: AppBuilder = build_http_app,
    ) -> None:
        self.db = db
        self.build = build
        self.settings = settings
        self.verifiers = verifiers
        self.ledger = ledger
        self.tracing = tracing
        self.base = f"http://127.0.0.1:{settings.port}"
        self.url = self.base + "/mcp"
        self.app: Any = None
        self._server: uvicorn.Server | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mcp-http", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported by start()
            self._failure = error

    async def _serve(self) -> None:
        client = await connect_client(vera_settings(self.db), self.tracing)
        verifications = self.verifiers(client, self.settings)
        try:
            self.app = await self.build(
                self.settings,
                client,
                verifications,
                server_version="test",
                ledger=self.ledger,
                tracing=self.tracing,
            )
            # the server's own limits (header and body deadlines, connection cap), on loopback
            config = uvicorn_config(self.app, self.settings, host="127.0.0.1")
            self._server = uvicorn.Server(config)
            try:
                await self._server.serve()
            finally:
                await close_ledger(self.app.state.ledger)
        finally:
            await close_verifiers(verifications)
            await client.close()

    def start(self) -> HttpServer:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not (self._server is not None and self._server.started):
            if self._failure is not None or not self._thread.is_alive():
                raise RuntimeError(f"the MCP server did not start: {self._failure!r}")
            if time.monotonic() > deadline:
                raise TimeoutError("the MCP server did not start within 30 s")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(timeout=15)


@contextmanager
def http_server(
    db: Database,
    verifiers: Verifiers = default_verifiers,
    *,
    ledger: LedgerFactory = no_ledger,
    tracing: Tracing | None = None,
    build: AppBuilder = build_http_app,
    **settings: Any,
) -> Iterator[HttpServer]:
    """An HTTP server over db: the MCP server's app, or (build=build_api_app) the HTTP API's."""
    mcp_settings = McpSettings(host="127.0.0.1", port=free_port(), **settings)
    server = HttpServer(db, mcp_settings, verifiers, ledger=ledger, tracing=tracing, build=build).start()
    try:
        yield server
    finally:
        server.stop()


class ServeProcess:
    """`vera mcp serve --http` as a subprocess; `stderr` holds what it wrote once it has stopped."""

    def __init__(self, process: subprocess.Popen[bytes], port: int) -> None:
        self.process = process
        self.base = f"http://127.0.0.1:{port}"
        self.url = self.base + "/mcp"
        self.stderr = ""


@contextmanager
def serve_process(
    env: dict[str, str], port: int, command: Sequence[str] = ("mcp", "serve", "--http")
) -> Iterator[ServeProcess]:
    """Start the command (`vera mcp serve --http`, or another that serves health on the port), wait
    until it is ready (60 s at most), and SIGTERM it when the block ends."""
    process = subprocess.Popen(  # noqa: S603 - the checkout's own vera command
        [str(VERA), *command, "--port", str(port)], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    running = ServeProcess(process, port)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{running.base}/health/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "not ready within 60 s"
            time.sleep(0.1)
        yield running
    finally:
        process.terminate()
        running.stderr = process.communicate(timeout=20)[1].decode()


@asynccontextmanager
async def http_session(url: str, token: str | None, **headers: str) -> Any:
    all_headers = {**headers, **({"Authorization": f"Bearer {token}"} if token else {})}
    async with (
        create_mcp_http_client(headers=all_headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def per_request_client(url: str, token: str) -> Any:
    """The SDK's Client as an agent opens it: it discovers the server and speaks the per-request
    protocol revision (2026-07-28: one self-contained POST per request, no initialize, no session)."""
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


@asynccontextmanager
async def stdio_session(env: dict[str, str]) -> Any:
    parameters = StdioServerParameters(command=str(VERA), args=["mcp", "serve", "--stdio"], env=env)
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def run(work: Awaitable[T]) -> T:
    return asyncio.run(work)  # type: ignore[arg-type]


def text_of(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content
