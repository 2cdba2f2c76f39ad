"""The Slack connector through the real worker against the local Slack Web API
stand-in (tests/saas_standins.py: conversations.history newest first from an
exclusive `oldest`, conversations.replies, response_metadata.next_cursor,
Bearer auth, `ok: false` bodies, users.info): a first run in pages with a
thread's replies and the authors' names, an incremental run from the newest ts
less the look-back window (an edit of an old message and a late reply to an
old thread seen, nothing unchanged written), deletion found by the prune, a
429 with Retry-After, an invalid token (one clear line), a run that dies
mid-way and the next resuming (nothing lost or doubled), bad messages skipped
by name and counted, the default tier 4, and the secret in no log, job row or
error."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.saas_standins import SLACK_TOKEN, SlackStandin
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

TOKEN_ENV = "VERA_TEST_SLACK_TOKEN"
ENVIRON = {TOKEN_ENV: SLACK_TOKEN}
CHANNEL = "C0INCIDENT"
HISTORY = "/api/conversations.history"


def _message(ts: str, text: str, **more: Any) -> dict[str, Any]:
    return {"type": "message", "user": "U0MAI", "text": text, "ts": ts, **more}


def _channel() -> list[dict[str, Any]]:
    return [
        _message("1767258000.000100", "The billing API moved to k8s-hanoi-2 this morning."),
        _message(
            "1767258060.000200",
            "Deploys are frozen until Friday.",
            thread_ts="1767258060.000200",
            reply_count=2,
            latest_reply="1767258200.000400",
        ),
        {
            "type": "message",
            "subtype": "channel_join",
            "user": "U0NEW",
            "text": "<@U0NEW> has joined",
            "ts": "1767258100.000300",
        },
        _message(
            "1767258300.000500", "Ask <@U0LINH> about the <https://wiki.example/ledger|ledger runbook>."
        ),
        _message("1767258400.000600", "The search API owner is the Discovery team."),
    ]


@pytest.fixture
def slack() -> Iterator[SlackStandin]:
    standin = SlackStandin(
        channels={CHANNEL: _channel()},
        replies={"1767258060.000200": [
            _message("1767258150.000300", "Even hotfixes?", thread_ts="1767258060.000200"),
            _message("1767258200.000400", "Hotfixes need the release manager.", thread_ts="1767258060.000200"),
        ]},
        users={
            "U0MAI": {"id": "U0MAI", "name": "mai", "real_name": "Mai Nguyen",
                      "profile": {"display_name": "Mai", "real_name": "Mai Nguyen"}},
            "U0LINH": {"id": "U0LINH", "name": "linh", "real_name": "Linh Tran",
                       "profile": {"display_name": "", "real_name": "Linh Tran"}},
        },
    )  # fmt: skip
    with serving(standin, "/api"):
        yield standin


def _register(world: World, group: str, slack: SlackStandin, **config: Any) -> sources_api.Source:
    settings = {"url": slack.url, "channel": CHANNEL, "channel_name": "incidents", "page_size": 2,
                "prune_interval_s": 0, **config}  # fmt: skip
    return register(world, group, "slack", "slack incidents", 4, TOKEN_ENV, settings)


def _history(slack: SlackStandin) -> list[dict[str, str]]:
    """The poll's history requests (the prune's slim listing asks for pages of 999)."""
    return [r.query for r in slack.requests if r.path == HISTORY and r.query.get("limit") != "999"]


def test_first_run_threads_incremental_run_and_prune(
    world: World, slack: SlackStandin, tmp_path: Path
) -> None:
    group = create_project(world, "slack-runs")
    source = _register(world, group, slack)

    [first] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    # four messages of people and the thread's two replies; the join is not a message of people
    assert (first.ingested, first.passages, first.claims, first.failed, first.skipped) == (6, 6, 0, [], [])
    assert len(_history(slack)) == 3  # five messages in pages of two
    replies = [r.query for r in slack.requests if r.path == "/api/conversations.replies"]
    # the thread (its parent and two replies) in pages of two; the prune's listing in one of 999
    assert [(q["ts"], q["limit"], "cursor" in q) for q in replies] == [
        ("1767258060.000200", "2", False),
        ("1767258060.000200", "2", True),
        ("1767258060.000200", "999", False),
    ]
    assert "Hotfixes need the release manager." in search_texts(world, group, "hotfixes release manager")
    assert "Ask @Linh Tran about the ledger runbook." in search_texts(world, group, "ledger runbook")
    # each author's name asked once for the run (U0NEW joined: not a message of people)
    users = sorted(r.query["user"] for r in slack.requests if r.path == "/api/users.info")
    assert users == ["U0LINH", "U0MAI"]
    with world.db.admin() as admin:
        [(title,)] = admin.execute(
            "select title from vera.episodes where group_id = %s and external_id = %s",
            (group, f"{CHANNEL}/1767258000.000100"),
        ).fetchall()
    assert title.startswith("#incidents: Mai at 2026-01-01")
    with world.db.admin() as admin:
        tier, uri = admin.execute(
            "select s.trust_tier, e.uri from vera.sources s join vera.episodes e using (source_id) "
            "where s.group_id = %s and e.external_id = %s", (group, f"{CHANNEL}/1767258000.000100"),
        ).fetchone()  # fmt: skip
    assert (tier, uri) == (4, f"slack://channel?id={CHANNEL}&message=1767258000.000100")
    assert source_status(world, group).cursor_position == {"oldest": "1767258400.000600"}

    # nothing changed: asked from the newest ts less the look-back window (a day); what the window
    # holds is read again and found unchanged by its hash: nothing written
    slack.requests.clear()
    ingest_again(world, source)
    [second] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (second.scanned, second.unchanged, second.ingested) == (6, 6, 0)
    assert _history(slack)[0]["oldest"] == "1767172000.000600"

    # a new message: only it is written
    slack.channels[CHANNEL].append(_message("1767259000.000700", "The mailer now runs on k8s-saigon-1."))
    ingest_again(world, source)
    [third] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (third.scanned, third.ingested) == (7, 1)

    # deleted at the source: the prune retracts it
    slack.channels[CHANNEL] = [m for m in slack.channels[CHANNEL] if m["ts"] != "1767258400.000600"]
    ingest_again(world, source)
    [fourth] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (fourth.retracted, fourth.pruned) == (1, True)
    assert "The search API owner is the Discovery team." not in search_texts(
        world, group, "search API owner Discovery"
    )
    assert "Hotfixes need the release manager." in search_texts(world, group, "hotfixes release manager")


def test_an_edit_and_a_late_reply_within_the_look_back_window_are_seen(
    world: World, slack: SlackStandin, tmp_path: Path
) -> None:
    group = create_project(world, "slack-edits")
    source = _register(world, group, slack, lookback_s=3600)
    [first] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert first.ingested == 6
    versions = dict(episode_versions(world, group))

    # older than the position: an edit of the first message, a reply to the thread
    [old] = [m for m in slack.channels[CHANNEL] if m["ts"] == "1767258000.000100"]
    old.update(text="The billing API moved to k8s-hanoi-3 this morning.",
               edited={"user": "U0MAI", "ts": "1767259500.000000"})  # fmt: skip
    slack.replies["1767258060.000200"].append(
        _message("1767259600.000900", "The freeze is lifted.", thread_ts="1767258060.000200")
    )
    slack.requests.clear()
    ingest_again(world, source)
    [second] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (second.ingested, second.failed, second.retracted) == (2, [], 0)
    assert _history(slack)[0]["oldest"] == "1767254800.000600"  # the position less an hour
    after = dict(episode_versions(world, group))
    assert after[f"{CHANNEL}/1767258000.000100"] == 2  # the edit: a new version
    assert after[f"{CHANNEL}/1767259600.000900"] == 1  # the late reply
    # the thread's parent is not a new version for a new reply (its reply count is not content)
    assert after[f"{CHANNEL}/1767258060.000200"] == versions[f"{CHANNEL}/1767258060.000200"] == 1
    assert "The billing API moved to k8s-hanoi-3 this morning." in search_texts(world, group, "billing k8s")
    assert "The freeze is lifted." in search_texts(world, group, "freeze lifted")

    # nothing changed since: the window is read again, nothing written
    ingest_again(world, source)
    [third] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (third.ingested, third.unchanged) == (0, third.scanned)
    assert dict(episode_versions(world, group)) == after

    # a reply deleted at the source: the prune retracts it, as before
    slack.replies["1767258060.000200"].pop()
    ingest_again(world, source)
    [fourth] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (fourth.ingested, fourth.retracted) == (0, 1)
    assert "The freeze is lifted." not in search_texts(world, group, "freeze lifted")


def test_a_token_that_may_not_read_users_keeps_the_ids(
    world: World, slack: SlackStandin, tmp_path: Path
) -> None:
    group = create_project(world, "slack-no-users")
    _register(world, group, slack)
    slack.script(
        "/api/users.info", Reply(body=b'{"ok": false, "error": "missing_scope", "needed": "users:read"}')
    )
    [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (report.ingested, report.failed) == (6, [])
    assert [r.path for r in slack.requests].count("/api/users.info") == 1  # asked once, then no more
    assert "Ask @U0LINH about the ledger runbook." in search_texts(world, group, "ledger runbook")


def test_a_look_back_window_out_of_range_is_refused(
    world: World, slack: SlackStandin, tmp_path: Path
) -> None:
    group = create_project(world, "slack-lookback")
    _register(world, group, slack, lookback_s=-1)
    assert run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST) == []
    assert source_status(world, group).error == (
        "source 'slack incidents': config \"lookback_s\" must be 0 to 7776000 s (90 days)"
    )


def test_a_429_is_waited_out_as_retry_after_asks(world: World, slack: SlackStandin, tmp_path: Path) -> None:
    group = create_project(world, "slack-429")
    _register(world, group, slack)
    slack.script(HISTORY, Reply(status=429, headers={"Retry-After": "1"},
                                body=b'{"ok": false, "error": "ratelimited"}'))  # fmt: skip
    started = time.monotonic()
    [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert time.monotonic() - started >= 1.0
    assert report.ingested == 6
    assert len(_history(slack)) == 4  # the refused first page, asked again, then two more


def test_an_invalid_token_fails_the_run_with_one_clear_line(
    world: World, slack: SlackStandin, tmp_path: Path
) -> None:
    group = create_project(world, "slack-expired")
    _register(world, group, slack)
    assert run_worker(world.db, tmp_path, environ={TOKEN_ENV: "xoxb-revoked"}, resilience=FAST) == []
    status = source_status(world, group)
    assert status.last_status == "failed"
    assert status.error == (
        f"source 'slack incidents': Slack refused the token in ${TOKEN_ENV} (invalid_auth): "
        "renew it or check its permissions"
    )
    assert len(_history(slack)) == 1  # a refused token is not retried


def test_a_run_that_dies_mid_way_resumes_after_its_last_committed_page(
    world: World, slack: SlackStandin, tmp_path: Path
) -> None:
    group = create_project(world, "slack-crash")
    source = _register(world, group, slack)
    slack.intercept = failing_request(HISTORY, 2, b'{"ok": false, "error": "invalid_arguments"}')
    assert run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST) == []
    status = source_status(world, group)
    assert status.last_status == "failed" and "HTTP 400" in (status.error or "")
    position = status.cursor_position or {}
    assert set(position) == {"next", "high"} and position["high"] == "1767258400.000600"

    slack.intercept = None
    slack.requests.clear()
    ingest_again(world, source)
    [resumed] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert _history(slack)[0].get("cursor") == position["next"]  # after the committed page
    assert resumed.ingested == 4  # the thread's parent and its replies, and the oldest message
    expected = sorted(f"{CHANNEL}/{ts}" for ts in ("1767258000.000100", "1767258060.000200",
                      "1767258150.000300", "1767258200.000400", "1767258300.000500", "1767258400.000600"))  # fmt: skip
    assert episode_versions(world, group) == [(key, 1) for key in expected]  # nothing lost, nothing doubled
    assert source_status(world, group).cursor_position == {"oldest": "1767258400.000600"}


def test_bad_messages_are_skipped_by_name_and_counted(
    world: World, slack: SlackStandin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    group = create_project(world, "slack-bad")
    slack.channels[CHANNEL] += [
        _message("1767258500.000800", "x" * 5_000_000),
        _message("1767258600.000900", {"unknown": "shape"}),  # type: ignore[arg-type]
        {"type": "message", "user": "U0MAI", "text": "no ts"},
    ]
    slack.channels[CHANNEL][-1]["ts"] = "not-a-ts"
    _register(world, group, slack)
    with caplog.at_level(logging.WARNING):
        [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert report.ingested == 6
    assert sorted(key for key, _ in report.skipped) == [
        "(a message)",
        f"{CHANNEL}/1767258500.000800",
        f"{CHANNEL}/1767258600.000900",
    ]
    assert "over the 1,000,000 of one message" in caplog.text
    assert f"skipped {CHANNEL}/1767258600.000900: its 'text' is not a string" in caplog.text
    assert source_status(world, group).skipped == 3


def test_the_secret_is_in_no_log_job_row_run_row_or_error(
    world: World, slack: SlackStandin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    group = create_project(world, "slack-secret")
    source = _register(world, group, slack)
    with caplog.at_level(logging.DEBUG):
        run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
        # a server that echoes the token in its error must not put it in a log or a run row
        # echoed where a cut at 100 characters would split it
        echoed = "x" * 90 + SLACK_TOKEN
        slack.script(HISTORY, Reply(body=json.dumps({"ok": False, "error": echoed}).encode()))
        ingest_again(world, source)
        run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    error = source_status(world, group).error or ""
    assert "[secret]" in error and SLACK_TOKEN not in error and SLACK_TOKEN[:8] not in error
    assert all(SLACK_TOKEN not in str(r.query) for r in slack.requests)
    assert any(r.headers.get("authorization") == f"Bearer {SLACK_TOKEN}" for r in slack.requests)
    assert_nowhere(world, caplog.text, SLACK_TOKEN)
