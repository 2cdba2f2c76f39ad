"""The web console's pages over plain HTTP (no browser): each renders for a logged-in owner,
the login sets a session cookie as docs/console.md says, a form without its CSRF token is
refused, and a page without a session sends the browser to the login."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from pg_tests.support.api_servers import api_server
from pg_tests.support.mcp_servers import HttpServer, http_server
from pg_tests.support.seed import World

PAGES = (
    "review",
    "search?q=payments-api",
    "search?q=payments-api+cluster+blue&during_start=2020-01-01&during_end=2030-12-31&as_of=",
    "sources",
    "graph?entity=payments-api",
    "health",
)


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[HttpServer]:
    with api_server(world.db) as running:
        yield running


@contextmanager
def logged_in(server: HttpServer, key: str) -> Iterator[httpx.Client]:
    """An HTTP client holding a console session of key."""
    with httpx.Client(base_url=server.base, timeout=30) as client:
        yield _log_in(client, key)


def _log_in(client: httpx.Client, key: str) -> httpx.Client:
    form = client.get("/console/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None
    answer = client.post("/console/login", data={"csrf": csrf.group(1), "token": key})
    assert answer.status_code == 303 and answer.headers["location"] == "/console/review", answer.text
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    return client


def test_without_a_session_a_page_sends_to_the_login(server: HttpServer) -> None:
    answer = httpx.get(server.base + "/console/search")
    assert answer.status_code == 303 and answer.headers["location"] == "/console/login"


@pytest.mark.parametrize("page", PAGES)
def test_each_page_renders_for_an_owner(server: HttpServer, world: World, page: str) -> None:
    with logged_in(server, world.a.owner_key) as client:
        answer = client.get(f"/console/{page}")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in answer.headers["content-security-policy"]
    assert "http://" not in answer.text.replace(server.base, "") and "https://" not in answer.text


def test_a_form_without_its_csrf_token_is_refused(server: HttpServer, world: World) -> None:
    with logged_in(server, world.a.owner_key) as client:
        answer = client.post("/console/review", data={"decision": "approve"})
        assert answer.status_code == 403 and "CSRF" in answer.text
        refused = client.post("/console/login", data={"token": world.a.owner_key})
        assert refused.status_code == 403


def test_logging_out_ends_the_session(server: HttpServer, world: World) -> None:
    with logged_in(server, world.a.owner_key) as client:
        page = client.get("/console/review").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        assert client.post("/console/logout", data={"csrf": csrf.group(1)}).status_code == 303
        assert client.get("/console/review").headers["location"] == "/console/login"


def test_the_console_beside_mcp_in_the_mcp_servers_app(world: World) -> None:
    with http_server(world.db, api=True) as both, httpx.Client(base_url=both.base, timeout=30) as client:
        _log_in(client, world.a.owner_key)
        page = client.get("/console/search", params={"q": "payments-api"})
        assert page.status_code == 200 and "payments-api runs on cluster blue" in page.text
        # the console's paths are counted under their templates, never under the id asked
        client.get(f"/console/facts/{uuid.uuid4()}")
        metrics = client.get("/metrics").text
        assert 'route="/console/facts/{fact_id}"' in metrics and 'route="/console/search"' in metrics


def test_the_api_counts_paths_with_ids_under_their_template(server: HttpServer, world: World) -> None:
    headers = {"Authorization": f"Bearer {world.a.owner_key}"}
    for _ in range(2):
        httpx.get(f"{server.base}/v1/facts/{uuid.uuid4()}", headers=headers)
    metrics = httpx.get(f"{server.base}/metrics").text
    assert 'vera_mcp_http_requests_total{route="/v1/facts/{fact_id}",status="404"} 2.0' in metrics
