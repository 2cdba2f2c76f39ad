"""The OpenAPI 3.1 document of the HTTP API, generated from the endpoints' own models (the
ones that check each request and shape each answer), so it cannot drift from them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from vera_mcp.adapters.api.endpoint import Endpoint
from vera_mcp.domain.problems import PROBLEM_MEDIA_TYPE, Problem

REF = "#/components/schemas/{model}"
# refusals every route may answer, besides its own success
PROBLEM_STATUSES = {
    "400": "the SQL API refused an argument",
    "401": "no bearer token, or one that is unknown, revoked or expired",
    "403": "the token lacks the route's scope, or the caller's role does not allow it",
    "404": "nothing the caller reads has that id (another tenant's id answers the same)",
    "409": "a conflict: an Idempotency-Key reused or still running, a stale snapshot",
    "413": "the body is too large",
    "415": "the body is not application/json",
    "421": "the Host header is not one this server answers",
    "422": "a parameter is invalid",
    "429": "a quota, or the failed-token throttle; see Retry-After",
    "500": "a fault of the server (the problem names the request id)",
    "503": "the database cannot be reached; see Retry-After",
    "504": "the request took longer than the server allows",
}
Mode = Literal["validation", "serialization"]


def openapi_document(
    endpoints: Sequence[Endpoint], *, version: str, server_url: str | None = None
) -> dict[str, Any]:
    """The whole document: paths, the components' schemas, bearer security."""
    wanted: list[tuple[type[BaseModel], Mode]] = [(Problem, "serialization")]
    for e in endpoints:
        wanted.append((e.response, "serialization"))
        wanted += [(m, "validation") for m in (e.path_model, e.query_model, e.body_model) if m is not None]
    refs, top = models_json_schema(list(dict.fromkeys(wanted)), ref_template=REF)
    schemas: dict[str, Any] = dict(top.get("$defs", {}))
    paths: dict[str, dict[str, Any]] = {}
    for e in endpoints:
        paths.setdefault(e.path, {})[e.method.lower()] = _operation(e, refs, schemas)
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "VERA HTTP API",
            "version": version,
            "description": "A verified, time-aware knowledge memory: search, context packs, facts and their "
            "evidence, sources, review. Errors are RFC 9457 problem details (application/problem+json) "
            "whose `code` is the SQLSTATE the SQL API raised. See docs/http-api.md.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "an API key (vera_<prefix>_<secret>) or an OIDC access token",
                },
            },
        },
        "security": [{"bearer": []}],
    }
    if server_url:
        document["servers"] = [{"url": server_url}]
    return document


def _operation(e: Endpoint, refs: Any, schemas: dict[str, Any]) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = []
    for model, where in ((e.path_model, "path"), (e.query_model, "query")):
        if model is not None:
            parameters += _parameters(refs[(model, "validation")], where, schemas)
    if e.writes:
        parameters.append(
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": False,
                "description": "a retry with the same key and request is answered as the first time, and "
                "does nothing again (kept a day)",
                "schema": {"type": "string", "minLength": 1, "maxLength": 200},
            }
        )
    if e.etag:
        parameters.append(
            {
                "name": "If-None-Match",
                "in": "header",
                "required": False,
                "description": "the ETag of an earlier answer: 304 when nothing changed",
                "schema": {"type": "string"},
            }
        )
    problem = {"$ref": REF.format(model="Problem")}
    responses: dict[str, Any] = {
        str(e.status): {
            "description": e.summary,
            "content": {"application/json": {"schema": refs[(e.response, "serialization")]}},
        }
    }
    if e.etag:
        responses[str(e.status)]["headers"] = {"ETag": {"schema": {"type": "string"}}}
        responses["304"] = {"description": "not modified since the ETag given in If-None-Match"}
    for status, text in PROBLEM_STATUSES.items():
        responses[status] = {"description": text, "content": {PROBLEM_MEDIA_TYPE: {"schema": problem}}}
    operation: dict[str, Any] = {
        "operationId": e.name,
        "summary": e.summary,
        "tags": [e.tag],
        "parameters": parameters,
        "responses": responses,
        "x-vera-scope": e.scope.value,
        "x-vera-route-class": e.route_class.value,
    }
    if e.body_model is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": refs[(e.body_model, "validation")]}},
        }
    return operation


def _parameters(ref: dict[str, Any], where: str, schemas: dict[str, Any]) -> list[dict[str, Any]]:
    """Each field of a path or query model as a parameter (null left out: an absent parameter is null)."""
    name = ref["$ref"].rsplit("/", 1)[-1]
    model_schema = schemas[name]
    required = set(model_schema.get("required", ()))
    found = []
    for field, schema in model_schema.get("properties", {}).items():
        shown = _without_null(schema)
        parameter: dict[str, Any] = {
            "name": field,
            "in": where,
            "required": where == "path" or field in required,
            "schema": shown,
        }
        if "description" in shown:
            parameter["description"] = shown["description"]
        if shown.get("type") == "array":
            parameter |= {"style": "form", "explode": True}
        found.append(parameter)
    return found


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    shown = {
        k: v for k, v in schema.items() if k not in {"title", "default"} or schema.get("default") is not None
    }
    shown.pop("title", None)
    options = shown.pop("anyOf", None)
    if options is None:
        return shown
    kept = [o for o in options if o != {"type": "null"}]
    if len(kept) == 1:
        return {**shown, **kept[0]}
    return {**shown, "anyOf": kept}
