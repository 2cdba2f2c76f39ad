"""The review pages: each scope's queue the caller may decide, every item with its evidence and
the value(s) approving it would replace, and the decisions (one item's or in bulk)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from vera_mcp.adapters.console.formatting import spans
from vera_mcp.adapters.console.pages import Pages, Refused, redirect, text_of
from vera_mcp.adapters.console.sessions import Session
from vera_mcp.domain.access import Scope, VerifiedCaller

REVIEWER_ROLES = frozenset({"admin", "owner"})
MAX_BULK = 100  # items one bulk decision takes


class ReviewPages(Pages):
    async def _scopes(self, verified: VerifiedCaller) -> list[dict[str, Any]]:
        return list((await self._call("whoami", verified))["scopes"])

    async def review(self, request: Request, session: Session, verified: VerifiedCaller) -> Response:
        scopes = await self._scopes(verified)
        may_review = Scope.REVIEW in verified.scopes
        mine = [s for s in scopes if s["role"] in REVIEWER_ROLES] if may_review else []
        # what the caller may not decide is not offered; the queues and each item's context are
        # asked at once (each call its own transaction from the pool), not one after another
        queues = await asyncio.gather(*(self._queue(scope, verified) for scope in mine))
        return self._render(
            "review.html", session, verified, page="review", queues=queues,
            done=request.query_params.get("done"), failed=request.query_params.get("failed"),
            reviewer=bool(queues),
        )  # fmt: skip

    async def _queue(self, scope: dict[str, Any], verified: VerifiedCaller) -> dict[str, Any]:
        try:
            pending = await self._call("pending_reviews", verified, query={"scope": scope["group_id"]})
        except Refused as refused:
            return {"scope": scope, "items": [], "refused": refused}
        items = await asyncio.gather(*(self._with_context(item, verified) for item in pending["items"]))
        return {"scope": scope, "items": items, "refused": None}

    async def _with_context(self, item: dict[str, Any], verified: VerifiedCaller) -> dict[str, Any]:
        """A pending item with its evidence span in its episode, and the current value(s) its
        subject and predicate have now (what approving it would replace or contradict)."""
        item = dict(item, evidence=None, episode=None, current=[])
        if item["kind"] != "fact":
            return item
        answers: tuple[Any, Any] = await asyncio.gather(
            self._call("get_evidence", verified, path={"fact_id": item["item_id"]}),
            self._call("get_entities", verified, query={"name": item["subject"]})
            if item.get("subject") and item.get("predicate")
            else _nothing(),
            return_exceptions=True,
        )
        evidence, found = answers
        if isinstance(evidence, BaseException) and not isinstance(evidence, Refused):
            raise evidence
        if isinstance(found, BaseException) and not isinstance(found, Refused):
            raise found
        if isinstance(evidence, dict):
            item["evidence"] = spans(evidence)
            item["episode"] = evidence if evidence.get("episode_id") else None
        if isinstance(found, dict):
            item["current"] = [
                fact
                for entity in found["entities"]
                for fact in entity["facts"]
                if fact["predicate"] == item["predicate"]
                and fact["lifecycle"] == "published"
                and fact["fact_id"] != item["item_id"]
                and fact["valid_to"] is None
            ]
        return item

    async def decide(self, request: Request, session: Session, verified: VerifiedCaller) -> Response:
        form = await request.form()
        one = text_of(form.get("one"))
        if one:  # a single item's own button: decision|kind|scope|id
            decision, _, item = one.partition("|")
            chosen, note = [item], text_of(form.get(f"note-{item.rsplit('|', 1)[-1]}"))
        else:
            decision = text_of(form.get("decision")) or ""
            chosen, note = (
                [text_of(v) or "" for v in form.getlist("item")][:MAX_BULK],
                text_of(form.get("note")),
            )
        done = failed = 0
        for item in chosen:
            kind, _, rest = item.partition("|")
            scope, _, item_id = rest.partition("|")
            body = {
                "scope": scope,
                "item_id": item_id,
                "kind": kind,
                "decision": decision,
                "note": note or None,
            }
            try:
                await self._call("review", verified, body=body)
                done += 1
            except Refused:
                failed += 1
        return redirect("/review?" + urlencode({"done": done, "failed": failed}))


async def _nothing() -> None:
    return None
