"""The Jira connector through the real worker against the local Jira Cloud
stand-in (tests/saas_standins.py: the enhanced JQL search, nextPageToken
pagination, Basic and Bearer auth, Jira's error shape): a first run in pages,
an incremental run from the position's minute, the changelog's history as
claims with their validity, deletion found by the prune, a 429 with
Retry-After, an expired token (one clear line), a run that dies mid-way and the
next resuming (nothing lost or doubled), bad issues skipped by name and
counted, and the secret (and its Basic encoding) in no log, job row or error."""

from __future__ import annotations

import base64
import datetime as dt
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.saas_standins import JIRA_EMAIL, JIRA_TOKEN, JiraStandin, jira_time
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

TOKEN_ENV = "VERA_TEST_JIRA_TOKEN"
ENVIRON = {TOKEN_ENV: JIRA_TOKEN}
T0 = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)
SEARCH = "/rest/api/3/search/jql"


def _adf(*paragraphs: str) -> dict[str, Any]:
    return {"type": "doc", "version": 1, "content": [
        {"type": "paragraph", "content": [{"type": "text", "text": p}]} for p in paragraphs]}  # fmt: skip


def _issue(number: int, status: str, *, updated: dt.datetime, **fields: Any) -> dict[str, Any]:
    return {
        "id": str(10000 + number),
        "key": f"PROJ-{number}",
        "fields": {
            "summary": f"Issue number {number}",
            "status": {"name": status},
            "assignee": {"displayName": "Mai Tran", "accountId": "5b10a"},
            "priority": {"name": "High"},
            "issuetype": {"name": "Bug"},
            "project": {"key": "PROJ"},
            "components": [{"name": "Billing"}],
            "fixVersions": [],
            "issuelinks": [],
            "created": jira_time(T0),
            "updated": jira_time(updated),
            "customfield_10042": {"internal": "not mapped"},
            **fields,
        },
    }


def _issues() -> dict[str, dict[str, Any]]:
    first = _issue(
        1, "In Progress", updated=T0 + dt.timedelta(hours=1),
        description=_adf("The ledger export drops rows after midnight."),
        comment={"comments": [{"author": {"displayName": "Linh"}, "created": jira_time(T0),
                               "body": _adf("Seen again on the Hanoi cluster.")}]},
        fixVersions=[{"name": "2.4.0"}],
        issuelinks=[{"type": {"name": "Blocks", "inward": "is blocked by", "outward": "blocks"},
                     "outwardIssue": {"key": "PROJ-2"}}],
    )  # fmt: skip
    first["changelog"] = {"startAt": 0, "maxResults": 1, "total": 1, "histories": [
        {"id": "1", "created": jira_time(T0 + dt.timedelta(minutes=30)),
         "items": [{"field": "status", "fieldtype": "jira", "fieldId": "status", "from": "1",
                    "fromString": "To Do", "to": "3", "toString": "In Progress"}]}]}  # fmt: skip
    found = [first] + [_issue(n, "To Do", updated=T0 + dt.timedelta(hours=n)) for n in range(2, 6)]
    return {issue["key"]: issue for issue in found}


@pytest.fixture
def jira() -> Iterator[JiraStandin]:
    standin = JiraStandin(issues=_issues())
    with serving(standin, ""):
        yield standin


def _register(world: World, group: str, jira: JiraStandin, **config: Any) -> sources_api.Source:
    settings = {"url": jira.url, "project": "PROJ", "email": JIRA_EMAIL, "page_size": 2,
                "prune_interval_s": 0, **config}  # fmt: skip
    return register(world, group, "jira", "jira proj", 2, TOKEN_ENV, settings)


def _searches(jira: JiraStandin) -> list[dict[str, str]]:
    return [r.query for r in jira.requests if r.path == SEARCH and r.query.get("fields") != "key"]


def test_first_run_incremental_run_history_and_prune(world: World, jira: JiraStandin, tmp_path: Path) -> None:
    group = create_project(world, "jira-runs")
    source = _register(world, group, jira)

    [first] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (first.scanned, first.ingested, first.failed, first.skipped) == (5, 5, [], [])
    assert first.passages == 2  # PROJ-1's description and its comment
    assert len(_searches(jira)) == 3  # five issues in pages of two
    assert _searches(jira)[0]["jql"] == 'project = "PROJ" ORDER BY updated ASC, key ASC'
    assert "PROJ-1 has status In Progress" in search_texts(world, group, "PROJ-1 status In Progress")
    assert "PROJ-1 blocks PROJ-2" in search_texts(world, group, "PROJ-1 blocks")
    assert "PROJ-1 is fixed in version 2.4.0" in search_texts(world, group, "PROJ-1 fixed version")
    assert "The ledger export drops rows after midnight." in search_texts(
        world, group, "ledger export midnight"
    )
    assert "Seen again on the Hanoi cluster." in search_texts(world, group, "Hanoi cluster")
    assert not any("not mapped" in t for t in search_texts(world, group, "internal not mapped"))
    with world.db.admin() as admin:
        history = admin.execute(
            "select object_value, valid_from, valid_to from vera.facts where group_id = %s "
            "and predicate = 'STATUS' and fact_text like 'PROJ-1 %%' order by valid_from",
            (group,),
        ).fetchall()
    changed = T0 + dt.timedelta(minutes=30)
    assert [(value, start, end) for value, start, end in history] == [
        ("To Do", T0, changed),
        ("In Progress", changed, None),
    ]
    assert source_status(world, group).cursor_position == {"since": "2026-01-01T14:00:00+00:00"}

    # nothing changed: only the issues of the position's own minute are asked for, found unchanged
    jira.requests.clear()
    ingest_again(world, source)
    [second] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (second.scanned, second.unchanged, second.ingested) == (1, 1, 0)
    assert 'updated >= "2026-01-01 14:00"' in _searches(jira)[0]["jql"]

    # changed: a new version; the new status replaces the old one
    jira.issues["PROJ-3"] = _issue(3, "Done", updated=T0 + dt.timedelta(days=1))
    ingest_again(world, source)
    [third] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (third.ingested, third.scanned) == (1, 2)
    found = search_texts(world, group, "PROJ-3 has status")
    assert "PROJ-3 has status Done" in found and "PROJ-3 has status To Do" not in found

    # deleted at the source: the prune retracts it
    del jira.issues["PROJ-5"]
    ingest_again(world, source)
    [fourth] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (fourth.retracted, fourth.pruned) == (1, True)
    assert "PROJ-5 has status To Do" not in search_texts(world, group, "PROJ-5 has status")


def test_a_429_is_waited_out_as_retry_after_asks(world: World, jira: JiraStandin, tmp_path: Path) -> None:
    group = create_project(world, "jira-429")
    _register(world, group, jira)
    jira.script(SEARCH, Reply(status=429, headers={"Retry-After": "1"},
                              body=b'{"errorMessages": ["Rate limit exceeded."], "errors": {}}'))  # fmt: skip
    started = time.monotonic()
    [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert time.monotonic() - started >= 1.0
    assert report.ingested == 5
    assert len(_searches(jira)) == 4  # the refused first page, asked again, then three


def test_an_expired_token_fails_the_run_with_one_clear_line(
    world: World, jira: JiraStandin, tmp_path: Path
) -> None:
    group = create_project(world, "jira-expired")
    _register(world, group, jira)
    assert run_worker(world.db, tmp_path, environ={TOKEN_ENV: "an-expired-token"}, resilience=FAST) == []
    status = source_status(world, group)
    assert status.last_status == "failed"
    assert status.error == (
        f"source 'jira proj': the server refused the token in ${TOKEN_ENV} (HTTP 401): "
        "renew it or check its permissions"
    )
    assert len(_searches(jira)) == 1  # a refused token is not retried


def test_a_run_that_dies_mid_way_resumes_after_its_last_committed_page(
    world: World, jira: JiraStandin, tmp_path: Path
) -> None:
    group = create_project(world, "jira-crash")
    source = _register(world, group, jira)
    jira.intercept = failing_request(SEARCH, 2, b'{"errorMessages": ["backend exploded"], "errors": {}}')
    assert run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST) == []
    status = source_status(world, group)
    assert status.last_status == "failed" and "HTTP 400" in (status.error or "")
    position = status.cursor_position or {}
    assert set(position) == {"next", "high"}

    jira.intercept = None
    jira.requests.clear()
    ingest_again(world, source)
    [resumed] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert _searches(jira)[0].get("nextPageToken") == position["next"]  # after the committed page
    assert resumed.ingested == 3
    assert episode_versions(world, group) == [
        (f"PROJ-{n}", 1) for n in range(1, 6)
    ]  # nothing lost, nothing doubled


def test_bad_issues_are_skipped_by_name_and_counted(
    world: World, jira: JiraStandin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    group = create_project(world, "jira-bad")
    late = T0 + dt.timedelta(days=2)
    jira.issues["PROJ-6"] = _issue(6, "To Do", updated=late, description=_adf("x" * 5_000_000))
    jira.issues["PROJ-7"] = _issue(7, "To Do", updated=late, description=42)  # not a document
    jira.issues["PROJ-8"] = {"id": "10008", "key": "PROJ-8", "fields": "unknown shape"}
    _register(world, group, jira)
    with caplog.at_level(logging.WARNING):
        [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert report.ingested == 5
    assert sorted(key for key, _ in report.skipped) == ["PROJ-6", "PROJ-7", "PROJ-8"]
    assert "skipped PROJ-6: " in caplog.text and "over the 1,000,000 of one issue" in caplog.text
    assert "skipped PROJ-7: a rich-text field that is neither a string nor an ADF object" in caplog.text
    assert "skipped PROJ-8: no 'fields' object" in caplog.text
    assert source_status(world, group).skipped == 3


def test_the_secret_is_in_no_log_job_row_run_row_or_error(
    world: World, jira: JiraStandin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    group = create_project(world, "jira-secret")
    source = _register(world, group, jira)
    basic = base64.b64encode(f"{JIRA_EMAIL}:{JIRA_TOKEN}".encode()).decode()
    with caplog.at_level(logging.DEBUG):
        run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
        # a server that echoes the credentials in its error must not put them in a log or a run row
        jira.script(
            SEARCH, Reply(status=400, body=f'{{"errorMessages": ["bad {JIRA_TOKEN} {basic}"]}}'.encode())
        )
        ingest_again(world, source)
        run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    error = source_status(world, group).error or ""
    assert "[secret]" in error and JIRA_TOKEN not in error and basic not in error
    assert all(JIRA_TOKEN not in str(r.query) for r in jira.requests)
    assert any(r.headers.get("authorization") == f"Basic {basic}" for r in jira.requests)
    assert_nowhere(world, caplog.text, JIRA_TOKEN, basic)
