"""Failed bearer tokens are not free to repeat: every token that no verifier accepted
counts against the client's address and, for an API key, against its key prefix; past
either limit the server answers 429 with Retry-After without asking the database, and a
token refused moments ago is refused again from memory (a short, bounded negative cache).

Only refusals are remembered: a token a verifier accepted is never cached here, and a
verification that could not finish (the database unreachable raises, it does not refuse)
is neither counted nor cached. A token accepted from the verifiers' own cache (an API key
verified less than api_key_cache_s ago) still passes the address check first: a throttled
address is throttled for every bearer token, as a network under attack should be.

The counters are in process and in fixed windows (like the quotas, domain/quotas.py);
with several instances behind a balancer each counts its own share.
"""

from __future__ import annotations

import contextvars
import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as AsgiScope

from vera_mcp.domain.quotas import Rate, ThrottleLimits

# the address of the request being served (set by AuthThrottleMiddleware, read by the verifier chain)
client_address: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "vera_client_address", default=None
)
MAX_ENTRIES = 10_000  # counters and remembered refusals each; the oldest go first past it

Clock = Callable[[], float]


class AuthThrottledError(Exception):
    """Too many failed tokens from this address or for this key prefix: retry after `retry_after` s."""

    def __init__(self, what: str, rate: Rate, retry_after: float) -> None:
        self.what = what
        self.retry_after = max(1, math.ceil(retry_after))
        super().__init__(f"too many failed authentications {what} ({rate}): retry after {self.retry_after} s")


def key_prefix(token: str) -> str | None:
    """The public prefix of an API key (vera_<prefix>_<secret>); None for other tokens."""
    if not token.startswith("vera_"):
        return None
    prefix, separator, _secret = token.removeprefix("vera_").partition("_")
    return prefix[:32] if separator else ""


class FailedAuthThrottle:
    """The counters and the negative cache; one per server process. Safe under asyncio
    (nothing here awaits)."""

    def __init__(self, limits: ThrottleLimits, *, clock: Clock = time.time) -> None:
        self.limits = limits
        self._clock = clock
        # (what, who) -> (window index, failures counted in it)
        self._failures: OrderedDict[tuple[str, str], tuple[int, int]] = OrderedDict()
        # sha256(token) -> until when it is refused from memory
        self._refused: OrderedDict[bytes, float] = OrderedDict()

    @staticmethod
    def digest(token: str) -> bytes:
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()

    def refused_recently(self, digest: bytes) -> bool:
        until = self._refused.get(digest)
        if until is None:
            return False
        if until <= self._clock():
            del self._refused[digest]
            return False
        return True

    def check(self, address: str | None, prefix: str | None) -> None:
        """AuthThrottledError when the address or the key prefix is over its limit."""
        for what, who, rate in self._subjects(address, prefix):
            window, seconds_left = rate.window(self._clock())
            counted = self._failures.get((what, who))
            if counted is not None and counted[0] == window and counted[1] >= rate.limit:
                raise AuthThrottledError(what, rate, seconds_left)

    def failed(self, digest: bytes, address: str | None, prefix: str | None) -> None:
        """Count one refused token and remember it for negative_cache_s."""
        now = self._clock()
        for what, who, rate in self._subjects(address, prefix):
            window, _ = rate.window(now)
            counted_window, failures = self._failures.pop((what, who), (window, 0))
            self._failures[(what, who)] = (window, failures + 1 if counted_window == window else 1)
        if self.limits.negative_cache_s > 0:
            self._refused.pop(digest, None)
            self._refused[digest] = now + self.limits.negative_cache_s
        for held in (self._failures, self._refused):
            while len(held) > MAX_ENTRIES:
                held.popitem(last=False)

    def _subjects(self, address: str | None, prefix: str | None) -> list[tuple[str, str, Rate]]:
        subjects = []
        if address is not None:
            subjects.append(("from this address", address, self.limits.per_address))
        if prefix is not None:
            subjects.append(("for this key prefix", prefix, self.limits.per_key_prefix))
        return subjects

    def __len__(self) -> int:
        """Entries held (for tests of the memory bound)."""
        return len(self._failures) + len(self._refused)


class AuthThrottleMiddleware:
    """Tells the verifier chain the client's address, and answers its AuthThrottledError with
    429, Retry-After and a JSON body (before the SDK's auth middleware would turn it into a 500)."""

    def __init__(self, app: ASGIApp, on_throttled: Callable[[], None] | None = None) -> None:
        self.app = app
        self.on_throttled = on_throttled

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        token = client_address.set(str(client[0]) if client else None)
        try:
            await self.app(scope, receive, send)
        except AuthThrottledError as error:
            if self.on_throttled is not None:
                self.on_throttled()
            body = {"error": "too_many_requests", "error_description": str(error),
                    "retry_after": error.retry_after}  # fmt: skip
            headers = {"Retry-After": str(error.retry_after)}
            await JSONResponse(body, status_code=429, headers=headers)(scope, receive, send)
        finally:
            client_address.reset(token)
