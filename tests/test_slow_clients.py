"""Slow clients cannot hold the HTTP server: real sockets against uvicorn on 127.0.0.1 with
the MCP server's own configuration (uvicorn_config): a head or body sent a byte at a time,
or nothing at all, is cut off at its deadline while normal requests are answered, and
connections past the cap are refused at once."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from vera_mcp.adapters.http_app import uvicorn_config
from vera_mcp.config import McpSettings

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.5
# the generous bound a cut-off connection must see its end within (the deadline plus slack)
CLOSED_WITHIN_S = 6.0


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"bytes": len(await request.body())})


async def _ping(_request: Request) -> JSONResponse:
    return JSONResponse({"pong": True})


APP = Starlette(routes=[Route("/ping", _ping), Route("/echo", _echo, methods=["POST"])])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _server(**limits: Any) -> Iterator[str]:
    limits = {
        "header_timeout_s": HEADER_TIMEOUT_S,
        "body_timeout_s": BODY_TIMEOUT_S,
        "keep_alive_s": 1.0,
    } | limits
    settings = McpSettings(host="127.0.0.1", port=_free_port(), **limits)
    server = uvicorn.Server(uvicorn_config(APP, settings, log_level="error"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{settings.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _trickle(url: str, first: bytes, drip: bytes, *, every_s: float = 0.25, give_up_s: float = 10.0) -> float:
    """Send `first`, then one byte of `drip` every `every_s`; seconds until the server closed."""
    port = int(url.rsplit(":", 1)[1])
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.settimeout(every_s)
        try:
            conn.sendall(first)
            for byte in drip:
                conn.sendall(bytes([byte]))
                try:
                    if conn.recv(4096) == b"":
                        break
                except TimeoutError:
                    pass
                if time.monotonic() - started > give_up_s:
                    break
        except (ConnectionResetError, BrokenPipeError):
            pass
    return time.monotonic() - started


SLOW_HEAD = (b"GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: " + b"a" * 100)
SLOW_BODY = (b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n", b"b" * 100)


def _silent(url: str) -> float:
    port = int(url.rsplit(":", 1)[1])
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.settimeout(10.0)
        with suppress(TimeoutError, ConnectionResetError):
            conn.recv(4096)
    return time.monotonic() - started


def test_slow_heads_slow_bodies_and_silent_connections_are_closed_while_requests_succeed() -> None:
    with _server() as url, ThreadPoolExecutor(max_workers=60) as pool:
        slow = [pool.submit(_trickle, url, *SLOW_HEAD) for _ in range(20)]
        slow += [pool.submit(_trickle, url, *SLOW_BODY) for _ in range(20)]
        slow += [pool.submit(_silent, url) for _ in range(10)]
        time.sleep(0.3)  # the slow connections are open now
        answer = httpx.get(f"{url}/ping", timeout=5)
        assert answer.status_code == 200 and answer.json() == {"pong": True}
        posted = httpx.post(f"{url}/echo", content=b"x" * 1000, timeout=5)
        assert posted.json() == {"bytes": 1000}
        durations = [future.result() for future in slow]
    assert max(durations) < CLOSED_WITHIN_S, sorted(durations)
    assert min(durations) >= HEADER_TIMEOUT_S * 0.9  # cut at the deadline, not before


def test_a_kept_alive_connection_gets_a_fresh_head_deadline() -> None:
    """A client that sends one good request and then trickles the next head is cut off too."""
    with _server(keep_alive_s=30.0) as url:  # not cut by the keep-alive timeout: by the head's
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as conn:
            conn.sendall(b"GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            conn.settimeout(5)
            assert b"200 OK" in conn.recv(4096)
            started = time.monotonic()
            conn.settimeout(0.25)
            closed = False
            for byte in b"GET /ping HTTP/1.1\r\nX-Slow: " + b"a" * 100:
                try:
                    conn.sendall(bytes([byte]))
                    if conn.recv(4096) == b"":
                        closed = True
                        break
                except TimeoutError:
                    pass
                except (ConnectionResetError, BrokenPipeError):
                    closed = True
                    break
            assert closed and time.monotonic() - started < CLOSED_WITHIN_S


def test_connections_past_the_cap_are_refused_at_once() -> None:
    with _server(max_connections=5) as url:
        port = int(url.rsplit(":", 1)[1])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
        try:
            time.sleep(0.2)
            with socket.create_connection(("127.0.0.1", port)) as extra:
                extra.settimeout(5)
                assert extra.recv(4096).startswith(b"HTTP/1.1 503")
        finally:
            for conn in held:
                conn.close()
        time.sleep(0.2)
        assert httpx.get(f"{url}/ping", timeout=5).status_code == 200


def test_the_limits_have_documented_defaults() -> None:
    settings = McpSettings()
    assert (settings.header_timeout_s, settings.body_timeout_s, settings.keep_alive_s) == (10.0, 30.0, 5.0)
    assert (settings.max_connections, settings.max_header_bytes) == (512, 16 * 1024)
    with pytest.raises(ValueError, match="greater than 0"):
        McpSettings(header_timeout_s=0)
