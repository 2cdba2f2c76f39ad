"""The web console at /console: server-rendered pages (Jinja2) over the HTTP API's own endpoints.

Every page runs the endpoints the /v1 routes run, through ApiGate.invoke as the session's
caller (scopes, quotas, deadline and metrics as for the route), so a page shows what /v1
would answer to the same caller: no other path to the client, none to SQL. A refusal is shown
as its problem's title and detail, so another tenant's id renders exactly as an id that
exists nowhere (the SQL API answers both alike). Login takes an API key or an OIDC access
token (sessions.py); every form carries the session's CSRF token."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vera_mcp.adapters.api.endpoint import Endpoint
from vera_mcp.adapters.api.gate import ApiGate
from vera_mcp.adapters.console.knowledge import KnowledgePages
from vera_mcp.adapters.console.operations import OperationsPages, source_status_endpoint
from vera_mcp.adapters.console.pages import CONSOLE_PATH, HERE, nonce, redirect, text_of
from vera_mcp.adapters.console.review import ReviewPages
from vera_mcp.adapters.console.sessions import COOKIE, LOGIN_COOKIE, Session, Sessions, same_token
from vera_mcp.domain.access import VerifiedCaller
from vera_mcp.domain.pictures import BAR_WIDTH

STATIC = {"console.css": "text/css", "console.js": "text/javascript"}
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


class Console(ReviewPages, KnowledgePages, OperationsPages):
    def __init__(self, gate: ApiGate, endpoints: Sequence[Endpoint], *, base_url: str) -> None:
        self.gate = gate
        self.endpoints = {e.name: e for e in endpoints}
        self.endpoints["source_status"] = source_status_endpoint()
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

    # --- login

    async def home(self, request: Request) -> Response:
        signed_in = self.sessions.get(request.cookies.get(COOKIE)) is not None
        return redirect("/review" if signed_in else "/login")

    async def login_form(
        self, request: Request, *, problem: str | None = None, status: int = 200
    ) -> Response:
        login_nonce = nonce()
        response = self._render(
            "login.html", None, None, status=status, login_csrf=login_nonce, problem=problem,
            ended=request.query_params.get("ended") == "1",
        )  # fmt: skip
        self._set_cookie(response, LOGIN_COOKIE, login_nonce, 600)
        return response

    async def login(self, request: Request) -> Response:
        form = await request.form()
        expected = request.cookies.get(LOGIN_COOKIE)
        if expected is None or not same_token(text_of(form.get("csrf")), expected):
            return await self.login_form(request, problem="the login form had expired: try again", status=403)
        token = (text_of(form.get("token")) or "").strip()
        verified = await self.gate.verify(token) if token else None
        if verified is None:
            return await self.login_form(
                request, problem="that key or token is unknown, revoked or expired", status=401
            )
        session_id, _session = self.sessions.start(token)
        response = redirect("/review")
        self._set_cookie(response, COOKIE, session_id, None)
        response.delete_cookie(LOGIN_COOKIE, path=CONSOLE_PATH)
        return response

    async def logout(self, request: Request, _session: Session, _verified: VerifiedCaller) -> Response:
        self.sessions.end(request.cookies.get(COOKIE))
        response = redirect("/login")
        response.delete_cookie(COOKIE, path=CONSOLE_PATH)
        return response

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        body = (HERE / "static" / name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "public, max-age=3600"})


def console_routes(gate: ApiGate, endpoints: Sequence[Endpoint], *, base_url: str) -> list[BaseRoute]:
    """The console's routes (added where the API's are)."""
    return Console(gate, endpoints, base_url=base_url).routes()
