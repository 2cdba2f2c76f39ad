"""The web console at /console: server-rendered pages (Jinja2) over the HTTP API's own endpoints.

Every page runs the endpoints the /v1 routes run, through ApiGate.invoke as the session's
caller (scopes, quotas, deadline and metrics as for the route), so a page shows what /v1
would answer to the same caller: no other path to the client, none to SQL. A refusal is shown
as its problem's title and detail, so another tenant's id renders exactly as an id that
exists nowhere (the SQL API answers both alike). Login takes an API key or an OIDC access
token (sessions.py); every form carries the session's CSRF token."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from vera_client.domain.errors import DatabaseUnavailableError, VeraError
from vera_mcp.adapters.api.endpoint import ApiCall, Endpoint
from vera_mcp.adapters.api.gate import ApiGate
from vera_mcp.adapters.console.sessions import COOKIE, LOGIN_COOKIE, Session, Sessions, same_token
from vera_mcp.domain.access import QuotaExceededError, Scope, ToolClass, VerifiedCaller
from vera_mcp.domain.pictures import BAR_WIDTH, neighbourhood, signal_bars, time_line
from vera_mcp.domain.problems import ApiProblem, problem_for

CONSOLE_PATH = "/console"
HERE = Path(__file__).parent
STATIC = {"console.css": "text/css", "console.js": "text/javascript"}
REVIEWER_ROLES = frozenset({"admin", "owner"})
MAX_HISTORIES = 5  # the top fact hits whose versions are drawn (one call each; the fact page has every one)
MAX_BULK = 100  # items one bulk decision takes
PAGES_ROUTES = (
    "login",
    "logout",
    "review",
    "search",
    "facts/{fact_id}",
    "sources",
    "sources/{source_id}/run",
    "graph",
    "health",
    "static/{name}",
)
CONSOLE_ROUTES = frozenset({CONSOLE_PATH, *(f"{CONSOLE_PATH}/{route}" for route in PAGES_ROUTES)})
PAGES = (
    ("review", "Review"),
    ("search", "Search"),
    ("sources", "Sources"),
    ("graph", "Graph"),
    ("health", "Health"),
)
# a page's headers: nothing loaded from elsewhere, no framing, no referrer leaving the console
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    # same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the forms' POSTs,
    # which the Host/Origin guard refuses
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}


class Refused(Exception):
    """A call of a page refused: what the page shows in its place."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


def _source_status_endpoint() -> Endpoint:
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


class Console:
    def __init__(self, gate: ApiGate, endpoints: Sequence[Endpoint], *, base_url: str) -> None:
        self.gate = gate
        self.endpoints = {e.name: e for e in endpoints}
        self.endpoints["source_status"] = _source_status_endpoint()
        self.sessions = Sessions()
        self.secure = urlsplit(base_url).scheme == "https"
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.globals.update(pages=PAGES, bar_width=BAR_WIDTH, base=CONSOLE_PATH)

    def routes(self) -> list[BaseRoute]:
        page = self._page
        return [
            Route(CONSOLE_PATH, self.home, methods=["GET"]),
            Route(CONSOLE_PATH + "/login", self.login_form, methods=["GET"]),
            Route(CONSOLE_PATH + "/login", self.login, methods=["POST"]),
            Route(CONSOLE_PATH + "/logout", page(self.logout), methods=["POST"]),
            Route(CONSOLE_PATH + "/review", page(self.review), methods=["GET"]),
            Route(CONSOLE_PATH + "/review", page(self.decide), methods=["POST"]),
            Route(CONSOLE_PATH + "/search", page(self.search), methods=["GET"]),
            Route(CONSOLE_PATH + "/facts/{fact_id}", page(self.fact), methods=["GET"]),
            Route(CONSOLE_PATH + "/sources", page(self.sources), methods=["GET"]),
            Route(CONSOLE_PATH + "/sources/{source_id}/run", page(self.run_source), methods=["POST"]),
            Route(CONSOLE_PATH + "/graph", page(self.graph), methods=["GET"]),
            Route(CONSOLE_PATH + "/health", page(self.health), methods=["GET"]),
            Route(CONSOLE_PATH + "/static/{name}", self.static, methods=["GET"]),
        ]

    # --- the plumbing: sessions, CSRF, calls, rendering

    def _page(
        self, handler: Callable[[Request, Session, VerifiedCaller], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def serve(request: Request) -> Response:
            started = time.perf_counter()  # the page's server time: the token's check included
            session = self.sessions.get(request.cookies.get(COOKIE))
            if session is None:
                return _redirect("/login")
            verified = await self.gate.verify(session.token)
            if verified is None:  # revoked or expired since the login
                self.sessions.end(request.cookies.get(COOKIE))
                return _redirect("/login?ended=1")
            if request.method == "POST":
                form = await request.form()
                if not same_token(_text(form.get("csrf")), session.csrf):
                    return self._render(
                        "error.html", session, None, status=403, title="Refused",
                        detail="the form's CSRF token is missing or stale: reload the page and try again",
                    )  # fmt: skip
            response = await handler(request, session, verified)
            response.headers["Server-Timing"] = f"render;dur={(time.perf_counter() - started) * 1000:.1f}"
            return response

        return serve

    async def _call(
        self,
        name: str,
        verified: VerifiedCaller,
        *,
        path: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        """The endpoint's answer as JSON-shaped data, or Refused with its problem's words."""
        try:
            answer = await self.gate.invoke(self.endpoints[name], verified, path=path, query=query, body=body)
        except DatabaseUnavailableError:
            raise
        except (ApiProblem, QuotaExceededError, VeraError, TimeoutError) as error:
            problem, _headers = problem_for(error, None)
            raise Refused(problem.status, problem.title, problem.detail or "") from None
        return answer.model_dump(mode="json")

    def _render(
        self,
        template: str,
        session: Session | None,
        verified: VerifiedCaller | None,
        *,
        status: int = 200,
        **values: Any,
    ) -> HTMLResponse:
        html = self.templates.get_template(template).render(
            csrf=session.csrf if session is not None else None,
            caller=verified.caller if verified is not None else None,
            **values,
        )
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def _set_cookie(self, response: Response, name: str, value: str, max_age: int | None) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=CONSOLE_PATH,
            httponly=True,
            secure=self.secure,
            samesite="strict",
        )

    # --- login

    async def home(self, request: Request) -> Response:
        signed_in = self.sessions.get(request.cookies.get(COOKIE)) is not None
        return _redirect("/review" if signed_in else "/login")

    async def login_form(
        self, request: Request, *, problem: str | None = None, status: int = 200
    ) -> Response:
        nonce = _nonce()
        response = self._render(
            "login.html", None, None, status=status, login_csrf=nonce, problem=problem,
            ended=request.query_params.get("ended") == "1",
        )  # fmt: skip
        self._set_cookie(response, LOGIN_COOKIE, nonce, 600)
        return response

    async def login(self, request: Request) -> Response:
        form = await request.form()
        expected = request.cookies.get(LOGIN_COOKIE)
        if expected is None or not same_token(_text(form.get("csrf")), expected):
            return await self.login_form(request, problem="the login form had expired: try again", status=403)
        token = (_text(form.get("token")) or "").strip()
        verified = await self.gate.verify(token) if token else None
        if verified is None:
            return await self.login_form(
                request, problem="that key or token is unknown, revoked or expired", status=401
            )
        session_id, _session = self.sessions.start(token)
        response = _redirect("/review")
        self._set_cookie(response, COOKIE, session_id, None)
        response.delete_cookie(LOGIN_COOKIE, path=CONSOLE_PATH)
        return response

    async def logout(self, request: Request, _session: Session, _verified: VerifiedCaller) -> Response:
        self.sessions.end(request.cookies.get(COOKIE))
        response = _redirect("/login")
        response.delete_cookie(COOKIE, path=CONSOLE_PATH)
        return response

    # --- review

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
            item["evidence"] = _spans(evidence)
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
        one = _text(form.get("one"))
        if one:  # a single item's own button: decision|kind|scope|id
            decision, _, item = one.partition("|")
            chosen, note = [item], _text(form.get(f"note-{item.rsplit('|', 1)[-1]}"))
        else:
            decision = _text(form.get("decision")) or ""
            chosen, note = [_text(v) or "" for v in form.getlist("item")][:MAX_BULK], _text(form.get("note"))
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
        return _redirect("/review?" + urlencode({"done": done, "failed": failed}))

    # --- search and facts

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
                    hit["cite"] = _citation(hit["citation"])
        return self._render(
            "search.html", session, verified, page="search", form=form, result=result, refused=refused,
            histories=histories,
        )  # fmt: skip

    async def _history(self, fact_id: str, verified: VerifiedCaller) -> list[Any]:
        history = await self._call("fact_history", verified, path={"fact_id": fact_id})
        versions = [
            (v["object"], _moment(v["valid_from"]), _moment(v["valid_to"]) if v["valid_to"] else None)
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
            spans=_spans(evidence), marks=marks,
        )  # fmt: skip

    # --- sources

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
            return _redirect("/sources?" + urlencode({"problem": f"{refused.title}: {refused.detail}"}))
        return _redirect("/sources?" + urlencode({"queued": job["job_id"]}))

    # --- graph

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

    # --- health

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

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        body = (HERE / "static" / name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "public, max-age=3600"})


async def _nothing() -> None:
    return None


def _redirect(where: str) -> RedirectResponse:
    return RedirectResponse(CONSOLE_PATH + where, status_code=303, headers=HEADERS)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _nonce() -> str:
    return secrets.token_urlsafe(24)


def _moment(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _citation(citation: Mapping[str, Any]) -> str:
    """A hit's citation in one line: its source, episode and section, its address, the day it
    holds from, and its tier and verification."""
    source = citation.get("source") or {}
    episode = citation.get("episode") or {}
    chunk = citation.get("chunk") or {}
    parts = []
    if source.get("name"):
        parts.append(f"{source['name']} ({source.get('kind')})")
    if episode.get("title") or episode.get("external_id"):
        version = f" v{episode['version']}" if episode.get("version") else ""
        parts.append(f"{episode.get('title') or episode.get('external_id')}{version}")
    if chunk.get("heading"):
        parts.append(f"§ {chunk['heading']}")
    if episode.get("uri") or source.get("uri"):
        parts.append(str(episode.get("uri") or source.get("uri")))
    if citation.get("valid_from"):
        parts.append(f"from {str(citation['valid_from'])[:10]}")
    if citation.get("tier") is not None:
        parts.append(f"tier {citation['tier']}, {citation.get('verification')}")
    return " · ".join(parts)


def _spans(evidence: Mapping[str, Any]) -> list[tuple[str, bool]] | None:
    """The episode's passage cut around the evidence span: (text, is_evidence) pieces."""
    text = evidence.get("chunk_text")
    if not text:
        return None
    start, end = evidence.get("evidence_start"), evidence.get("evidence_end")
    if start is None or end is None or not 0 <= start <= end <= len(text):
        return [(text, False)]
    return [(text[:start], False), (text[start:end], True), (text[end:], False)]


def console_routes(gate: ApiGate, endpoints: Sequence[Endpoint], *, base_url: str) -> list[BaseRoute]:
    """The console's routes (added where the API's are)."""
    return Console(gate, endpoints, base_url=base_url).routes()
