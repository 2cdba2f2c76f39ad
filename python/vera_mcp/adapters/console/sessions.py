"""The web console's login sessions, kept in the server's memory: a random id in a cookie
(HttpOnly, SameSite=Strict, Secure where the server is reached over TLS) names the bearer
token the person logged in with and the session's CSRF token. The token never leaves the
server again; it is verified on every page (a revoked key ends the session at once), and a
session ends on logout, after IDLE_S without a page, or after MAX_AGE_S."""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field

COOKIE = "vera_console"
LOGIN_COOKIE = "vera_console_login"  # the login form's own CSRF token (no session yet)
IDLE_S = 30 * 60
MAX_AGE_S = 8 * 60 * 60
MAX_SESSIONS = 10_000


@dataclass(slots=True)
class Session:
    token: str
    csrf: str
    started: float = field(default_factory=time.monotonic)
    seen: float = field(default_factory=time.monotonic)

    def expired(self, now: float) -> bool:
        return now - self.seen > IDLE_S or now - self.started > MAX_AGE_S


class Sessions:
    """The open sessions of one server process (a replica behind a load balancer keeps its own:
    pin the console to one, or log in again)."""

    def __init__(self) -> None:
        self._open: dict[str, Session] = {}

    def start(self, token: str) -> tuple[str, Session]:
        now = time.monotonic()
        if len(self._open) >= MAX_SESSIONS:
            self._open = {k: s for k, s in self._open.items() if not s.expired(now)}
            while len(self._open) >= MAX_SESSIONS:  # the oldest go first
                self._open.pop(next(iter(self._open)))
        session_id = secrets.token_urlsafe(32)
        session = Session(token=token, csrf=secrets.token_urlsafe(32))
        self._open[session_id] = session
        return session_id, session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        session = self._open.get(session_id)
        now = time.monotonic()
        if session is None or session.expired(now):
            self._open.pop(session_id, None)
            return None
        session.seen = now
        return session

    def end(self, session_id: str | None) -> None:
        if session_id:
            self._open.pop(session_id, None)


def same_token(given: str | None, expected: str) -> bool:
    """A CSRF token compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())
