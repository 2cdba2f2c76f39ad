"""The Confluence connector through the real worker against the local
Confluence Cloud v2 stand-in (tests/saas_standins.py: a space's pages newest
version first, `_links.next` and `Link` cursor pagination, labels, Basic and
Bearer auth, the v2 error shape): a first run in pages with storage format made
Markdown, a re-run with nothing changed that reads no body, an incremental run
by version, deletion found by the prune, a 429 with Retry-After, an expired
token (one clear line), a run that dies mid-way and the next resuming (nothing
lost or doubled), bad pages skipped by name and counted, labels read by label
past a run's first pages, the request rate per source (refused out of range),
and the secret in no log, job row or error."""

from __future__ import annotations

import base64
import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.saas_standins import CONFLUENCE_TOKEN, JIRA_EMAIL, ConfluenceStandin
from tests.source_standins import serving
from tests.standins import Reply

from pg_tests.support.connector_runs import (
    FAST,
    assert_nowhere,
    episode_versions,
    failing_request,
    ingest_again,
    register,
    search_texts,
    source_status,
)
from pg_tests.support.ingesting import run_worker
from pg_tests.support.seed import World, create_project
from vera_client.api import sources as sources_api
from vera_client.domain.errors import InvalidArgumentError

TOKEN_ENV = "VERA_TEST_CONFLUENCE_TOKEN"
ENVIRON = {TOKEN_ENV: CONFLUENCE_TOKEN}
PAGES = "/wiki/api/v2/spaces/98304/pages"

BODY = (
    "<h1>Ledger runbook</h1><p>The ledger export runs at <strong>02:00</strong> every night.</p>"
    '<h2>Recovery</h2><p>Restart the exporter, then see <ac:link><ri:page ri:content-title="Exporter FAQ" />'
    '</ac:link>.</p><ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>'
    "<ac:plain-text-body><![CDATA[systemctl restart exporter]]></ac:plain-text-body></ac:structured-macro>"
    "<script>alert('x')</script>"
)


def _page(
    page_id: int, title: str, *, number: int, at: str, body: str | None = None, **more: Any
) -> dict[str, Any]:
    return {
        "id": str(page_id), "status": "current", "title": title, "spaceId": "98304", "parentId": None,
        "parentType": None, "authorId": "557058:aa", "createdAt": "2026-01-01T00:00:00.000Z",
        "version": {"number": number, "createdAt": at, "authorId": "557058:bb", "minorEdit": False},
        "body": {"storage": {"value": body or f"<p>{title} is a page of the space.</p>", "representation": "storage"}},
        "_links": {"webui": f"/spaces/OPS/pages/{page_id}", "tinyui": f"/x/{page_id}"},
        **more,
    }  # fmt: skip


def _pages() -> dict[str, dict[str, Any]]:
    found = [
        _page(
            1,
            "Ledger runbook",
            number=3,
            at="2026-01-01T10:00:00.000Z",
            body=BODY,
            labels=["runbook", "ledger"],
        ),
        _page(2, "Exporter FAQ", number=1, at="2026-01-02T10:00:00.000Z", parentId="1", parentType="page"),
        _page(3, "On-call rota", number=7, at="2026-01-03T10:00:00.000Z"),
        _page(4, "Billing overview", number=2, at="2026-01-04T10:00:00.000Z"),
        _page(5, "Search overview", number=1, at="2026-01-05T10:00:00.000Z"),
    ]
    return {page["id"]: page for page in found}


@pytest.fixture
def confluence() -> Iterator[ConfluenceStandin]:
    standin = ConfluenceStandin(pages=_pages())
    with serving(standin, ""):
        yield standin


def _register(world: World, group: str, confluence: ConfluenceStandin, **config: Any) -> sources_api.Source:
    settings = {"url": confluence.url, "space_id": "98304", "email": JIRA_EMAIL, "page_size": 2,
                "prune_interval_s": 0, **config}  # fmt: skip
    return register(world, group, "confluence", "wiki ops", 2, TOKEN_ENV, settings)


def _listings(confluence: ConfluenceStandin) -> list[dict[str, str]]:
    """The poll's listing requests (the prune's slim listing is sorted by id)."""
    return [r.query for r in confluence.requests if r.path == PAGES and r.query.get("sort") != "id"]


def test_first_run_no_change_incremental_run_and_prune(
    world: World, confluence: ConfluenceStandin, tmp_path: Path
) -> None:
    group = create_project(world, "confluence-runs")
    source = _register(world, group, confluence)

    [first] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (first.scanned, first.ingested, first.failed, first.skipped) == (5, 5, [], [])
    assert len(_listings(confluence)) == 3  # five pages in pages of two
    assert _listings(confluence)[0] == {"sort": "-modified-date", "limit": "2", "body-format": "storage"}
    found = search_texts(world, group, "ledger export night")
    assert any("The ledger export runs at **02:00** every night." in t for t in found)
    recovery = " ".join(search_texts(world, group, "restart exporter"))
    assert "Exporter FAQ" in recovery and "systemctl restart exporter" in recovery
    assert "alert" not in recovery and "bash" not in recovery  # the script and the macro's parameter
    assert "Confluence page 1 has label runbook" in search_texts(world, group, "Ledger runbook label")
    assert "Confluence page 1 is titled Ledger runbook" in search_texts(world, group, "Ledger runbook titled")
    # the hierarchy is the pages' own entities: the child's parent is the parent page's subject
    with world.db.admin() as admin:
        [(parent, subject)] = admin.execute(
            "select child.object_entity_id, parent.subject_entity_id from vera.facts child, vera.facts parent "
            "where child.group_id = %(g)s and parent.group_id = %(g)s and child.predicate = 'PARENT_PAGE' "
            "and parent.predicate = 'TITLE' and parent.object_value = 'Ledger runbook'",
            {"g": group},
        ).fetchall()
    assert parent == subject
    with world.db.admin() as admin:
        [(uri,)] = admin.execute(
            "select uri from vera.episodes where group_id = %s and external_id = '1'", (group,)
        ).fetchall()
    assert uri == f"{confluence.url}/wiki/spaces/OPS/pages/1"
    assert source_status(world, group).cursor_position == {"since": "2026-01-05T10:00:00+00:00"}

    # nothing changed: one request for the newest page, without its body
    confluence.requests.clear()
    ingest_again(world, source)
    [second] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (second.scanned, second.ingested) == (0, 0)
    assert _listings(confluence) == [{"sort": "-modified-date", "limit": "1"}]
    assert not any("/labels" in r.path for r in confluence.requests)

    # a new version of one page: only it is read
    confluence.pages["3"] = _page(3, "On-call rota", number=8, at="2026-02-01T10:00:00.000Z",
                                  body="<p>Mai is on call this week.</p>")  # fmt: skip
    confluence.requests.clear()
    ingest_again(world, source)
    [third] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (third.scanned, third.ingested) == (1, 1)
    assert "Mai is on call this week." in search_texts(world, group, "on call this week")

    # deleted at the source: the prune retracts it
    del confluence.pages["5"]
    ingest_again(world, source)
    [fourth] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (fourth.retracted, fourth.pruned) == (1, True)
    assert "Search overview is a page of the space." not in search_texts(
        world, group, "Search overview page space"
    )


def test_a_429_is_waited_out_as_retry_after_asks(
    world: World, confluence: ConfluenceStandin, tmp_path: Path
) -> None:
    group = create_project(world, "confluence-429")
    _register(world, group, confluence)
    confluence.script(PAGES, Reply(status=429, headers={"Retry-After": "1"},
                                   body=b'{"errors": [{"status": 429, "code": "TOO_MANY_REQUESTS"}]}'))  # fmt: skip
    started = time.monotonic()
    [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert time.monotonic() - started >= 1.0
    assert report.ingested == 5
    assert len(_listings(confluence)) == 4  # the refused first page, asked again, then two more


def test_an_expired_token_fails_the_run_with_one_clear_line(
    world: World, confluence: ConfluenceStandin, tmp_path: Path
) -> None:
    group = create_project(world, "confluence-expired")
    _register(world, group, confluence)
    assert run_worker(world.db, tmp_path, environ={TOKEN_ENV: "an-expired-token"}, resilience=FAST) == []
    status = source_status(world, group)
    assert status.last_status == "failed"
    assert status.error == (
        f"source 'wiki ops': the server refused the token in ${TOKEN_ENV} (HTTP 401): "
        "renew it or check its permissions"
    )
    assert len(_listings(confluence)) == 1  # a refused token is not retried


def test_a_run_that_dies_mid_way_resumes_after_its_last_committed_page(
    world: World, confluence: ConfluenceStandin, tmp_path: Path
) -> None:
    group = create_project(world, "confluence-crash")
    source = _register(world, group, confluence)
    confluence.intercept = failing_request(
        PAGES, 2, b'{"errors": [{"status": 400, "code": "INVALID_REQUEST_PARAMETER"}]}'
    )
    assert run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST) == []
    status = source_status(world, group)
    assert status.last_status == "failed" and "HTTP 400" in (status.error or "")
    position = status.cursor_position or {}
    assert set(position) == {"next", "high"} and position["high"] == "2026-01-05T10:00:00+00:00"

    confluence.intercept = None
    confluence.requests.clear()
    ingest_again(world, source)
    [resumed] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert "cursor" in _listings(confluence)[0]  # the next link of the committed page
    assert resumed.ingested == 3
    assert episode_versions(world, group) == [
        (str(n), 1) for n in range(1, 6)
    ]  # nothing lost, nothing doubled


def test_bad_pages_are_skipped_by_name_and_counted(
    world: World, confluence: ConfluenceStandin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    group = create_project(world, "confluence-bad")
    confluence.pages["6"] = _page(6, "Huge", number=1, at="2026-01-06T10:00:00.000Z",
                                  body="<p>" + "x" * 5_000_000 + "</p>")  # fmt: skip
    confluence.pages["7"] = {**_page(7, "No body", number=1, at="2026-01-07T10:00:00.000Z"), "body": {}}
    odd = "9" * 31  # not a page's id: it would name the page's entity and go in paths
    confluence.pages[odd] = {**_page(8, "Odd id", number=1, at="2026-01-08T10:00:00.000Z"), "id": odd}
    # a parent that is not a page's id makes no PARENT_PAGE claim; the page is read
    confluence.pages["9"] = {**_page(9, "Odd parent", number=1, at="2026-01-09T10:00:00.000Z"),
                             "parentId": "<script>"}  # fmt: skip
    _register(world, group, confluence)
    with caplog.at_level(logging.WARNING):
        [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert report.ingested == 6
    assert sorted(key for key, _ in report.skipped) == ["6", "7", odd]
    assert "over the 1,000,000 of one page" in caplog.text
    assert "skipped 7: no storage-format body" in caplog.text
    assert "an id that is not a page's (1 to 30 digits)" in caplog.text
    assert source_status(world, group).skipped == 3
    with world.db.admin() as admin:
        [(parents,)] = admin.execute(
            "select count(*) from vera.facts where group_id = %s and predicate = 'PARENT_PAGE'", (group,)
        ).fetchall()
    assert parents == 1  # the five pages': Exporter FAQ under Ledger runbook


def test_the_secret_is_in_no_log_job_row_run_row_or_error(
    world: World, confluence: ConfluenceStandin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    group = create_project(world, "confluence-secret")
    source = _register(world, group, confluence)
    basic = base64.b64encode(f"{JIRA_EMAIL}:{CONFLUENCE_TOKEN}".encode()).decode()
    confluence.pages["6"] = _page(6, "New", number=1, at="2026-03-01T10:00:00.000Z")
    with caplog.at_level(logging.DEBUG):
        run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
        confluence.pages["7"] = _page(7, "Newer", number=1, at="2026-03-02T10:00:00.000Z")
        confluence.script(
            PAGES,
            Reply(status=400, body=f'{{"errors": [{{"title": "bad {CONFLUENCE_TOKEN} {basic}"}}]}}'.encode()),
        )
        ingest_again(world, source)
        run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    error = source_status(world, group).error or ""
    assert "[secret]" in error and CONFLUENCE_TOKEN not in error and basic not in error
    assert all(CONFLUENCE_TOKEN not in str(r.query) for r in confluence.requests)
    assert any(r.headers.get("authorization") == f"Basic {basic}" for r in confluence.requests)
    assert_nowhere(world, caplog.text, CONFLUENCE_TOKEN, basic)


def _requests(confluence: ConfluenceStandin, pattern: str) -> int:
    return sum(1 for r in confluence.requests if re.fullmatch(pattern, r.path))


def test_labels_are_read_by_label_past_a_runs_first_pages(
    world: World, confluence: ConfluenceStandin, tmp_path: Path
) -> None:
    group = create_project(world, "confluence-labels")
    confluence.pages = {
        str(n): _page(n, f"Service {n}", number=1, at=f"2026-01-01T10:{n:02d}:00.000Z",
                      labels=[name for name, every in (("billing", 2), ("search", 3), ("tier-1", 5)) if n % every == 0])
        for n in range(1, 41)
    }  # fmt: skip
    source = _register(world, group, confluence, page_size=10)
    [first] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert first.ingested == 40
    # the newest 20 pages: their labels one page at a time; past 25 pages, the space's three
    # labels are fewer than the pages asked: each label's pages, and no more one by one
    assert _requests(confluence, r"/wiki/api/v2/pages/[0-9]+/labels") == 20
    assert _requests(confluence, r"/wiki/api/v2/spaces/98304/content/labels") == 1
    assert _requests(confluence, r"/wiki/api/v2/labels/[0-9]+/pages") == 3
    # the same labels either way: page 30 (asked one by one), page 10 (from the labels' pages)
    with world.db.admin() as admin:
        facts = {
            row[0] for row in admin.execute(
                "select f.fact_text from vera.facts f where f.group_id = %s and f.predicate = 'HAS_LABEL'",
                (group,),
            )
        }  # fmt: skip
    assert {f for f in facts if f.startswith("Confluence page 30 ")} == {
        "Confluence page 30 has label billing",
        "Confluence page 30 has label search",
        "Confluence page 30 has label tier-1",
    }  # fmt: skip
    assert {f for f in facts if f.startswith("Confluence page 10 ")} == {
        "Confluence page 10 has label billing", "Confluence page 10 has label tier-1"
    }  # fmt: skip
    assert len(facts) == 20 + 13 + 8

    # a small incremental run: the changed page's labels by one request
    confluence.pages["7"] = _page(7, "Service 7", number=2, at="2026-02-01T10:00:00.000Z", labels=["search"])
    confluence.requests.clear()
    ingest_again(world, source)
    [second] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (second.ingested, second.claims) == (1, 3)  # TITLE, HAS_LABEL search, LAST_MODIFIED_BY
    assert [r.path for r in confluence.requests if "label" in r.path] == ["/wiki/api/v2/pages/7/labels"]


def test_the_request_rate_is_a_setting_of_the_source(
    world: World, confluence: ConfluenceStandin, tmp_path: Path
) -> None:
    group = create_project(world, "confluence-rate")
    for bad in (0, -1, 5000, "fast", True):
        with pytest.raises(
            InvalidArgumentError, match=r"config requests_per_second must be a number from 0\.1 to 1,000"
        ):
            _register(world, group, confluence, requests_per_second=bad)
    _register(world, group, confluence, requests_per_second=2.5)
    started = time.monotonic()
    [report] = run_worker(
        world.db, tmp_path, environ=ENVIRON, resilience=FAST.model_copy(update={"burst": 1})
    )
    # a bucket of one refilled 2.5 times a second: 3 listings and 5 label requests (one by one)
    # after the first take at least 7 / 2.5 s
    assert report.ingested == 5
    assert time.monotonic() - started >= 2.8
