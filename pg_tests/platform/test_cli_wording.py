"""What the command line says in the new user's second hour (issue 29): --explain shows the
seven signals and says why period has none, and what recency measures; a count of one is
singular; a source written through the API is not "0 records"; a failed file is named once; an
empty query's message asks for words, not an embedding the command line cannot pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from pg_tests.support.cli import one_line_error, run_vera, tenant_key, vera_env
from pg_tests.support.databases import Database
from vera_client.adapters.postgres.embedded import APP_ROLE
from vera_client.client import VeraClient


@pytest.fixture
def env(make_database, tmp_path: Path) -> dict[str, str]:  # a fresh database, as test_cli_ux's
    db: Database = make_database(template="template0")
    env = vera_env(db.server, db.name) | {
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_OBJECTS__ROOT": str(tmp_path / "objects"),
    }
    env["VERA_API_KEY"] = tenant_key(env)
    env["APP_DSN"] = db.dsn(APP_ROLE)
    return env


def test_counts_sources_and_failures_say_what_is_true(env: dict[str, str], tmp_path: Path) -> None:
    """Before: "1 files", "1 passages", "0 records" for a source written through the API, and
    "FAILED notes: team.md: nothing read: team.md front matter: ..." (the name twice)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ledger.md").write_text("# Ledger\n\nThe ledger-db keeps the books.\n", encoding="utf-8")
    assert run_vera(["source", "add", "notes", str(folder), "--tier", "2"], env).exit_code == 0
    ingested = run_vera(["ingest", "--source", "notes"], env)
    assert ingested.exit_code == 0, ingested.output
    assert "notes: 1 file to read or retract" in ingested.stderr
    assert (
        "1 file: 1 ingested, 0 unchanged, 0 retracted, 0 failed, 0 skipped, 0 warnings; 1 passage, 0 claims, "
        in (ingested.stdout)
    )
    (folder / "team.md").write_text("---\n所有者: Payments Team\n---\n", encoding="utf-8")
    failed = run_vera(["ingest", "--source", "notes"], env)
    named = [line for line in failed.stderr.splitlines() if "team.md" in line]
    assert len(named) == 1 and named[0].count("team.md") == 1, named
    assert named[0].startswith("  FAILED notes: team.md: nothing read: front matter: key '所有者'")
    with VeraClient(env["APP_DSN"], env["VERA_API_KEY"]) as vera:
        vera.remember("The ledger-db moved to cluster red.", group=vera.default_group())
    listed = run_vera(["source", "list"], env).output.splitlines()
    folder_line = next(line for line in listed if "'notes'" in line)
    memory_line = next(line for line in listed if "'memory'" in line)
    assert " 1 record " in folder_line
    assert "written through the API" in memory_line and "records" not in memory_line


def test_explain_shows_seven_signals_and_says_what_recency_measures(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Before, --explain printed six signals (period left out without a word) and "recency 1.00"
    read as "new" for a fact valid since 2017."""
    folder = tmp_path / "history"
    folder.mkdir()
    (folder / "house.md").write_text(
        "# House\n\nGeorge Peter owned the house from 1811 to 1827.\n", encoding="utf-8"
    )
    assert run_vera(["source", "add", "history", str(folder), "--tier", "2"], env).exit_code == 0
    assert run_vera(["ingest", "--source", "history"], env).exit_code == 0
    plain = run_vera(["search", "George Peter house", "--explain", "-k", "1"], env)
    assert plain.exit_code == 0, plain.output
    lines = plain.output.splitlines()
    legend = next(line for line in lines if line.strip().startswith("signals 0..1"))
    assert "stated lately = recency" in legend and "not how new the fact is" in legend
    signals = next(line for line in lines if "relevance " in line)
    for name in ("relevance", "authority", "verification", "stated lately", "feedback", "confidence"):
        assert f"{name} " in signals, signals
    assert signals.endswith("period - (no period asked)")
    asked = run_vera(["search", "George Peter house", "--during", "1811-1827", "--explain", "-k", "1"], env)
    assert "period 1.00" in asked.output and "no period asked" not in asked.output


def test_an_empty_query_asks_for_words(env: dict[str, str]) -> None:
    """Before: "search needs a query text or a query embedding", and the CLI cannot pass one."""
    line = one_line_error(run_vera(["search", "   "], env))
    assert line == "vera: error: search needs a query: the words to look for"
