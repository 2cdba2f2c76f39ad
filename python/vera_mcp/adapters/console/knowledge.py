"""The pages that read the knowledge: search (hits with their signals, citations and the top
facts' histories), one fact with its evidence, and the graph around an entity."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from vera_mcp.adapters.console.formatting import citation, moment, spans
from vera_mcp.adapters.console.pages import Pages, Refused
from vera_mcp.adapters.console.sessions import Session
from vera_mcp.domain.access import VerifiedCaller
from vera_mcp.domain.pictures import neighbourhood, signal_bars, time_line

MAX_HISTORIES = 5  # the top fact hits whose versions are drawn (one call each; the fact page has every one)


class KnowledgePages(Pages):
    async def search(self, request: Request, session: Session, verified: VerifiedCaller) -> Response:
        params = request.query_params
        form = {name: params.get(name, "").strip() for name in ("q", "during_start", "during_end", "as_of")}
        result, refused, histories = None, None, {}
        if form["q"]:
            query = {"q": form["q"], "k": 10} | {
                name: value for name, value in form.items() if value and name != "q"
            }
            try:
                result = await self._call("search", verified, query=query)
            except Refused as error:
                refused = error
            if result is not None:
                facts = [hit for hit in result["hits"] if hit["kind"] == "fact"][:MAX_HISTORIES]
                answers = await asyncio.gather(
                    *(self._history(hit["item_id"], verified) for hit in facts), return_exceptions=True
                )
                histories = {
                    hit["item_id"]: answer
                    for hit, answer in zip(facts, answers, strict=True)
                    if not isinstance(answer, BaseException)
                }
                for hit in result["hits"]:
                    hit["bars"] = signal_bars(hit["signals"])
                    hit["cite"] = citation(hit["citation"])
        return self._render(
            "search.html", session, verified, page="search", form=form, result=result, refused=refused,
            histories=histories,
        )  # fmt: skip

    async def _history(self, fact_id: str, verified: VerifiedCaller) -> list[Any]:
        history = await self._call("fact_history", verified, path={"fact_id": fact_id})
        versions = [
            (v["object"], moment(v["valid_from"]), moment(v["valid_to"]) if v["valid_to"] else None)
            for v in history["versions"]
        ]
        return time_line(versions, datetime.now(UTC))

    async def fact(self, request: Request, session: Session, verified: VerifiedCaller) -> Response:
        fact_id = request.path_params["fact_id"]
        try:
            fact = await self._call("get_fact", verified, path={"fact_id": fact_id})
            evidence = await self._call("get_evidence", verified, path={"fact_id": fact_id})
            marks = await self._history(fact_id, verified)
        except Refused as refused:
            return self._render(
                "error.html", session, verified, page="search", status=refused.status,
                title=refused.title, detail=refused.detail,
            )  # fmt: skip
        return self._render(
            "fact.html", session, verified, page="search", fact=fact, evidence=evidence,
            spans=spans(evidence), marks=marks,
        )  # fmt: skip

    async def graph(self, request: Request, session: Session, verified: VerifiedCaller) -> Response:
        entity = request.query_params.get("entity", "").strip()
        picture, facts, refused = None, [], None
        if entity:
            try:
                found = await self._call(
                    "explore", verified, query={"entity": entity, "depth": 2, "limit": 200}
                )
                facts = found["facts"]
                rows = [(f["subject"], f["predicate"], f["object"], f["hop"]) for f in facts]
                picture = neighbourhood(entity, rows)
            except Refused as error:
                refused = error
        status = refused.status if refused is not None else 200
        return self._render(
            "graph.html", session, verified, page="graph", entity=entity, picture=picture, facts=facts,
            refused=refused, status=status,
        )  # fmt: skip
