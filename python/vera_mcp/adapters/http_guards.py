"""Checks every HTTP route passes, outside the MCP SDK's own.

HostOriginMiddleware: the Host and Origin checks against DNS rebinding for every path
(the SDK checks /mcp only), so a page elsewhere can read neither /metrics, /health/*
nor the protected-resource metadata through a rebound name. Health paths may also be
reached by the probe hosts configured (a load balancer that asks by the pod's address).

AnonymousChallenge: a request to /mcp without Bearer credentials gets a 401 whose
WWW-Authenticate names the metadata and no error code (RFC 6750 §3.1: "If the request
lacks any authentication information ... the resource server SHOULD NOT include an
error code"); a request with a token that fails still gets error="invalid_token".
"""

from __future__ import annotations

import json

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as AsgiScope

from vera_mcp.adapters.logs import correlation_id
from vera_mcp.domain.problems import PROBLEM_MEDIA_TYPE, PROBLEM_TYPE, Problem

HEALTH_PREFIX = "/health/"


class HostOriginMiddleware:
    """Refuses a foreign Host (421) or Origin (403) on every path, as a problem detail (RFC 9457)."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings, probe_hosts: list[str]) -> None:
        self.app = app
        self._everywhere = TransportSecurityMiddleware(security)
        probes = security.model_copy(update={"allowed_hosts": [*security.allowed_hosts, *probe_hosts]})
        self._health = TransportSecurityMiddleware(probes)

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        checks = self._health if path.startswith(HEALTH_PREFIX) else self._everywhere
        # is_post=False: the content type is the SDK's business on /mcp, and the HTTP API's gate checks
        # its own bodies' (415)
        refused = await checks.validate_request(Request(scope), is_post=False)
        if refused is None:
            await self.app(scope, receive, send)
            return
        error = "invalid_host" if refused.status_code == 421 else "invalid_origin"
        description = "this server does not answer that Host" if error == "invalid_host" else (
            "requests from that Origin are not accepted"
        )  # fmt: skip
        # an RFC 9457 problem detail like every other refusal of the API; `error` and
        # `error_description` stay as extension members for the clients that read them
        problem = Problem(
            type=PROBLEM_TYPE + error.replace("_", "-"),
            title="Host not answered" if error == "invalid_host" else "Origin not accepted",
            status=refused.status_code,
            detail=description,
            request_id=correlation_id(),
        )
        body = problem.model_dump(mode="json", exclude_none=True) | {
            "error": error,
            "error_description": description,
        }
        response = JSONResponse(body, status_code=refused.status_code, media_type=PROBLEM_MEDIA_TYPE)
        await response(scope, receive, send)


class AnonymousChallenge:
    """Wraps the SDK's RequireAuthMiddleware of /mcp: without Bearer credentials, the 401 carries
    no error code; anything else goes to the SDK's middleware as before."""

    def __init__(self, app: ASGIApp, resource_metadata_url: str | None) -> None:
        self.app = app
        self.resource_metadata_url = resource_metadata_url

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        authorization = Headers(scope=scope).get("authorization", "")
        if scope["type"] != "http" or authorization.lower().startswith("bearer "):
            await self.app(scope, receive, send)
            return
        challenge = "Bearer"
        if self.resource_metadata_url:
            challenge += f' resource_metadata="{self.resource_metadata_url}"'
        body = json.dumps({"error_description": "authentication required: send a bearer token"}).encode()
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        })  # fmt: skip
        await send({"type": "http.response.body", "body": body})
