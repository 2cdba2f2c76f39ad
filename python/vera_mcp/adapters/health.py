"""Health endpoints: live (the process answers) and ready (the database answers
a trivial query through the server's own pool; 503 when it does not)."""

from __future__ import annotations

import asyncio
import logging

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from vera_client.client import AsyncVeraClient
from vera_client.domain.callers import Operator

READY_TIMEOUT_S = 2.0  # a load balancer asks often; a slow answer is as bad as none
log = logging.getLogger("vera_mcp.health")


def health_routes(client: AsyncVeraClient) -> list[Route]:
    # no caller: search_version needs none, so readiness never touches a tenant's data
    probe = client.as_caller(Operator())

    async def live(_request: Request) -> Response:
        return JSONResponse({"status": "live"})

    async def ready(_request: Request) -> Response:
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                version = await probe.search_version()
        except Exception as error:  # any failure means: do not send traffic here
            log.warning("not ready: %s: %s", type(error).__name__, error)
            return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)
        return JSONResponse({"status": "ready", "database": "ok", "search_version": version})

    return [
        Route("/health/live", live, methods=["GET"]),
        Route("/health/ready", ready, methods=["GET"]),
    ]
