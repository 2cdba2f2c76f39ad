"""What every console page stands on: the session and CSRF check around a handler, the calls of
the API's endpoints as the session's caller (a refusal becomes Refused, shown in the page's
place), rendering with the console's headers, and the console's cookies."""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from vera_client.domain.errors import DatabaseUnavailableError, VeraError
from vera_mcp.adapters.api.endpoint import Endpoint
from vera_mcp.adapters.api.gate import ApiGate
from vera_mcp.adapters.console.sessions import COOKIE, Session, Sessions, same_token
from vera_mcp.domain.access import QuotaExceededError, VerifiedCaller
from vera_mcp.domain.problems import ApiProblem, problem_for

CONSOLE_PATH = "/console"
HERE = Path(__file__).parent
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


class Pages:
    """The plumbing the console's pages share (the Console sets these attributes up)."""

    gate: ApiGate
    endpoints: dict[str, Endpoint]
    sessions: Sessions
    secure: bool
    templates: Environment

    def _page(
        self, handler: Callable[[Request, Session, VerifiedCaller], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def serve(request: Request) -> Response:
            started = time.perf_counter()  # the page's server time: the token's check included
            session = self.sessions.get(request.cookies.get(COOKIE))
            if session is None:
                return redirect("/login")
            verified = await self.gate.verify(session.token)
            if verified is None:  # revoked or expired since the login
                self.sessions.end(request.cookies.get(COOKIE))
                return redirect("/login?ended=1")
            if request.method == "POST":
                form = await request.form()
                if not same_token(text_of(form.get("csrf")), session.csrf):
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


def redirect(where: str) -> RedirectResponse:
    return RedirectResponse(CONSOLE_PATH + where, status_code=303, headers=HEADERS)


def text_of(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def nonce() -> str:
    return secrets.token_urlsafe(24)
