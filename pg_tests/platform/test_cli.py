"""The `vera` command line against the session's server: the demo, db
commands, and one-line errors for user mistakes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pg_tests.support.catalogs import pre_baseline
from pg_tests.support.cli import KEY, one_line_error, run_vera, tenant_key, vera_env
from pg_tests.support.databases import APP_LOGIN, Database
from vera_client.adapters.postgres import deployment
from vera_client.adapters.postgres.embedded import APP_ROLE
from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB


@pytest.fixture
def demo_db(make_database) -> Database:
    database: Database = make_database(template="template0")
    return database


def test_demo_sets_up_a_tenant_and_is_idempotent(demo_db: Database, tmp_path: Path) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    first = run_vera(["demo"], env)
    assert first.exit_code == 0, first.output
    assert "applied 0001_baseline.sql" in first.output
    assert "psql" in first.output and "vera.authenticate" in first.output
    first_key = KEY.search(first.output)
    # the example corpus, loaded and asked; as of before the migration the old cluster answers
    # ingested through the worker: every file once, with progress
    assert "6 files: 6 ingested, 0 unchanged, 0 retracted, 0 failed, 0 skipped, 0 warnings" in first.output
    assert "cmdb: 1 file to read or retract" in first.output and "services.csv" not in first.stderr
    # no model configured (VERA_LLM__BASE_URL): the demo runs offline and says extraction is off
    assert "free-text extraction is off" in first.output
    assert "billing-api runs on k8s-hanoi-2" in first.output
    assert "billing-api runs on vm-cluster-1" in first.output and "superseded" in first.output
    assert "Dịch vụ route-planner chạy trên cụm k8s-hanoi-1" in first.output
    # projected through the worker into the embedded FalkorDB, and explored on the graph
    assert "? What is around ledger-db, 2 hops (walked on the graph)" in first.output
    assert "hop 1  billing-api USES_DATABASE ledger-db  [cmdb]" in first.output, first.output
    assert "hop 2  billing-api OWNED_BY Payments Team  [cmdb]" in first.output
    second = run_vera(["demo"], env)
    assert second.exit_code == 0, second.output
    assert "migrations: 0 applied now" in second.output
    assert "6 files: 0 ingested, 6 unchanged" in second.output
    second_key = KEY.search(second.output)
    assert first_key and second_key and first_key[0] != second_key[0]
    with psycopg.connect(demo_db.dsn(APP_ROLE)) as conn:
        conn.execute("select vera.authenticate(%s)", (second_key[0],))
        organisations = conn.execute(
            "select group_name from vera.whoami() where group_kind = 'organisation'"
        ).fetchall()
        assert organisations == [("Demo Organisation",)]
        conn.rollback()
        with pytest.raises(psycopg.Error, match="revoked"):
            conn.execute("select vera.authenticate(%s)", (first_key[0],))
    with demo_db.admin() as conn:
        assert conn.execute("select count(*) from vera.groups where kind = 'organisation'").fetchone() == (1,)
    assert "hop 1  billing-api USES_DATABASE ledger-db  [cmdb]" in second.output
    try:
        _after_the_demo_one_memory(env, KEY.search(second.output), tmp_path)
    finally:
        # the demo's FalkorDB outlives the demo (as its PostgreSQL does); the test stops it, and
        # removes it: the session's later commands would find it beside the database and start it
        demo_graph = EmbeddedFalkorDB(demo_db.server.data_dir.parent / "falkordb")
        demo_graph.stop()
        shutil.rmtree(demo_graph.data_dir, ignore_errors=True)


def _after_the_demo_one_memory(env: dict[str, str], key: re.Match[str] | None, tmp_path: Path) -> None:
    """Without graph settings, what follows the demo uses its graph: a source added and ingested
    after it is projected there, and `vera graph check` finds the graph in step (issue 29)."""
    assert key is not None
    after = {name: value for name, value in env.items() if name != "VERA_MEMORY__GRAPH_BACKEND"}
    after |= {"VERA_API_KEY": key[0], "VERA_OBJECTS__ROOT": str(tmp_path / "objects")}
    folder = tmp_path / "inventory"
    folder.mkdir()
    (folder / "services.csv").write_text("Service,runs on\nnotes-api,k8s-hanoi-3\n", encoding="utf-8")
    added = run_vera(["source", "add", "inventory", str(folder), "--kind", "cmdb", "--tier", "1"], after)
    assert added.exit_code == 0, added.output
    ingested = run_vera(["ingest", "--source", "inventory"], after)
    assert ingested.exit_code == 0, ingested.output
    checked = run_vera(["graph", "check"], after)
    assert checked.exit_code == 0, checked.output + checked.stderr
    assert "0 with drift" in checked.output


def test_db_status_migrate_and_url(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    status = run_vera(["db", "status"], env)
    assert status.exit_code == 0 and "0001_baseline.sql" in status.output and "pending" in status.output
    migrate = run_vera(["db", "migrate"], env)
    assert migrate.exit_code == 0 and "applied 0001_baseline.sql" in migrate.output
    again = run_vera(["db", "migrate"], env)
    assert again.exit_code == 0 and "nothing to migrate" in again.output
    assert "functions and row-level security re-applied" in again.output
    after = run_vera(["db", "status"], env).output
    assert "applied" in after
    assert "job queue (procrastinate)" in after
    assert "not installed" not in after
    url = run_vera(["db", "url"], env)
    assert url.output.strip() == demo_db.dsn(APP_ROLE)


def test_tenant_create_prints_the_key_once(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    run_vera(["db", "migrate"], env)
    result = run_vera(["tenant", "create", "Globex", "--owner", "Hank"], env)
    assert result.exit_code == 0, result.output
    assert KEY.search(result.output) and "organisation: o:" in result.output


def test_invalid_dsn_setting_is_one_line(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name) | {"VERA_DB__DSN": "not a dsn"}
    line = one_line_error(run_vera(["db", "migrate"], env))
    assert "VERA_DB__DSN" in line


def test_unreachable_database_is_one_line(demo_db: Database, tmp_path: Path) -> None:
    env = vera_env(demo_db.server, demo_db.name) | {
        "VERA_DB__DSN": f"postgresql://vera_app@/vera?host={tmp_path}"
    }
    line = one_line_error(run_vera(["db", "migrate"], env))
    assert "cannot connect" in line


def test_embedded_commands_with_an_external_dsn_are_refused(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name) | {"VERA_DB__DSN": demo_db.dsn(APP_LOGIN)}
    line = one_line_error(run_vera(["db", "stop"], env))
    assert "external PostgreSQL" in line


def test_edited_migration_is_one_line(
    demo_db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    run_vera(["db", "migrate"], env)
    with demo_db.admin() as conn:
        conn.execute("update vera_meta.migrations set sha256 = repeat('0', 64) where version = 1")
    line = one_line_error(run_vera(["db", "migrate"], env))
    assert "0001_baseline.sql was edited after this database applied it" in line
    assert f"remove {demo_db.server.data_dir}, the embedded server's data directory" in line


@pytest.mark.parametrize("command", [["db", "migrate"], ["db", "status"], ["demo"]])
def test_a_pre_baseline_database_is_one_line(demo_db: Database, command: list[str]) -> None:
    """A database built by 0001_initial .. 0004_ingestion (the demo's, say) is refused, not upgraded."""
    pre_baseline(demo_db)
    line = one_line_error(run_vera(command, vera_env(demo_db.server, demo_db.name)))
    assert line.startswith(
        "vera: error: this database was built by VERA's pre-baseline migrations (0001_initial … 0004_ingestion); "
        "nothing was changed: export what you need, recreate it (stop the server and remove "
    )
    with demo_db.admin() as conn:
        assert conn.execute("select count(*) from vera_meta.migrations").fetchone() == (4,)
        assert conn.execute("select to_regclass('vera.facts')").fetchone() == (None,)


def test_db_sql_prints_the_script_without_a_database(tmp_path: Path) -> None:
    env = {"VERA_DB__DSN": f"postgresql://vera_app@/vera?host={tmp_path}&port=1", "VERA_DB__ADMIN_DSN": ""}
    result = run_vera(["db", "sql"], env)
    assert result.exit_code == 0, result.output
    assert result.output == deployment.psql_script()
    assert result.output.startswith("-- VERA's database brought up to date with psql alone")


def test_console_script_is_installed() -> None:
    vera = Path(sys.executable).with_name("vera")
    result = subprocess.run([str(vera), "--version"], capture_output=True, text=True, check=False)  # noqa: S603
    assert result.returncode == 0 and "0.1.0" in result.stdout


def test_db_maintain_builds_the_per_group_vector_indexes(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    assert run_vera(["db", "migrate"], env).exit_code == 0
    with psycopg.connect(demo_db.admin_dsn, autocommit=True) as admin:
        group = admin.execute("select * from vera.create_tenant('Maintained', 'Owner')").fetchone()[0]  # type: ignore[index]
        admin.execute(
            "update vera.groups set embedding_model = 'm', embedding_dim = 3 where group_id = %s", (group,)
        )
        admin.execute("insert into vera.entities (group_id, canonical_name) values (%s, 'e')", (group,))
        admin.execute("insert into vera.predicates (group_id, name) values (%s, 'IS')", (group,))
        admin.execute(
            "insert into vera.facts (group_id, subject_entity_id, predicate, object_value, fact_text, embedding,"
            " tier, authority, verification, lifecycle)"
            " select %s, entity_id, 'IS', i::text, 'e is ' || i, ('[' || i || ',1,1]')::vector, 1, 1, 'auto',"
            " 'published' from vera.entities, generate_series(1, 5000) i where group_id = %s",
            (group, group),
        )
    status = run_vera(["db", "status"], env).output
    assert "vector indexes" in status and "1 due: run vera db maintain" in status
    assert "have no vector index of their own yet" in run_vera(["db", "migrate"], env).output
    built = run_vera(["db", "maintain"], env)
    assert built.exit_code == 0, built.output
    assert "building facts_3_o_" in built.output and "5,000 vectors of 3 dimensions in facts" in built.output
    assert "vector indexes" not in run_vera(["db", "status"], env).output
    again = run_vera(["db", "maintain"], env)
    assert "nothing to build" in again.output
    refused = run_vera(["db", "maintain", "--min-rows", "0"], env)
    assert refused.exit_code != 0 and "Traceback" not in refused.output


def test_search_prints_ranked_cited_hits_and_json(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    key = KEY.search(run_vera(["demo"], env).output)
    assert key is not None
    env["VERA_API_KEY"] = key[0]
    table = run_vera(["search", "who owns ledger-db?", "-k", "3", "--explain"], env)
    assert table.exit_code == 0, table.output
    assert " 1. " in table.output and "cmdb (tier 1)" in table.output and "authority 1.00" in table.output
    assert (
        "confidence " in table.output
        and "lexical match " in table.output
        and "no good match" not in table.output
    )
    nonsense = run_vera(["search", "quantum banana submarine recipe"], env)
    assert nonsense.exit_code == 0 and "no good match" in nonsense.output, nonsense.output
    lines = run_vera(["search", "ledger-db", "--json", "-k", "2"], env).output.splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert (
        first["rank"] == 1
        and set(first["signals"]) >= {"relevance", "recency"}
        and 0 <= first["confidence"] <= 1
        and first["good_match"] == (first["confidence"] >= 0.5)
        and first["citation"]["source"]
    )
    before = run_vera(["search", "billing-api runs on", "--as-of", "2026-06-01", "-k", "10"], env).output
    assert "vm-cluster-1" in before and "k8s-hanoi-2" not in before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "   "], "search needs a query: the words to look for"),
        (["search", "x", "--group", "o:0000000000000000"], "cannot read group"),
        (["search", "x", "--api-key", "not-a-key"], "API key"),
    ],
)
def test_search_mistakes_are_one_line(demo_db: Database, args: list[str], message: str) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    key = KEY.search(run_vera(["demo"], env).output)
    assert key is not None
    result = run_vera(args, {**env, "VERA_API_KEY": key[0]})
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_search_knobs_from_the_command_line(demo_db: Database) -> None:
    """--candidates, --k-rrf and --ef-search reach vera.search; a bad value is its one line."""
    env = vera_env(demo_db.server, demo_db.name)
    key = KEY.search(run_vera(["demo"], env).output)
    assert key is not None
    env["VERA_API_KEY"] = key[0]
    wide = run_vera(["search", "billing-api runs on", "--json", "-k", "10"], env)
    assert wide.exit_code == 0, wide.output
    # one candidate per half: at most the lexical and the vector half's best
    narrow = run_vera(["search", "billing-api runs on", "--json", "-k", "10", "--candidates", "1"], env)
    assert narrow.exit_code == 0, narrow.output
    assert 1 <= len(narrow.output.splitlines()) <= 2 < len(wide.output.splitlines())
    tuned = run_vera(["search", "billing-api runs on", "--json", "--k-rrf", "60", "--ef-search", "200"], env)
    assert tuned.exit_code == 0, tuned.output
    # since vera-search/7 relevance is each hit's own match confidence: k_rrf is checked (below)
    # but changes no score, where a flatter fusion (1/61, 1/62, ... for 1/2, 1/3, ...) did
    relevance = [[json.loads(line)["signals"]["relevance"] for line in run.output.splitlines()]
                 for run in (wide, tuned)]  # fmt: skip
    assert len(relevance[1]) == 10 and relevance[0] == relevance[1]
    assert all(
        json.loads(line)["confidence"] == relevance[0][i] for i, line in enumerate(wide.output.splitlines())
    )
    for option, value, message in [
        ("--k-rrf", "-1", "k_rrf must be between 0 and 10000, got -1"),
        ("--candidates", "0", "candidates must be between 1 and 10000, got 0"),
        ("--ef-search", "1001", "ef_search must be between 1 and 1000, got 1001"),
    ]:
        line = one_line_error(run_vera(["search", "billing-api", option, value], env))
        assert line == f"vera: error: {message}", line


def test_feedback_and_calibrate_from_the_command_line(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    key = KEY.search(run_vera(["demo"], env).output)
    assert key is not None
    env["VERA_API_KEY"] = key[0]
    question = "who owns ledger-db?"
    hits = [
        json.loads(line)
        for line in run_vera(["search", question, "--json", "-k", "4"], env).output.splitlines()
    ]
    for position, hit in enumerate(hits):
        vote = "up" if position == 0 else "down"
        voted = run_vera(["feedback", hit["kind"], hit["item_id"], vote, "--query", question], env)
        assert voted.exit_code == 0, voted.output
        assert f"recorded {vote} on {hit['kind']}" in voted.output and "relevance" in voted.output
    again = run_vera(["feedback", hits[0]["kind"], hits[0]["item_id"], "up", "--query", question], env)
    assert "replaced the earlier vote" in again.output
    group = hits[0]["group_id"]
    kept = run_vera(["calibrate", group, "--min-samples", "4"], env)
    assert kept.exit_code == 0, kept.output
    assert "votes: 4 (1 up, 3 down)" in kept.output and "kept as the active weight set" in kept.output
    waiting = run_vera(["calibrate", group], env)  # default minimum: 50 votes
    assert "not kept" in waiting.output
    history = run_vera(["weights", "history", group], env)
    assert history.exit_code == 0 and history.output.startswith("* ") and "4 votes" in history.output
    back = run_vera(["weights", "rollback", group], env)
    assert back.exit_code == 0 and f"{group} now ranks with the defaults" in back.output
    nothing = run_vera(["weights", "rollback", group], env)
    assert nothing.exit_code == 1 and "nothing to roll back" in nothing.output
    assert len(nothing.output.strip().splitlines()) == 1  # one readable line
    unknown = run_vera(
        ["feedback", "fact", "00000000-0000-0000-0000-000000000000", "up", "--query", question], env
    )
    assert unknown.exit_code == 1 and "not among the first 100 hits" in unknown.output


def test_source_add_ingest_search_and_a_worker_process(demo_db: Database, tmp_path: Path) -> None:
    folder = tmp_path / "handbook"
    (folder / "ops").mkdir(parents=True)
    (folder / "ops" / "queues.md").write_text(
        "# Queues\n\nWhen the parcel queue backs up, scale parcel-router to eight replicas.\n",
        encoding="utf-8",
    )
    (folder / "README.md").write_text("# Handbook\n\nHow the operations team works.\n", encoding="utf-8")
    env = vera_env(demo_db.server, demo_db.name) | {
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_OBJECTS__ROOT": str(tmp_path / "objects"),
    }
    env["VERA_API_KEY"] = tenant_key(env)
    added = run_vera(["source", "add", "handbook", str(folder), "--tier", "2"], env)
    assert added.exit_code == 0 and "source 'handbook'" in added.output and "tier 2" in added.output
    ingested = run_vera(["ingest", str(folder / "ops")], env)
    assert ingested.exit_code == 0, ingested.output
    assert "1 file: 1 ingested" in ingested.output and "1 passage, 0 claims, 1 embedding" in ingested.output
    found = run_vera(["search", "parcel queue backs up", "--json", "-k", "1"], env)
    assert json.loads(found.output)["text"].startswith("When the parcel queue backs up")
    listed = run_vera(["source", "list"], env)
    assert "'handbook'" in listed.output and "1 record " in listed.output

    # queued only, then worked off by a real `vera worker --once` process
    (folder / "ops" / "queues.md").unlink()
    queued = run_vera(["ingest", "--source", "handbook", "--no-wait"], env)
    assert queued.exit_code == 0 and "queued ingestion of 'handbook'" in queued.output
    vera = Path(sys.executable).with_name("vera")
    worker = subprocess.run(  # noqa: S603
        [str(vera), "worker", "--once"], env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr
    assert "ingest handbook: 1 scanned, 0 untouched, 0 unchanged, 1 ingested, 1 retracted" in worker.stderr
    assert "parcel queue" not in run_vera(["search", "parcel queue backs up", "--json"], env).output

    # the whole source out of search, then erased
    retracted = run_vera(["source", "retract", "handbook", "--reason", "moved to the wiki"], env)
    assert retracted.exit_code == 0 and "source 'handbook' in o:" in retracted.output
    assert "retracted; " in retracted.output and "(cleanup job" in retracted.output
    assert (
        "How the operations team works" not in run_vera(["search", "operations team", "--json"], env).output
    )
    assert "(retracted)" in run_vera(["source", "list"], env).output
    erased = run_vera(["source", "retract", "handbook", "--erase", "--yes"], env)
    assert erased.exit_code == 0 and "erased" in erased.output
    # the raw bytes go at once, without a worker (the cleanup job retires)
    assert "raw object" in erased.output and "removed at once" in erased.output, erased.output
    assert "no sources" in run_vera(["source", "list"], env).output
    assert "no source 'handbook'" in one_line_error(run_vera(["source", "retract", "handbook"], env))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ingest"], "give a PATH below a registered source's folder, or --source NAME"),
        (["ingest", "/nonexistent/folder"], "no registered source holds /nonexistent/folder"),
        (["ingest", "--source", "nothing-like-it"], "no source 'nothing-like-it'"),
        (["source", "add", "x", "/nonexistent/folder", "--tier", "2"], "/nonexistent/folder is not a folder"),
    ],
)
def test_ingestion_mistakes_are_one_line(demo_db: Database, args: list[str], message: str) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    env["VERA_API_KEY"] = tenant_key(env)
    assert message in one_line_error(run_vera(args, env))


def test_a_run_that_fails_as_a_whole_is_one_line(demo_db: Database, tmp_path: Path) -> None:
    folder = tmp_path / "vanishing"
    folder.mkdir()
    env = vera_env(demo_db.server, demo_db.name) | {"VERA_EMBEDDER__PROVIDER": "deterministic"}
    env["VERA_API_KEY"] = tenant_key(env)
    assert run_vera(["source", "add", "vanishing", str(folder), "--tier", "2"], env).exit_code == 0
    folder.rmdir()
    line = one_line_error(run_vera(["ingest", "--source", "vanishing"], env))
    assert "ingestion of source" in line and "does not exist or is not a folder" in line


def test_db_url_refuses_to_hand_the_application_the_admin_dsn(tmp_path: Path) -> None:
    env = {"VERA_DB__DSN": "", "VERA_DB__ADMIN_DSN": f"postgresql://dba@/vera?host={tmp_path}&port=1"}
    line = one_line_error(run_vera(["db", "url"], env))
    assert line.startswith("vera: error: VERA_DB__ADMIN_DSN is set but VERA_DB__DSN is not: ")
    admin = run_vera(["db", "url", "--admin"], env)
    assert admin.exit_code == 0 and admin.output.startswith("postgresql://dba@")


def test_db_status_with_only_the_admin_dsn_says_the_application_dsn_is_missing(demo_db: Database) -> None:
    """Migrations and their status need only the admin DSN; the status names what applications lack."""
    env = {"VERA_DB__DSN": "", "VERA_DB__ADMIN_DSN": demo_db.admin_dsn}
    status = run_vera(["db", "status"], env)
    assert status.exit_code == 0, status.output
    assert "server:   external, VERA_DB__DSN is not set: applications cannot connect" in status.output
    assert "0001_baseline.sql" in status.output
