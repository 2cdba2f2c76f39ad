"""`vera source add KIND`, `vera ingest NAME` and `vera source list` for a
connector kind, against the local CMDB stand-in: the kinds are listed in the
help, the token is named by its variable, and the list shows the cursor, the
schedule and the last run with its error."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.source_standins import CMDB_TOKEN, CmdbStandin, running_cmdb

from pg_tests.support.cli import run_vera, tenant_key, vera_env
from pg_tests.support.databases import Database


def test_source_add_lists_the_kinds() -> None:
    shown = run_vera(["source", "add", "--help"], {})
    assert shown.exit_code == 0
    assert "Kinds:" in shown.output and "cmdb" in shown.output and "folder" in shown.output
    assert "git " in shown.output


def test_a_cmdb_source_is_added_ingested_and_listed(make_database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    database: Database = make_database()
    items = {
        "ci-1": {
            "id": "ci-1",
            "name": "ledger-db",
            "owner": "Data Platform",
            "updated": "2026-01-01T00:00:00Z",
        },
        "ci-2": {"id": "ci-2", "name": "mailer", "owner": "Messaging", "updated": "2026-01-02T00:00:00Z"},
    }
    env = vera_env(database.server, database.name) | {
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_OBJECTS__ROOT": str(tmp_path / "objects"),
    }
    env["VERA_API_KEY"] = tenant_key(env)
    with running_cmdb(CmdbStandin(items=items)) as cmdb:
        added = run_vera(
            ["source", "add", "cmdb", "inventory", cmdb.url, "--token-env", "INVENTORY_TOKEN",
             "--field", "owner=owned by", "--interval", "3600"],
            env,
        )  # fmt: skip
        assert added.exit_code == 0, added.output
        assert "cmdb, tier 1" in added.output and "token from $INVENTORY_TOKEN" in added.output

        # without the variable: one clear line, and the list says why
        failed = run_vera(["ingest", "inventory"], env)
        assert "INVENTORY_TOKEN is not set in the worker's environment" in failed.output + failed.stderr
        listed = run_vera(["source", "list"], env).output
        assert "error: source 'inventory': its token_env INVENTORY_TOKEN is not set" in listed

        ingested = run_vera(["ingest", "inventory"], env | {"INVENTORY_TOKEN": CMDB_TOKEN})
        assert ingested.exit_code == 0, ingested.output + ingested.stderr
        listed = run_vera(["source", "list"], env).output
    assert "every 3600 s" in listed
    assert 'cursor {"since": "2026-01-02T00:00:00+00:00"}' in listed
    assert ": done, 2 items, 0 unchanged, 0 retracted, 0 skipped or failed" in listed
    assert CMDB_TOKEN not in listed + ingested.output + ingested.stderr
    found = run_vera(["search", "ledger-db owned by", "--json", "-k", "1"], env)
    assert "ledger-db owned by Data Platform" in found.output


def test_a_git_source_is_added_ingested_and_listed(make_database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    database: Database = make_database()
    repo = tmp_path / "handbook"
    repo.mkdir()
    (repo / "ledger.md").write_text("# Ledger\n\nThe ledger service is run by the Data Platform team.\n")
    git = {"GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.org", "GIT_COMMITTER_NAME": "Ann",
           "GIT_COMMITTER_EMAIL": "ann@example.org", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=git)  # noqa: S603, S607
    rev_parse = ["git", "-C", str(repo), "rev-parse", "HEAD"]
    head = subprocess.run(rev_parse, check=True, capture_output=True, text=True, env=git).stdout.strip()  # noqa: S603
    env = vera_env(database.server, database.name) | {
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_OBJECTS__ROOT": str(tmp_path / "objects"),
    }
    env["VERA_API_KEY"] = tenant_key(env)
    refused = run_vera(["source", "add", "git", "bad", "ext::sh -c id"], env)
    assert refused.exit_code != 0 and "transport is refused" in refused.output + refused.stderr
    added = run_vera(
        ["source", "add", "git", "handbook", str(repo), "--branch", "main", "--interval", "600"], env
    )
    assert added.exit_code == 0, added.output + added.stderr
    assert "git, tier 2" in added.output and "branch main" in added.output
    ingested = run_vera(["ingest", "handbook"], env)
    assert ingested.exit_code == 0, ingested.output + ingested.stderr
    listed = run_vera(["source", "list"], env).output
    assert f'cursor {{"commit": "{head}"}}' in listed
    assert ": done, 1 items, 0 unchanged, 0 retracted, 0 skipped or failed" in listed
    found = run_vera(["search", "ledger service Data Platform", "--json", "-k", "1"], env)
    assert f"{repo}@{head}:ledger.md" in found.output
