"""The operator's pages: the sources with their connectors' state (and a run on request), and
health (usage, failing sources, jobs and graph checks of the scopes the caller administers)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any
from urllib.parse import urlencode

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from vera_mcp.adapters.api.endpoint import ApiCall, Endpoint
from vera_mcp.adapters.console.pages import Pages, Refused, redirect
from vera_mcp.adapters.console.sessions import Session
from vera_mcp.domain.access import Scope, ToolClass, VerifiedCaller


def source_status_endpoint() -> Endpoint:
    """The connectors' state of the sources (cursor, last run, counts, error): the client's
    source_status, which /v1 has no route for yet; run as an endpoint so that scope, quota and
    metrics apply as for the others."""

    class SourceStates(BaseModel):
        states: list[dict[str, Any]]

    async def handler(a: ApiCall) -> SourceStates:
        return SourceStates(states=[asdict(s) for s in await a.call.vera.source_status(None)])

    return Endpoint(
        "GET",
        "/v1/sources",
        "source_status",
        "",
        "sources",
        Scope.READ,
        ToolClass.READ,
        handler,
        SourceStates,
    )


class OperationsPages(Pages):
    async def sources(self, request: Request, session: Session, verified: VerifiedCaller) -> Response:
        listed = await self._call("list_sources", verified, query={"limit": 200})
        states = {s["source_id"]: s for s in (await self._call("source_status", verified))["states"]}
        rows = [source | {"state": states.get(source["source_id"])} for source in listed["sources"]]
        return self._render(
            "sources.html", session, verified, page="sources", rows=rows,
            queued=request.query_params.get("queued"), problem=request.query_params.get("problem"),
        )  # fmt: skip

    async def run_source(self, request: Request, session: Session, verified: VerifiedCaller) -> Response:
        try:
            job = await self._call(
                "request_ingest", verified, path={"source_id": request.path_params["source_id"]}, body={}
            )
        except Refused as refused:
            return redirect("/sources?" + urlencode({"problem": f"{refused.title}: {refused.detail}"}))
        return redirect("/sources?" + urlencode({"queued": job["job_id"]}))

    async def health(self, request: Request, session: Session, verified: VerifiedCaller) -> Response:
        whoami = await self._call("whoami", verified)
        usage = await self._call("usage", verified)
        states = (await self._call("source_status", verified))["states"]
        failing = [s for s in states if s["last_status"] in ("failed", "interrupted")]
        # the jobs and graph checks of the scopes the caller administers: SQL refuses anyone else
        # (a viewer sees why instead), and counts no job of another tenant
        jobs, refused = None, None
        try:
            jobs = await self._call("health", verified)
        except Refused as error:
            refused = error
        return self._render(
            "health.html", session, verified, page="health", whoami=whoami, usage=usage,
            states=states, failing=failing, jobs=jobs, refused=refused,
            names={s["group_id"]: s["name"] for s in whoami["scopes"]},
        )  # fmt: skip
