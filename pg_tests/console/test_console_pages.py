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
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source

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


def _queue_jobs(world: World) -> list[int]:
    """A's organisation: one embed job due and one project_to_graph job running for a worker silent
    for an hour (stalled); B's: three embed jobs due. A graph check with drift for A, none for B."""
    with world.db.admin() as admin:
        admin.execute("set search_path = procrastinate, public")  # its triggers name its tables unqualified
        silent = admin.execute(
            "insert into procrastinate.procrastinate_workers (last_heartbeat) values (now() - interval '1 hour')"
            " returning id"
        ).fetchone()[0]  # type: ignore[index]
        rows = [
            (world.a.organisation, "embed", "todo", None),
            (world.a.organisation, "project_to_graph", "doing", silent),
            *((world.b.organisation, "embed", "todo", None) for _ in range(3)),
        ]
        ids = [
            admin.execute(
                "insert into procrastinate.procrastinate_jobs (queue_name, task_name, args, status, worker_id)"
                " values (%s, 'vera.' || %s, jsonb_build_object('group_id', %s::text), %s, %s) returning id",
                (queue, queue, group, status, worker),
            ).fetchone()[0]  # type: ignore[index]
            for group, queue, status, worker in rows
        ]
        admin.execute(
            "insert into vera.graph_checks (group_id, backend, checked_at, sql_edges, graph_edges, sql_nodes,"
            " graph_nodes, sql_digest, graph_digest, drift) values"
            " (%s, 'falkordb', now(), 3, 2, 4, 4, 'x', 'y', 'edges differ: 1 missing in the graph')",
            (world.a.organisation,),
        )
    return ids


def test_the_health_page_shows_the_callers_queue_stalled_jobs_and_drift(
    server: HttpServer, world: World
) -> None:
    ids = _queue_jobs(world)
    try:
        with logged_in(server, world.a.owner_key) as client:
            page = client.get("/console/health")
        assert page.status_code == 200
        text = re.sub(r"<[^>]+>", " ", page.text)
        text = re.sub(r"\s+", " ", text)
        # A's own: 2 jobs, 1 of them stalled; B's three jobs are not counted
        assert "2 jobs queued or running in the scopes you administer; 1 stalled" in text
        assert "Acme embed todo 1 0" in text and "Acme project_to_graph doing 1 1" in text
        assert "1 of 1 checked scope drifted" in text and "edges differ: 1 missing in the graph" in text
        assert "Bravo" not in text and world.b.organisation not in page.text
        with logged_in(server, world.b.owner_key) as client:
            theirs = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", client.get("/console/health").text))
        assert "3 jobs queued or running in the scopes you administer; 0 stalled" in theirs
        assert "No graph check has been recorded" in theirs and "edges differ" not in theirs
        # A's viewer administers only its personal scope: none of the organisation's jobs
        with logged_in(server, world.a.viewer_key) as client:
            viewer = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", client.get("/console/health").text))
        assert "0 jobs queued or running in the scopes you administer; 0 stalled" in viewer
        assert "edges differ" not in viewer
    finally:
        with world.db.admin() as admin:
            admin.execute("set search_path = procrastinate, public")
            admin.execute("delete from procrastinate.procrastinate_jobs where id = any(%s)", (ids,))
            admin.execute("delete from vera.graph_checks where group_id = %s", (world.a.organisation,))


def test_the_health_page_shows_the_callers_model_usage_and_cost(server: HttpServer, world: World) -> None:
    """What the worker recorded for A's organisation (vera.record_model_usage, as a job does)
    is in A's owner's table, never in B's owner's page."""
    usage = (
        '[{"provider": "llm", "model": "probe-chat-model", "purpose": "extract", "calls": 3,'
        ' "failed_calls": 1, "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.0125}]'
    )
    with world.db.connect("vera_worker") as worker:
        worker.execute("select vera.record_model_usage(%s, %s::jsonb)", (world.a.organisation, usage))
        worker.commit()
    try:
        with logged_in(server, world.a.owner_key) as client:
            page = client.get("/console/health")
        assert page.status_code == 200
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.text))
        assert "Model usage and cost (30 days)" in text
        assert "Acme extract llm probe-chat-model 3 (1) 1200 300 0.0125" in text
        assert "About $0.0125 in the last 30 days" in text
        with logged_in(server, world.b.owner_key) as client:
            theirs = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", client.get("/console/health").text))
        assert "Model usage and cost (30 days)" in theirs and "probe-chat-model" not in theirs
        assert "No hosted model was called for the scopes you administer" in theirs
    finally:
        with world.db.admin() as admin:
            admin.execute("delete from vera.model_usage where group_id = %s", (world.a.organisation,))


def test_a_claim_stated_as_a_field_names_its_episode_in_the_review_queue(
    server: HttpServer, world: World
) -> None:
    """A claim from a record's field (front matter, a CSV column) cites an episode but no span of
    text: the queue names that episode instead of saying none was recorded."""
    org = world.a.organisation
    record = f"record-{uuid.uuid4().hex[:6]}"  # the fixture's episodes have no title: named by id
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, org, f"forum {uuid.uuid4().hex[:6]}", 3, kind="markdown")
        episode, _, _ = record_episode(conn, org, source, record, "fieldset-api: cluster ochre")
        publish(conn, org, episode, [claim("fieldset-api", "runs on", "cluster ochre")])
        conn.commit()
    with logged_in(server, world.a.owner_key) as client:
        page = client.get("/console/review").text
    item = page[page.index("fieldset-api runs on cluster ochre") :]
    item = item[: item.index("</li>")]
    assert "Stated as a field of" in item and record in item, item
    assert "No episode recorded" not in item
