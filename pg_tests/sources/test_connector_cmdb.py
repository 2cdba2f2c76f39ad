"""The CMDB connector through the real worker against the local CMDB stand-in
(tests/source_standins.py): the connector contract end to end. A first run in
pages, an incremental run from the cursor's position, deletion found by the
prune, a 429 with Retry-After, an expired token (one clear line), a run that
dies mid-way and the next one resuming (nothing lost or doubled), bad items
skipped by name and counted, and the secret in no log, job row or error."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.source_standins import CMDB_TOKEN, CmdbStandin, running_cmdb
from tests.standins import Reply

from pg_tests.support.clients import client_for
from pg_tests.support.ingesting import run_worker, worker_executor
from pg_tests.support.seed import World, caller, create_project
from vera_client.api import sources as sources_api
from vera_client.api.sources import SourceStatus
from vera_client.config import ResilienceSettings
from vera_client.domain.callers import Operator

TOKEN_ENV = "VERA_TEST_CMDB_TOKEN"
ENVIRON = {TOKEN_ENV: CMDB_TOKEN}
# fast retries, so a test waits only as long as a Retry-After asks
FAST = ResilienceSettings(retry_base_seconds=0.01, retry_max_seconds=5, max_retries=3, breaker_failures=50)


def _item(ci: str, name: str, owner: str, runs_on: str, updated: str, **more: Any) -> dict[str, Any]:
    return {"id": ci, "name": name, "owner": owner, "runs_on": runs_on, "updated": updated,
            "internal_score": 7, **more}  # fmt: skip


def _items() -> dict[str, dict[str, Any]]:
    found = [
        _item("ci-1", "ledger-db", "Data Platform", "pg-cluster-1", "2026-01-01T00:00:00Z"),
        _item(
            "ci-2",
            "billing-api",
            "Payments",
            "k8s-hanoi-2",
            "2026-01-02T00:00:00Z",
            description="The billing API issues invoices every night.",
        ),
        _item("ci-3", "search-api", "Discovery", "k8s-hanoi-1", "2026-01-03T00:00:00Z"),
        _item("ci-4", "audit-log", "Security", "pg-cluster-2", "2026-01-04T00:00:00Z"),
        _item("ci-5", "mailer", "Messaging", "k8s-saigon-1", "2026-01-05T00:00:00Z"),
    ]
    return {item["id"]: item for item in found}


@pytest.fixture
def cmdb() -> Iterator[CmdbStandin]:
    with running_cmdb(CmdbStandin(items=_items())) as server:
        yield server


def _register(world: World, group: str, cmdb: CmdbStandin, **config: Any) -> sources_api.Source:
    settings = {
        "url": cmdb.url, "page_size": 2, "prune_interval_s": 0,
        "fields": {"owner": "owned by", "runs_on": "runs on"}, "functional": ["runs on"],
        "description_field": "description", **config,
    }  # fmt: skip
    with client_for(world, world.a.owner_key) as vera:
        source_id = vera.register_source(group, "cmdb", "cmdb prod", 1, token_env=TOKEN_ENV, config=settings)
        vera.request_ingest(group, source_id)
        return next(s for s in vera.list_sources(group) if s.source_id == source_id)


def _ingest(world: World, source: sources_api.Source) -> None:
    with client_for(world, world.a.owner_key) as vera:
        vera.request_ingest(source.group_id, source.source_id)


def _texts(world: World, group: str, query: str) -> list[str]:
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select text from vera.search(%s, groups => array[%s])", (query, group)
        ).fetchall()
    return [row[0] for row in rows]


def _status(world: World, group: str) -> SourceStatus:
    with client_for(world, world.a.owner_key) as vera:
        [found] = vera.source_status(group)
    return found


def _item_requests(cmdb: CmdbStandin) -> list[dict[str, str]]:
    return [r.query for r in cmdb.requests if r.path == "/cmdb/v1/items"]


def test_first_run_incremental_run_and_prune(world: World, cmdb: CmdbStandin, tmp_path: Path) -> None:
    group = create_project(world, "cmdb-runs")
    source = _register(world, group, cmdb)

    [first] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (first.scanned, first.ingested, first.claims, first.passages, first.failed) == (5, 5, 10, 1, [])
    assert len(_item_requests(cmdb)) == 3  # five items in pages of two
    assert "ledger-db owned by Data Platform" in _texts(world, group, "ledger-db Data Platform")
    assert "The billing API issues invoices every night." in _texts(world, group, "invoices night")
    # a field the mapping does not name is not a claim
    assert not any("internal" in t for t in _texts(world, group, "internal score 7"))
    status = _status(world, group)
    assert (status.last_status, status.items, status.cursor_position) == (
        "done",
        5,
        {"since": "2026-01-05T00:00:00+00:00"},
    )

    # nothing changed: only the items at the position's own time are read again, found unchanged
    cmdb.requests.clear()
    _ingest(world, source)
    [second] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (second.scanned, second.unchanged, second.ingested) == (1, 1, 0)
    assert _item_requests(cmdb)[0]["updated_since"] == "2026-01-05T00:00:00+00:00"

    # changed: a new version; the functional value replaces the old one
    cmdb.items["ci-3"] = _item("ci-3", "search-api", "Discovery", "k8s-hanoi-9", "2026-02-01T00:00:00Z")
    _ingest(world, source)
    [third] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert third.ingested == 1
    found = _texts(world, group, "search-api runs on")
    assert "search-api runs on k8s-hanoi-9" in found and "search-api runs on k8s-hanoi-1" not in found

    # deleted at the source: the prune retracts it
    del cmdb.items["ci-1"]
    _ingest(world, source)
    [fourth] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (fourth.retracted, fourth.pruned) == (1, True)
    assert "ledger-db owned by Data Platform" not in _texts(world, group, "ledger-db Data Platform")
    assert _status(world, group).retracted == 1


def test_a_prune_waits_for_its_interval(world: World, cmdb: CmdbStandin, tmp_path: Path) -> None:
    group = create_project(world, "cmdb-prune-interval")
    source = _register(world, group, cmdb, prune_interval_s=3600)
    [first] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert first.pruned  # never pruned before
    del cmdb.items["ci-2"]
    cmdb.requests.clear()
    _ingest(world, source)
    [second] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert (second.pruned, second.retracted) == (False, 0)  # within the hour: no listing asked for
    assert not any(r.path == "/cmdb/v1/ids" for r in cmdb.requests)


def test_an_empty_listing_retracts_nothing(world: World, cmdb: CmdbStandin, tmp_path: Path) -> None:
    group = create_project(world, "cmdb-empty-listing")
    source = _register(world, group, cmdb)
    run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    cmdb.items.clear()  # an outage or a wrong filter looks like everything deleted
    _ingest(world, source)
    assert run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST) == []
    status = _status(world, group)
    assert status.last_status == "failed"
    assert "lists no items but VERA holds 5 of it: not retracting them all" in (status.error or "")
    assert "ledger-db owned by Data Platform" in _texts(world, group, "ledger-db Data Platform")


def test_a_429_is_waited_out_as_retry_after_asks(world: World, cmdb: CmdbStandin, tmp_path: Path) -> None:
    group = create_project(world, "cmdb-429")
    _register(world, group, cmdb)
    cmdb.script("/cmdb/v1/items", Reply.error(429, retry_after="1"))
    started = time.monotonic()
    [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert time.monotonic() - started >= 1.0
    assert report.ingested == 5
    assert len(_item_requests(cmdb)) == 4  # the refused first page, asked again, then three


def test_an_expired_token_fails_the_run_with_one_clear_line(
    world: World, cmdb: CmdbStandin, tmp_path: Path
) -> None:
    group = create_project(world, "cmdb-expired")
    source = _register(world, group, cmdb)
    assert run_worker(world.db, tmp_path, environ={TOKEN_ENV: "an-expired-token"}, resilience=FAST) == []
    status = _status(world, group)
    assert status.last_status == "failed"
    assert status.error == (
        f"source 'cmdb prod': the server refused the token in ${TOKEN_ENV} (HTTP 401): renew it or check its permissions"
    )
    assert len(_item_requests(cmdb)) == 1  # a refused token is not retried

    # an unset variable is named, not guessed at
    _ingest(world, source)
    run_worker(world.db, tmp_path, environ={}, resilience=FAST)
    assert _status(world, group).error == (
        f"source 'cmdb prod': its token_env {TOKEN_ENV} is not set in the worker's environment"
    )


def test_a_run_that_dies_mid_way_resumes_after_its_last_committed_page(
    world: World, cmdb: CmdbStandin, tmp_path: Path
) -> None:
    group = create_project(world, "cmdb-crash")
    source = _register(world, group, cmdb)
    # the second page answers 400 (not retried): the run dies after committing the first page
    cmdb.script("/cmdb/v1/items", Reply())  # the first page is served normally (an empty script slot)
    cmdb.scripted.clear()
    original = cmdb.answer
    calls = {"n": 0}

    def failing_second_page(path: str, query: dict[str, str], headers: dict[str, str]) -> Any:
        if path == "/cmdb/v1/items":
            calls["n"] += 1
            if calls["n"] == 2:
                return 400, {}, b'{"error": {"message": "backend exploded"}}'
        return original(path, query, headers)

    cmdb.answer = failing_second_page  # type: ignore[method-assign]
    assert run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST) == []
    status = _status(world, group)
    assert status.last_status == "failed" and "HTTP 400" in (status.error or "")
    assert status.cursor_position == {"next": "2", "high": "2026-01-02T00:00:00+00:00"}

    cmdb.requests.clear()
    _ingest(world, source)
    [resumed] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert _item_requests(cmdb)[0].get("cursor") == "2"  # resumed at the page after the committed one
    assert resumed.ingested == 3
    with caller(world.db, world.a.owner_key) as conn:
        versions = conn.execute(
            "select external_id, count(*) from vera.episodes where group_id = %s group by 1 order by 1",
            (group,),
        ).fetchall()
    assert versions == [(f"ci-{n}", 1) for n in range(1, 6)]  # nothing lost, nothing doubled


def test_bad_items_are_skipped_by_name_and_counted(
    world: World, cmdb: CmdbStandin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    group = create_project(world, "cmdb-bad")
    cmdb.items["ci-6"] = {"id": "ci-6", "owner": "Nobody", "updated": "2026-01-06T00:00:00Z"}  # no name
    cmdb.items["ci-7"] = _item("ci-7", "huge", "Big", "k8s", "2026-01-07T00:00:00Z", description="x" * 30_000)
    _register(world, group, cmdb)
    with caplog.at_level(logging.WARNING):
        [report] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert report.ingested == 5
    assert [key for key, _ in report.skipped] == ["ci-6", "ci-7"]
    assert "skipped ci-6: no 'name' field to name it by" in caplog.text
    assert "ci-7" in caplog.text and "over the 20,000 of a passage" in caplog.text
    assert _status(world, group).skipped == 2


def test_the_secret_is_in_no_log_job_row_run_row_or_error(
    world: World, cmdb: CmdbStandin, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    group = create_project(world, "cmdb-secret")
    source = _register(world, group, cmdb)
    with caplog.at_level(logging.DEBUG):
        run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
        # a server that echoes the token in its error must not put it in a log or a run row
        cmdb.script(
            "/cmdb/v1/items",
            Reply(status=400, body=f'{{"error": {{"message": "bad {CMDB_TOKEN}"}}}}'.encode()),
        )
        _ingest(world, source)
        run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert _status(world, group).error is not None and "[secret]" in (_status(world, group).error or "")
    # it went in the header, never in a URL
    assert all(CMDB_TOKEN not in str(r.query) for r in cmdb.requests)
    assert any(r.headers.get("authorization") == f"Bearer {CMDB_TOKEN}" for r in cmdb.requests)
    assert CMDB_TOKEN not in caplog.text
    with world.db.admin() as admin:
        for table in ("procrastinate.procrastinate_jobs", "procrastinate.procrastinate_events",
                      "vera.source_runs", "vera.sources", "vera.audit_log", "vera.episodes"):  # fmt: skip
            dump = admin.execute(f"select coalesce(string_agg(t::text, ' '), '') from {table} t").fetchone()
            assert dump is not None and CMDB_TOKEN not in dump[0], table


def test_the_schedule_queues_a_due_source_once_per_interval(
    world: World, cmdb: CmdbStandin, tmp_path: Path
) -> None:
    group = create_project(world, "cmdb-schedule")
    source = _register(world, group, cmdb)
    run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    with client_for(world, world.a.owner_key) as vera:
        vera.set_source_interval(group, source.source_id, 60)
    sql = worker_executor(world.db)
    try:
        assert [
            q.source_id for q in sql.run(Operator(), sources_api.request_due_ingests())
        ] == []  # ran just now
        with world.db.admin() as admin:
            admin.execute(
                "update vera.source_runs set started_at = now() - interval '2 minutes' where group_id = %s",
                (group,),
            )
        due = sql.run(Operator(), sources_api.request_due_ingests())
        assert [(q.group_id, q.source_id) for q in due] == [(group, source.source_id)]
        assert sql.run(Operator(), sources_api.request_due_ingests()) == []  # queued already
    finally:
        sql.close()
    [scheduled] = run_worker(world.db, tmp_path, environ=ENVIRON, resilience=FAST)
    assert scheduled.source == "cmdb prod"
    assert _status(world, group).interval_s == 60
