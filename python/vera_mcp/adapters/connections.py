"""What one HTTP connection may hold of the server: uvicorn's h11 protocol with a deadline
for each request's head and body, and a cap on open connections.

uvicorn bounds the idle time between requests (timeout_keep_alive) and the size of an
unfinished head (h11_max_incomplete_event_size), but nothing else: a client that opens a
connection and sends nothing, or sends a header byte a second, or a body byte a second,
keeps its socket (a file descriptor) for as long as it likes. `guarded_protocol` adds:

- the head of every request (request line and headers) must be complete within
  `header_timeout_s` of the connection opening, or of the request's first byte on a
  kept-alive connection;
- its body must be complete within `body_timeout_s` of the head;
- a connection past `max_connections` open at once is answered 503 and closed at once.

A connection over its deadline is closed; an application waiting for the body sees the
client disconnect. The clock stops while the application works on a request: a slow
tool call is bounded by request_timeout_s, not by these.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("vera_mcp.http")

_OVERLOADED = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\nretry-after: 1\r\ncontent-length: 25\r\n\r\ntoo many open connections"
)


def guarded_protocol(
    *, header_timeout_s: float, body_timeout_s: float, max_connections: int
) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the deadlines and the connection cap above (Config(http=...))."""

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _phase: str = ""  # "head", "body" or "" (the application has the request, or idle between them)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                log.warning("refused a connection: %d are open (max_connections)", len(self.connections) - 1)
                transport.write(_OVERLOADED)
                transport.close()
                return
            self._arm("head", header_timeout_s)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # idle until the next request's first byte: uvicorn's keep-alive timeout governs that
            self._arm("", None)
            self._follow(idle=True)

        def connection_lost(self, exc: Exception | None) -> None:
            self._arm("", None)
            super().connection_lost(exc)

        def _follow(self, *, idle: bool = False) -> None:
            """Move the deadline to the phase the request is in after what just happened."""
            if self.transport is None or self.transport.is_closing():
                self._arm("", None)
                return
            cycle: Any = self.cycle
            if cycle is None or cycle.response_complete:
                if not idle and self._phase != "head":  # the first byte of a next request
                    self._arm("head", header_timeout_s)
            elif cycle.more_body:
                if self._phase != "body":
                    self._arm("body", body_timeout_s)
            elif self._phase:
                self._arm("", None)

        def _arm(self, phase: str, seconds: float | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            self._phase = phase
            if seconds is not None:
                self._deadline = self.loop.call_later(seconds, self._expired, phase, seconds)

        def _expired(self, phase: str, seconds: float) -> None:
            self._deadline = None
            if self.transport is not None and not self.transport.is_closing():
                what = "request head" if phase == "head" else "request body"
                client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
                log.info("closed the connection of %s: its %s took over %g s", client, what, seconds)
                self.transport.close()

    return GuardedH11Protocol
