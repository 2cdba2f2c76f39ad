"""The HTTP API as Starlette routes: /v1/... (each endpoint through ApiGate), the OpenAPI
document at /openapi.json and its reference pages at /docs (Swagger UI from the
swagger-ui-py package: its files are served from here, nothing from a CDN).

`vera api serve` runs them as their own app (build_api_app); with VERA_MCP_API=true the
MCP server's app serves them beside /mcp (adapters/http_app.py). Either way they share
the MCP server's verifier chain, quota ledger, metrics and guards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from vera_mcp.adapters.api.access_routes import access_endpoints
from vera_mcp.adapters.api.docs import add_docs
from vera_mcp.adapters.api.endpoint import Endpoint
from vera_mcp.adapters.api.gate import ApiGate
from vera_mcp.adapters.api.health_routes import HEALTH_ENDPOINTS
from vera_mcp.adapters.api.openapi import openapi_document
from vera_mcp.adapters.api.read_routes import READ_ENDPOINTS
from vera_mcp.adapters.api.write_routes import WRITE_ENDPOINTS
from vera_mcp.domain.quotas import QuotaLimits

OPENAPI_PATH = "/openapi.json"
DOCS_PATH = "/docs"


def api_endpoints(server_version: str, limits: QuotaLimits | None) -> list[Endpoint]:
    """Every endpoint of the API, in the order the document lists them."""
    return [*access_endpoints(server_version, limits), *READ_ENDPOINTS, *WRITE_ENDPOINTS, *HEALTH_ENDPOINTS]


def serve_api(
    app: Starlette, gate: ApiGate, endpoints: Sequence[Endpoint], *, version: str, base_url: str
) -> None:
    """Add the API to app: its routes, the document and the docs."""
    app.router.routes.extend(api_routes(gate, endpoints, version=version, base_url=base_url))
    add_docs(app, openapi_path=OPENAPI_PATH, docs_path=DOCS_PATH, title="VERA HTTP API")


def api_routes(
    gate: ApiGate, endpoints: Sequence[Endpoint], *, version: str, base_url: str
) -> list[BaseRoute]:
    """The API's routes: one per path with its methods, and the document."""
    document = openapi_document(endpoints, version=version, server_url=base_url)

    async def openapi(_request: Request) -> Response:
        return JSONResponse(document)

    routes: list[BaseRoute] = []
    by_path: dict[str, list[Endpoint]] = {}
    for endpoint in endpoints:
        by_path.setdefault(endpoint.path, []).append(endpoint)
    for path, here in by_path.items():
        routes.append(Route(path, _dispatch(gate, here), methods=[e.method for e in here]))
    routes.append(Route(OPENAPI_PATH, openapi, methods=["GET"]))
    return routes


def _dispatch(gate: ApiGate, endpoints: Sequence[Endpoint]) -> Any:
    by_method = {e.method: e for e in endpoints}

    async def serve(request: Request) -> Response:
        # HEAD is GET without the body (Starlette allows it wherever GET is)
        return await gate.serve(by_method["GET" if request.method == "HEAD" else request.method], request)

    return serve
