"""The web console (/console) in a real browser: Playwright driving the operating system's
Chromium (`python3 dev.py test` installs it with apt-get as root; Playwright's own browser
download is not used). Against `vera api serve`'s app on the seeded two tenants: log in with
a key, approve a tier-3 claim and find it in search, reject a proposal, search with `during`
and read the signal bars, open the graph, a viewer is offered no review action, and another
tenant's ids render the page an id that exists nowhere renders.

With VERA_CONSOLE_SCREENSHOTS=DIR set, each page's screenshot is saved there (docs/console/
holds the ones docs/console.md shows)."""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.api_servers import api_client, api_server
from pg_tests.support.mcp_servers import HttpServer
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source
from vera_mcp.domain.pictures import SIGNALS

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip: .[dev])")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip(
        "no Chromium on this machine (apt-get install chromium; dev.py does so as root)",
        allow_module_level=True,
    )
SHOTS = os.environ.get("VERA_CONSOLE_SCREENSHOTS")
TIMEOUT_MS = 5_000


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[HttpServer]:
    with api_server(world.db) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        # --no-sandbox: the tests run as root in CI, where Chromium's sandbox refuses to start
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def _page(browser: Any, server: HttpServer, key: str) -> Any:
    """A fresh browser context (no cookies) logged in with key, on the review page."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(server.base + "/console/login")
    page.get_by_label("API key or OIDC access token").fill(key)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/console/review"))
    return page


def _shot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def _tier3_claim(world: World, subject: str, obj: str) -> str:
    """A tier-3 claim of tenant A's organisation waiting for review (committed)."""
    org = world.a.organisation
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, org, f"forum {uuid.uuid4().hex[:6]}", 3, kind="markdown")
        episode, _, _ = record_episode(conn, org, source, f"thread-{uuid.uuid4().hex[:6]}", "t")
        said = f"After the move, {subject} runs on {obj} for good."
        conn.execute("select * from vera.store_chunks(%s, %s, %s)", (org, episode, Jsonb([{"text": said}])))
        start = said.index(subject)
        span = {"chunk": 0, "evidence_start": start, "evidence_end": said.index(" for good")}
        [row] = publish(conn, org, episode, [claim(subject, "runs on", obj, **span)])
        conn.commit()
    return str(row["fact_id"])


def test_a_key_logs_in_and_a_bad_one_does_not(browser: Any, server: HttpServer, world: World) -> None:
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(server.base + "/console/review")
    assert "/console/login" in page.url, "no session: the login page"
    _shot(page, "login")
    page.get_by_label("API key or OIDC access token").fill("vera_nope_nothing")
    page.get_by_role("button", name="Log in").click()
    assert "unknown, revoked or expired" in page.get_by_role("alert").inner_text()
    cookies = {c["name"]: c for c in context.cookies()}
    assert "vera_console" not in cookies
    page = _page(browser, server, world.a.owner_key)
    [session] = [c for c in page.context.cookies() if c["name"] == "vera_console"]
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert world.a.owner_key not in str(page.context.cookies()) and world.a.owner_key not in page.content()


def test_approving_a_tier3_claim_makes_it_searchable(browser: Any, server: HttpServer, world: World) -> None:
    fact_id = _tier3_claim(world, "abacus-api", "cluster violet")
    page = _page(browser, server, world.a.owner_key)
    item = page.locator(f'li.item[data-item="{fact_id}"]')
    assert "abacus-api" in item.inner_text() and "tier 3" in item.inner_text()
    # the evidence span highlighted in its episode's passage
    assert item.locator("blockquote.episode mark").inner_text() == "abacus-api runs on cluster violet"
    assert "After the move," in item.locator("blockquote.episode").inner_text()
    _shot(page, "review")
    page.goto(server.base + "/console/search?q=abacus-api+cluster+violet")
    assert page.locator("li.hit", has_text="cluster violet").count() == 0, "not searchable before review"
    page.goto(server.base + "/console/review")
    item = page.locator(f'li.item[data-item="{fact_id}"]')
    item.get_by_label("Note").fill("checked with the team")
    item.get_by_role("button", name="Approve").click()
    assert "1 decided" in page.get_by_role("status").inner_text()
    assert page.locator(f'li.item[data-item="{fact_id}"]').count() == 0
    page.goto(server.base + "/console/search?q=abacus-api+cluster+violet")
    assert page.locator("li.hit", has_text="cluster violet").count() >= 1


def test_rejecting_a_proposal(browser: Any, server: HttpServer, world: World) -> None:
    with api_client(server, world.a.owner_key) as owner:
        made = owner.post("/v1/proposals", json={
            "subject": "quill-api", "predicate": "RUNS_ON", "object": "a toaster",
            "evidence": "quill-api runs on a toaster", "scope": world.a.workspace,
        })  # fmt: skip
        assert made.status_code == 201, made.text
        fact_id = made.json()["fact_id"]
    page = _page(browser, server, world.a.owner_key)
    item = page.locator(f'li.item[data-item="{fact_id}"]')
    assert "proposal" in item.inner_text()
    item.get_by_role("button", name="Reject").click()
    assert "1 decided" in page.get_by_role("status").inner_text()
    assert page.locator(f'li.item[data-item="{fact_id}"]').count() == 0
    with api_client(server, world.a.owner_key) as owner:
        states = owner.get("/v1/proposals", params={"limit": 1000}).json()["proposals"]
    assert {p["lifecycle"] for p in states if p["fact_id"] == fact_id} == {"rejected"}


def test_search_with_during_draws_the_seven_signals(browser: Any, server: HttpServer, world: World) -> None:
    page = _page(browser, server, world.a.owner_key)
    page.goto(server.base + "/console/search")
    page.get_by_label("Query").fill("payments-api cluster blue")
    page.get_by_label("from").fill("2020-01-01")
    page.get_by_label("to").fill("2030-12-31")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url(re.compile(r"during_start=2020-01-01"))
    hit = page.locator("li.hit").first
    assert hit.count() == 1, page.locator("main").inner_text()
    assert "payments-api runs on cluster blue" in hit.inner_text()
    bars = hit.locator("svg.bars g")
    signals = {bars.nth(i).get_attribute("data-signal"): bars.nth(i).get_attribute("data-value") for i in
               range(bars.count())}  # fmt: skip
    assert list(signals) == list(SIGNALS), "the seven signals, in their order"
    assert float(signals["relevance"] or 0) > 0 and float(signals["authority"] or 0) == pytest.approx(1.0)
    assert signals["period"], "a `during` gives the period signal a value"
    assert "during 2020-01-01" in page.get_by_role("status").inner_text()
    assert hit.locator("svg.timeline").count() == 1, "the fact's versions on a time line"
    _shot(page, "search")
    hit.get_by_role("link").first.click()
    page.wait_for_url(re.compile(r"/console/facts/"))
    assert page.locator("svg.timeline").count() == 1
    _shot(page, "fact")


def test_the_graph_draws_the_neighbourhood(browser: Any, server: HttpServer, world: World) -> None:
    page = _page(browser, server, world.a.owner_key)
    page.goto(server.base + "/console/graph")
    page.get_by_label("Entity (a name or an id)").fill("payments-api")
    page.get_by_role("button", name="Show its neighbourhood").click()
    # the form's answer is a new page: its graph is awaited (count() does not wait, and in a full
    # run once counted the new page's document before it held one)
    graph = page.locator("svg.graph")
    graph.wait_for(state="attached")
    assert graph.count() == 1
    names = graph.locator("g.node text").all_text_contents()
    assert "payments-api" in names and "cluster blue" in names
    assert graph.locator("g.edge").count() >= 1
    _shot(page, "graph")
    for name in ("sources", "health"):
        page.goto(server.base + f"/console/{name}")
        assert page.get_by_role("heading", level=1).inner_text() == name.capitalize()
        if (
            name == "health"
        ):  # the owner's queue and graph checks (pg_tests/console/test_console_pages.py: their counts)
            for section in ("Queues and stalled jobs", "Graph drift"):
                assert page.get_by_role("heading", level=2, name=section).count() == 1
            assert "in the scopes you administer" in page.locator("main").inner_text()
        _shot(page, name)


def test_a_viewer_is_offered_no_review_action(browser: Any, server: HttpServer, world: World) -> None:
    _tier3_claim(world, "vellum-api", "cluster grey")
    page = _page(browser, server, world.a.viewer_key)
    assert page.get_by_role("button", name=re.compile("Approve|Reject")).count() == 0
    # the viewer owns a personal scope only: the organisation's queue is not offered
    assert world.a.organisation not in page.locator("main").inner_text()
    # a forged decision (with the viewer's own CSRF token) is refused by SQL, as /v1 refuses it
    csrf = page.locator('input[name="csrf"]').first.get_attribute("value")
    answer = page.request.post(
        server.base + "/console/review",
        form={
            "csrf": csrf or "",
            "decision": "approve",
            "item": f"fact|{world.a.organisation}|{uuid.uuid4()}",
        },
    )
    assert "0 decided, 1 refused" in answer.text()


def test_a_form_without_its_csrf_token_is_refused(browser: Any, server: HttpServer, world: World) -> None:
    page = _page(browser, server, world.a.owner_key)
    answer = page.request.post(server.base + "/console/review", form={"decision": "approve"})
    assert answer.status == 403 and "CSRF" in answer.text()


def _main(page: Any, *ids: str) -> str:
    html = page.locator("main").inner_html()
    for value in ids:
        html = html.replace(value, "ID")
    return html


def test_another_tenants_ids_render_as_ids_that_exist_nowhere(
    browser: Any, server: HttpServer, world: World
) -> None:
    with world.db.admin() as admin:
        fact, entity = admin.execute(
            "select f.fact_id::text, f.subject_entity_id::text from vera.facts f where f.group_id = %s "
            "and f.fact_text = 'payments-api runs on cluster blue'",
            (world.a.organisation,),
        ).fetchone()  # type: ignore[misc]
    nowhere = str(uuid.uuid4())
    a = _page(browser, server, world.a.owner_key)
    a.goto(server.base + f"/console/facts/{fact}")
    assert "payments-api runs on cluster blue" in a.locator("h1").inner_text(), "tenant A reads its own"
    b = _page(browser, server, world.b.owner_key)
    for path in ("/console/facts/{}", "/console/graph?entity={}"):
        stolen = b.goto(server.base + path.format(fact if "facts" in path else entity))
        theirs = _main(b, fact, entity)
        missing = b.goto(server.base + path.format(nowhere))
        assert stolen is not None and missing is not None and stolen.status == missing.status
        assert theirs == _main(b, nowhere), path


def test_a_claim_shows_the_current_value_it_would_contradict(
    browser: Any, server: HttpServer, world: World
) -> None:
    fact_id = _tier3_claim(world, "payments-api", "cluster green")
    page = _page(browser, server, world.a.owner_key)
    item = page.locator(f'li.item[data-item="{fact_id}"]')
    assert item.locator("mark").inner_text() == "payments-api runs on cluster green"
    assert "cluster blue" in item.locator("li.current").first.inner_text()
