"""The streamable HTTP transport: one Starlette app (build_http_app) serving MCP
at /mcp as an OAuth 2.1 resource server (Bearer tokens through the SDK's auth
middleware; RFC 9728 metadata; every 401 names it in WWW-Authenticate), with
Host/Origin checks against DNS rebinding on every route, failed tokens throttled,
a body size limit, health, Prometheus metrics at /metrics, and a correlation id per
request (X-Request-Id); uvicorn_config bounds what one connection may hold."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as AsgiScope

from vera_client.client import AsyncVeraClient
from vera_client.domain.errors import DatabaseUnavailableError
from vera_mcp.adapters.api.app import DOCS_PATH, OPENAPI_PATH, api_endpoints, serve_api
from vera_mcp.adapters.api.gate import ApiGate
from vera_mcp.adapters.auth_throttle import AuthThrottleMiddleware, FailedAuthThrottle
from vera_mcp.adapters.connections import guarded_protocol
from vera_mcp.adapters.console.app import CONSOLE_ROUTES, console_routes
from vera_mcp.adapters.health import health_routes
from vera_mcp.adapters.http_guards import AnonymousChallenge, HostOriginMiddleware
from vera_mcp.adapters.instruments import LedgerFactory, instrument, no_ledger
from vera_mcp.adapters.logs import CorrelationIdMiddleware
from vera_mcp.adapters.metrics import HttpMetricsMiddleware, McpMetrics
from vera_mcp.adapters.observability import ToolCallObserver
from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.tools import build_mcp_server
from vera_mcp.adapters.tracing import Tracing
from vera_mcp.adapters.verifier import ChainedTokenVerifier
from vera_mcp.config import McpSettings
from vera_mcp.domain.access import Scope
from vera_mcp.domain.ports import QuotaLedger, TokenVerification

MCP_PATH = "/mcp"
METRICS_PATH = "/metrics"
METADATA_PATH = "/.well-known/oauth-protected-resource"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
RETRY_AFTER_S = 5  # what a 503 asks a client to wait: the pool reconnects in the background
log = logging.getLogger("vera_mcp.http")


def transport_security(settings: McpSettings) -> TransportSecuritySettings:
    """Hosts and origins the server answers: loopback (any port), the public URL's, and the configured ones.
    A page on another site cannot reach the server through a rebound DNS name nor from its origin."""
    public = urlsplit(settings.base_url)
    hosts = [f"{name}:*" for name in LOOPBACK_HOSTS] + [public.netloc]
    if public.port is None:  # a Host header may carry the default port explicitly
        hosts.append(f"{public.netloc}:*")
    origins = [f"http://{name}:*" for name in LOOPBACK_HOSTS] + [f"{public.scheme}://{public.netloc}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted({*hosts, *settings.allowed_hosts}),
        allowed_origins=sorted({*origins, *settings.allowed_origins, *settings.cors_origins}),
    )


class DatabaseUnavailableMiddleware:
    """A request that needs the database while it cannot be reached (verifying a token, most
    often) is answered 503 with Retry-After, not 500: nothing is wrong with the request, and
    the token is not called invalid (no 401), so a client keeps it and retries."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_tracked)
        except DatabaseUnavailableError as error:
            if started:  # too late to say so: the answer is under way
                raise
            log.warning("answered 503: %s", error)
            body = {"error": "temporarily_unavailable", "error_description": "the database cannot be reached"}
            headers = {"Retry-After": str(RETRY_AFTER_S)}
            await JSONResponse(body, status_code=503, headers=headers)(scope, receive, send)


async def build_http_app(
    settings: McpSettings,
    client: AsyncVeraClient,
    verifiers: Sequence[TokenVerification],
    *,
    server_version: str,
    ledger: LedgerFactory = no_ledger,
    tracing: Tracing | None = None,
) -> Starlette:
    """The whole HTTP server as one Starlette app (add routes and middleware to it).

    Its McpMetrics are `app.state.metrics`, its quota ledger `app.state.ledger`
    (None without quotas): whoever built the app closes the ledger when done."""
    resource = settings.base_url + MCP_PATH
    issuers = settings.authorization_servers or [
        settings.oidc.issuer if settings.oidc is not None else settings.base_url
    ]
    runner = ToolRunner(client, server_version=server_version, timeout_s=settings.request_timeout_s)
    auth = AuthSettings(
        issuer_url=AnyHttpUrl(issuers[0]),
        resource_server_url=AnyHttpUrl(resource),
        # each verifier checks the audience of its tokens itself (an API key has none)
        validate_token_resource=False,
        # no scope is required to connect: each tool asks for its own (ToolRunner.run_tool)
        required_scopes=None,
    )
    throttle = FailedAuthThrottle(settings.auth_throttle_limits())
    chain = ChainedTokenVerifier(verifiers, resource, throttle=throttle)
    server = build_mcp_server(runner, token_verifier=chain, auth=auth)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        # plain JSON answers, and no session state on the server: any replica can answer any request
        json_response=True,
        stateless_http=True,
        max_request_body_size=settings.max_body_bytes,
        transport_security=transport_security(settings),
        host=settings.host,
    )
    # the SDK serves the metadata at METADATA_PATH + /mcp (RFC 9728 §3.1, named by every 401);
    # clients that look at the root find the same document, with the scopes the tools ask for
    metadata = ProtectedResourceMetadata(
        resource=AnyHttpUrl(resource),
        authorization_servers=[AnyHttpUrl(url) for url in issuers],
        scopes_supported=[scope.value for scope in Scope],
        resource_name="VERA memory",
    )
    app.router.routes.append(
        Route(METADATA_PATH, ProtectedResourceMetadataHandler(metadata).handle, methods=["GET"])
    )
    app.router.routes.extend(health_routes(client))
    _challenge_anonymous_requests(app)
    routes = frozenset({getattr(route, "path", "") for route in app.router.routes} | {METRICS_PATH}) - {""}
    endpoints = api_endpoints(server_version, settings.quotas.limits()) if settings.api else []
    routes |= {e.path for e in endpoints} | (
        {OPENAPI_PATH, DOCS_PATH, *CONSOLE_ROUTES} if endpoints else set()
    )
    extra = [e.name for e in endpoints]  # the API's operations are observed as the tools are
    metrics = await instrument(
        server, runner, tracing=tracing or Tracing(None), ledger=ledger, routes=routes, extra_names=extra
    )
    if settings.metrics:
        # no bearer token: Prometheus scrapes it, and it holds counts under bounded labels only
        # (no query, principal or key); docs/mcp.md says how to keep it private
        app.router.routes.append(metrics.route(METRICS_PATH))
    chain.on_refusal = metrics.observe_auth_refusal
    if settings.api:
        gate = api_gate(
            settings, client, chain, ledger=lambda: runner.ledger, observer=lambda: runner.observer
        )
        serve_api(app, gate, endpoints, version=server_version, base_url=settings.base_url)
        app.router.routes.extend(console_routes(gate, endpoints, base_url=settings.base_url))
    guard(app, settings, metrics)
    app.state.metrics = metrics
    app.state.ledger = runner.ledger
    return app


def guard(app: Starlette, settings: McpSettings, metrics: McpMetrics) -> None:
    """The middleware every route of the server passes, outermost last (add_middleware puts each
    outside those before it): every response counted (a 401, 421 or 503 included) and carrying
    the request's id; a foreign Host or Origin refused before any token is looked at; the
    client's address for the verifier chain's throttle, whose refusals are answered 429; 503
    while the database cannot be reached; CORS for the configured origins only."""
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "If-None-Match"],
            expose_headers=["ETag", "Idempotent-Replayed", "Retry-After", "X-Request-Id"],
            max_age=600,
        )
    app.add_middleware(DatabaseUnavailableMiddleware)
    app.add_middleware(AuthThrottleMiddleware)
    app.add_middleware(
        HostOriginMiddleware, security=transport_security(settings), probe_hosts=settings.probe_hosts
    )
    app.add_middleware(CorrelationIdMiddleware)
    app.add_middleware(HttpMetricsMiddleware, metrics=metrics)


def api_gate(
    settings: McpSettings,
    client: AsyncVeraClient,
    chain: ChainedTokenVerifier,
    *,
    ledger: Callable[[], QuotaLedger | None],
    observer: Callable[[], ToolCallObserver],
) -> ApiGate:
    return ApiGate(
        client,
        chain,
        ledger=ledger,
        observer=observer,
        timeout_s=settings.request_timeout_s,
        max_body_bytes=settings.max_body_bytes,
        resource_metadata_url=settings.base_url + METADATA_PATH,
    )


async def build_api_app(
    settings: McpSettings,
    client: AsyncVeraClient,
    verifiers: Sequence[TokenVerification],
    *,
    server_version: str,
    ledger: LedgerFactory = no_ledger,
    tracing: Tracing | None = None,
) -> Starlette:
    """The HTTP API alone (`vera api serve`): /v1, /openapi.json, /docs, the web console at /console,
    health and metrics, behind
    the same guards, verifier chain, quotas and metrics as the MCP server's app. Its ledger is
    `app.state.ledger`: whoever built the app closes it when done."""
    throttle = FailedAuthThrottle(settings.auth_throttle_limits())
    chain = ChainedTokenVerifier(verifiers, settings.base_url, throttle=throttle)
    endpoints = api_endpoints(server_version, settings.quotas.limits())
    routes = {e.path for e in endpoints} | {
        OPENAPI_PATH,
        DOCS_PATH,
        METRICS_PATH,
        "/health/live",
        "/health/ready",
        *CONSOLE_ROUTES,
    }
    metrics = McpMetrics(tools=[e.name for e in endpoints], routes=routes)
    observer = ToolCallObserver(metrics, tracing or Tracing(None))
    quota_ledger = ledger(metrics)
    gate = api_gate(settings, client, chain, ledger=lambda: quota_ledger, observer=lambda: observer)
    app = Starlette(routes=health_routes(client))
    serve_api(app, gate, endpoints, version=server_version, base_url=settings.base_url)
    app.router.routes.extend(console_routes(gate, endpoints, base_url=settings.base_url))
    if settings.metrics:
        app.router.routes.append(metrics.route(METRICS_PATH))
    chain.on_refusal = metrics.observe_auth_refusal
    guard(app, settings, metrics)
    app.state.metrics = metrics
    app.state.ledger = quota_ledger
    return app


def _challenge_anonymous_requests(app: Starlette) -> None:
    """Wrap the SDK's RequireAuthMiddleware of /mcp so that a request without credentials gets a
    challenge without an error code (http_guards.AnonymousChallenge)."""
    for route in app.router.routes:
        if (
            isinstance(route, Route)
            and route.path == MCP_PATH
            and isinstance(route.app, RequireAuthMiddleware)
        ):
            metadata_url = route.app.resource_metadata_url
            route.app = AnonymousChallenge(route.app, str(metadata_url) if metadata_url else None)
            return
    raise RuntimeError(
        f"the MCP SDK's app has no authenticated route at {MCP_PATH}"
    )  # an SDK upgrade moved it


def uvicorn_config(app: Starlette, settings: McpSettings, **overrides: Any) -> uvicorn.Config:
    """uvicorn's configuration of the server: the connection limits of settings (docs/mcp.md)."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": "warning",
        "log_config": None,  # uvicorn's records go to the root logger: JSON lines like the rest
        # the proxy in front, if any, sets these; trusting them is the operator's choice (FORWARDED_ALLOW_IPS)
        "proxy_headers": True,
        "server_header": False,
        "http": guarded_protocol(
            header_timeout_s=settings.header_timeout_s,
            body_timeout_s=settings.body_timeout_s,
            max_connections=settings.max_connections,
        ),
        "timeout_keep_alive": settings.keep_alive_s,
        "h11_max_incomplete_event_size": settings.max_header_bytes,
    }
    return uvicorn.Config(app, **(options | overrides))


async def serve_http(app: Starlette, settings: McpSettings) -> None:
    """Run the app with uvicorn until it is told to stop (SIGINT/SIGTERM)."""
    await uvicorn.Server(uvicorn_config(app, settings)).serve()
