"""The HTTP API for the tests: `vera api serve` as build_api_app makes it, under uvicorn on
127.0.0.1 in a thread (support/mcp_servers.py's HttpServer), and a small httpx client of it
that sends a caller's bearer token."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from pg_tests.support.databases import Database
from pg_tests.support.mcp_servers import HttpServer, Verifiers, http_server
from vera_mcp.adapters.http_app import build_api_app
from vera_mcp.adapters.instruments import LedgerFactory, no_ledger
from vera_mcp.entrypoints.wiring import default_verifiers


@contextmanager
def api_server(
    db: Database,
    verifiers: Verifiers = default_verifiers,
    *,
    ledger: LedgerFactory = no_ledger,
    **settings: Any,
) -> Iterator[HttpServer]:
    """The HTTP API alone over db (its base URL is `.base`)."""
    with http_server(db, verifiers, ledger=ledger, build=build_api_app, **settings) as server:
        yield server


def api_client(server: HttpServer, token: str | None) -> httpx.Client:
    """An HTTP client of the server, as the caller of token (none: anonymous)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.base, headers=headers, timeout=30)


def without_request_id(body: dict[str, Any]) -> dict[str, Any]:
    """A problem detail without what differs between two requests (to compare refusals)."""
    return {k: v for k, v in body.items() if k != "request_id"}
