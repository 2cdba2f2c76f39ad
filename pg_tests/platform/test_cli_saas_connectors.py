"""`vera source add jira|slack`, `vera ingest NAME` and `vera source list` against the
local Jira and Slack stand-ins: the kinds are in the help, the token is named by its
variable only (there is no option that takes a token), and the list shows the cursor
and the last run."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.saas_standins import (
    CONFLUENCE_TOKEN,
    JIRA_EMAIL,
    JIRA_TOKEN,
    SLACK_TOKEN,
    ConfluenceStandin,
    JiraStandin,
    SlackStandin,
    jira_time,
)
from tests.source_standins import serving

from pg_tests.support.cli import run_vera, tenant_key, vera_env
from pg_tests.support.databases import Database


def test_source_add_lists_jira_and_slack_and_takes_no_token() -> None:
    shown = run_vera(["source", "add", "--help"], {})
    assert shown.exit_code == 0 and all(kind in shown.output for kind in ("confluence", "jira", "slack"))
    refused = run_vera(
        ["source", "add", "jira", "j", "http://127.0.0.1:9", "--project", "P", "--token", "x"], {}
    )
    assert refused.exit_code != 0 and "No such option '--token'" in refused.output


def _env(make_database, tmp_path: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    database: Database = make_database()
    env = vera_env(database.server, database.name) | {
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_OBJECTS__ROOT": str(tmp_path / "objects"),
    }
    env["VERA_API_KEY"] = tenant_key(env)
    return env


def test_a_jira_source_is_added_ingested_and_listed(make_database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = _env(make_database, tmp_path)
    updated = dt.datetime(2026, 3, 1, 8, 30, tzinfo=dt.UTC)
    issue = {"id": "1", "key": "OPS-1", "fields": {"summary": "Rotate the ledger keys", "status": {"name": "Done"},
                                                   "updated": jira_time(updated), "created": jira_time(updated)}}  # fmt: skip
    jira = JiraStandin(issues={"OPS-1": issue})
    with serving(jira, ""):
        added = run_vera(
            ["source", "add", "jira", "ops issues", jira.url, "--project", "OPS", "--email", JIRA_EMAIL,
             "--token-env", "OPS_JIRA_TOKEN"],
            env,
        )  # fmt: skip
        assert added.exit_code == 0, added.output
        assert "jira, tier 2, project OPS, token from $OPS_JIRA_TOKEN" in added.output
        ingested = run_vera(["ingest", "ops issues"], env | {"OPS_JIRA_TOKEN": JIRA_TOKEN})
        assert ingested.exit_code == 0, ingested.output + ingested.stderr
        listed = run_vera(["source", "list"], env).output
    assert 'cursor {"since": "2026-03-01T08:30:00+00:00"}' in listed
    assert ": done, 1 items, 0 unchanged, 0 retracted, 0 skipped or failed" in listed
    assert JIRA_TOKEN not in listed + ingested.output + ingested.stderr
    found = run_vera(["search", "OPS-1 has status", "--json", "-k", "1"], env)
    assert "OPS-1 has status Done" in found.output


def test_a_slack_source_is_added_ingested_and_listed(make_database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = _env(make_database, tmp_path)
    slack = SlackStandin(channels={"C0OPS": [
        {"type": "message", "user": "U1", "text": "The ledger keys were rotated today.", "ts": "1772353800.000100"}
    ]})  # fmt: skip
    with serving(slack, "/api"):
        added = run_vera(
            ["source", "add", "slack", "ops chat", "C0OPS", "--url", slack.url, "--channel-name", "#ops",
             "--token-env", "OPS_SLACK_TOKEN"],
            env,
        )  # fmt: skip
        assert added.exit_code == 0, added.output
        assert "slack, tier 4, channel C0OPS, token from $OPS_SLACK_TOKEN" in added.output
        failed = run_vera(["ingest", "ops chat"], env | {"OPS_SLACK_TOKEN": "xoxb-revoked"})
        assert "Slack refused the token in $OPS_SLACK_TOKEN (invalid_auth)" in failed.output + failed.stderr
        ingested = run_vera(["ingest", "ops chat"], env | {"OPS_SLACK_TOKEN": SLACK_TOKEN})
        assert ingested.exit_code == 0, ingested.output + ingested.stderr
        listed = run_vera(["source", "list"], env).output
    assert 'cursor {"oldest": "1772353800.000100"}' in listed
    assert ": done, 1 items, 0 unchanged, 0 retracted, 0 skipped or failed" in listed
    found = run_vera(["search", "ledger keys rotated", "--json", "-k", "1"], env)
    assert "The ledger keys were rotated today." in found.output


def test_a_confluence_source_is_added_ingested_and_listed(make_database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = _env(make_database, tmp_path)
    page = {"id": "7", "title": "Ledger runbook", "parentId": None,
            "version": {"number": 4, "createdAt": "2026-03-01T08:30:00.000Z", "authorId": "557058:bb"},
            "body": {"storage": {"value": "<h2>Export</h2><p>The ledger export runs nightly.</p>"}},
            "_links": {"webui": "/spaces/OPS/pages/7"}, "labels": ["runbook"]}  # fmt: skip
    confluence = ConfluenceStandin(pages={"7": page})
    with serving(confluence, ""):
        add = ["source", "add", "confluence", "ops wiki", confluence.url, "--space-id", confluence.space_id,
               "--email", JIRA_EMAIL, "--token-env", "OPS_WIKI_TOKEN", "--requests-per-second"]  # fmt: skip
        refused = run_vera([*add, "0"], env)
        assert refused.exit_code == 2
        assert "Invalid value for '--requests-per-second': 0.0 is not in the range 0.1<=x<=1000." in (
            refused.output + refused.stderr
        )
        added = run_vera([*add, "5"], env)
        assert added.exit_code == 0, added.output
        assert "confluence, tier 2, space 98304, token from $OPS_WIKI_TOKEN" in added.output
        ingested = run_vera(["ingest", "ops wiki"], env | {"OPS_WIKI_TOKEN": CONFLUENCE_TOKEN})
        assert ingested.exit_code == 0, ingested.output + ingested.stderr
        listed = run_vera(["source", "list"], env).output
    assert 'cursor {"since": "2026-03-01T08:30:00+00:00"}' in listed
    assert ": done, 1 items, 0 unchanged, 0 retracted, 0 skipped or failed" in listed
    assert CONFLUENCE_TOKEN not in listed + ingested.output + ingested.stderr
    found = run_vera(["search", "ledger export nightly", "--json", "-k", "1"], env)
    assert "The ledger export runs nightly." in found.output
