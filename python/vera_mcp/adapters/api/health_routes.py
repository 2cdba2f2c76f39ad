"""The HTTP API's health route: the jobs, graph checks and model usage of the scopes the caller
administers (the client's group_health; sql/functions/265_group_health.sql decides who sees what,
266_model_usage.sql for the usage)."""

from __future__ import annotations

from vera_mcp.adapters.api.endpoint import ApiCall, Endpoint
from vera_mcp.domain.access import Scope, ToolClass
from vera_mcp.domain.api_requests import HealthQuery
from vera_mcp.domain.api_shapes import HealthOut


async def health(a: ApiCall) -> HealthOut:
    q = a.query_as(HealthQuery)
    group = await a.call.scope(q.scope) if q.scope is not None else None
    return HealthOut.of(await a.call.vera.group_health(group, q.stalled_after, q.usage_days))


HEALTH_ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/health",
        "health",
        "Jobs queued, running and stalled, the graph's last drift check, and model usage and cost, "
        "of the scopes you administer",
        "health",
        Scope.READ,
        ToolClass.READ,
        health,
        HealthOut,
        query_model=HealthQuery,
    ),
]
