"""What a new user meets on the command line (issue 17): Ctrl-C that stops an
ingest, warnings that are shown, a retracted source that comes back, a source
name that is not silently re-pointed, an erase that asks, a demo that revokes
only its own keys, `vera key`, --json everywhere, ISO 8601 instants, and one
line for a missing key or an unreachable database."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from uuid import uuid4

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.types.json import Jsonb

from pg_tests.support.cli import KEY, one_line_error, run_vera, tenant_key, vera_env
from pg_tests.support.databases import ROOT, Database
from vera_cli.main import main
from vera_client.adapters.postgres.embedded import APP_ROLE

VERA = Path(sys.executable).with_name("vera")


@pytest.fixture
def demo_db(make_database) -> Database:  # a fresh, unmigrated database, as test_cli's
    database: Database = make_database(template="template0")
    return database


def _folder_env(db: Database, tmp_path: Path) -> dict[str, str]:
    env = vera_env(db.server, db.name) | {
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_OBJECTS__ROOT": str(tmp_path / "objects"),
    }
    env["VERA_API_KEY"] = tenant_key(env)
    return env


def _many_files(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (folder / f"note-{number:04}.md").write_text(
            f"# Note {number}\n\nParcel route {number} is planned by route-planner every night.\n",
            encoding="utf-8",
        )


def _authenticates(db: Database, key: str) -> bool:
    with psycopg.connect(db.dsn(APP_ROLE)) as conn:
        try:
            conn.execute("select vera.authenticate(%s)", (key,))
        except psycopg.Error:
            return False
    return True


def _start_ingest(env: dict[str, str], source: str) -> subprocess.Popen[str]:
    return subprocess.Popen(  # noqa: S603
        [str(VERA), "ingest", "--source", source], env={**os.environ, **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for(stream: object, text: str) -> list[str]:
    """Lines of stream up to and including the first that holds text."""
    seen = []
    for line in stream:  # type: ignore[attr-defined]
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never came; saw {seen}")


def _episodes(db: Database, source: str) -> tuple[int, int]:
    """(episodes of the source, those without their passage)."""
    with db.admin() as conn:
        row = conn.execute(
            "select count(*), count(*) filter (where not exists"
            " (select from vera.chunks c where c.group_id = e.group_id and c.episode_id = e.episode_id))"
            " from vera.episodes e join vera.sources s using (group_id, source_id) where s.name = %s",
            (source,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_ctrl_c_stops_an_ingest_after_the_file_in_hand(demo_db: Database, tmp_path: Path) -> None:
    """Before, SIGINT was taken by asyncio, which then waited for the job's thread to read every file."""
    env = _folder_env(demo_db, tmp_path)
    _many_files(tmp_path / "big", 100)
    assert run_vera(["source", "add", "big", str(tmp_path / "big"), "--tier", "2"], env).exit_code == 0
    process = _start_ingest(env, "big")
    assert process.stderr is not None
    _wait_for(process.stderr, "/100 files")  # a tenth of the way: mid-run
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "stopping after the file in hand" in stderr and "Traceback" not in stderr
    summary = next(line for line in stdout.splitlines() if line.startswith("100 files: "))
    ingested = int(summary.split(": ")[1].split(" ")[0])
    assert 0 < ingested < 100 and "stopped when asked" in summary
    assert _episodes(demo_db, "big") == (ingested, 0)
    assert f"{ingested} records" in run_vera(["source", "list"], env).output  # the cursor knows them all
    rest = run_vera(["ingest", "--source", "big"], env)
    assert rest.exit_code == 0, rest.output
    assert f"100 files: {100 - ingested} ingested, {ingested} unchanged" in rest.output


def test_a_second_ctrl_c_stops_at_once_and_leaves_nothing_half_written(
    demo_db: Database, tmp_path: Path
) -> None:
    env = _folder_env(demo_db, tmp_path)
    _many_files(tmp_path / "big", 100)
    # the file read right after the first progress line (10/100) is long: it is in hand when
    # the first Ctrl-C comes, and the second comes while it is being written
    paragraph = "Parcel route {n} is planned by route-planner every night and checked by dispatch. " * 12
    long_file = "# Long\n\n" + "\n\n".join(paragraph.format(n=n) for n in range(600))
    (tmp_path / "big" / "note-0010.md").write_text(long_file, encoding="utf-8")
    assert run_vera(["source", "add", "big", str(tmp_path / "big"), "--tier", "2"], env).exit_code == 0
    process = _start_ingest(env, "big")
    assert process.stderr is not None
    _wait_for(process.stderr, "/100 files")
    process.send_signal(signal.SIGINT)
    _wait_for(process.stderr, "Ctrl-C again stops at once")
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "stopped now" in stderr, stderr
    episodes, without_passage = _episodes(demo_db, "big")
    assert episodes < 100 and without_passage == 0  # each file whole or not at all
    with demo_db.admin() as conn:
        long_passages = conn.execute(
            "select count(*) from vera.chunks c join vera.episodes e using (group_id, episode_id)"
            " where e.external_id = 'note-0010.md'"
        ).fetchone()
    assert long_passages in {(0,), (600,)}  # never part of it
    rest = run_vera(["ingest", "--source", "big"], env)
    assert rest.exit_code == 0, rest.output
    assert _episodes(demo_db, "big") == (100, 0)  # every file once: none twice, none lost


def test_the_ingest_summary_counts_and_names_warnings_and_fails_an_empty_file(
    demo_db: Database, tmp_path: Path
) -> None:
    """Before, warnings were dropped and a file that gave nothing counted as ingested."""
    env = _folder_env(demo_db, tmp_path)
    folder = tmp_path / "cmdb"
    folder.mkdir()
    (folder / "services.csv").write_text("service;runs on\nledger-db;db-cluster-a\n", encoding="utf-8")
    (folder / "owners.csv").write_text("service,owned by,since\nx-api,Edge,someday\n", encoding="utf-8")
    (folder / "team.md").write_text("---\n所有者: Payments Team\n---\n", encoding="utf-8")
    assert run_vera(["source", "add", "cmdb", str(folder), "--tier", "1"], env).exit_code == 0
    result = run_vera(["ingest", "--source", "cmdb"], env)
    assert result.exit_code == 1
    assert (
        "3 files: 2 ingested, 0 unchanged, 0 retracted, 1 failed, 0 skipped, 1 warning; 0 passages, 2 claims"
        in (result.output)
    )
    assert "warning cmdb: owners.csv row 1: 'since' is not a date: 'someday'" in result.stderr
    named = [line for line in result.stderr.splitlines() if "team.md" in line]
    assert named == [
        "  FAILED cmdb: team.md: nothing read: front matter: key '所有者' cannot be a predicate "
        "(it needs letters A-Z)"
    ]  # named once (before, the message named it again)
    found = run_vera(["search", "ledger-db runs on", "--json", "-k", "1"], env)
    assert json.loads(found.output)["text"] == "ledger-db runs on db-cluster-a"
    as_json = run_vera(["ingest", "--source", "cmdb", "--json"], env)
    summary = json.loads(as_json.stdout)
    assert summary["failed"] == [{"file": "team.md", "error": named[0].split("team.md: ", 1)[1]}]
    assert (summary["untouched"], summary["ingested"], summary["stopped"]) == (2, 0, False)


def test_source_add_refuses_an_existing_name_unless_replace(demo_db: Database, tmp_path: Path) -> None:
    """Before, a second add re-pointed the source silently and the next ingest retracted the old files."""
    env = _folder_env(demo_db, tmp_path)
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    assert run_vera(["source", "add", "handbook", str(tmp_path / "old"), "--tier", "2"], env).exit_code == 0
    again = run_vera(
        ["source", "add", "handbook", str(tmp_path / "old"), "--tier", "2"], env
    )  # the README twice
    assert again.exit_code == 0 and "is registered so already" in again.output
    line = one_line_error(run_vera(["source", "add", "handbook", str(tmp_path / "new"), "--tier", "1"], env))
    assert "source 'handbook' already exists in o:" in line and "pass --replace to re-point it" in line
    assert str(tmp_path / "old") in run_vera(["source", "list"], env).output
    replaced = run_vera(["source", "add", "handbook", str(tmp_path / "new"), "--tier", "1", "--replace"], env)
    assert replaced.exit_code == 0, replaced.output
    assert f"folder {tmp_path / 'old'} -> {tmp_path / 'new'}" in replaced.output
    assert "retracts the files of the old one that it does not hold" in replaced.output
    assert "tier 2 -> 1" in replaced.output
    listed = json.loads(run_vera(["source", "list", "--json"], env).output)
    assert (listed["name"], listed["trust_tier"], listed["config"]["root"]) == (
        "handbook",
        1,
        str(tmp_path / "new"),
    )


def test_a_retracted_source_comes_back(demo_db: Database, tmp_path: Path) -> None:
    """Before, ingest said the folder was not registered, and adding it again found every file unchanged."""
    env = _folder_env(demo_db, tmp_path)
    _many_files(tmp_path / "notes", 3)
    assert run_vera(["source", "add", "notes", str(tmp_path / "notes"), "--tier", "2"], env).exit_code == 0
    assert run_vera(["ingest", str(tmp_path / "notes")], env).exit_code == 0
    assert run_vera(["source", "retract", "notes"], env).exit_code == 0
    line = one_line_error(run_vera(["ingest", str(tmp_path / "notes")], env))
    assert "source 'notes', which holds" in line and "bring it back with `vera source restore notes`" in line
    restored = run_vera(["source", "restore", "notes"], env)
    assert restored.exit_code == 0 and "restored (tier 2)" in restored.output
    again = run_vera(["ingest", str(tmp_path / "notes")], env)
    assert again.exit_code == 0 and "3 files: 3 ingested, 0 unchanged" in again.output
    assert "Parcel route 1 " in run_vera(["search", "parcel route 1", "-k", "3"], env).output
    # a second way back: add it again
    assert run_vera(["source", "retract", "notes"], env).exit_code == 0
    added = run_vera(["source", "add", "notes", str(tmp_path / "notes"), "--tier", "2"], env)
    assert added.exit_code == 0 and "was retracted: restored" in added.output
    assert "3 files: 3 ingested" in run_vera(["ingest", str(tmp_path / "notes")], env).output
    assert "is not retracted" in one_line_error(run_vera(["source", "restore", "notes"], env))


def test_erase_asks_first(demo_db: Database, tmp_path: Path) -> None:
    env = _folder_env(demo_db, tmp_path)
    (tmp_path / "doomed").mkdir()
    assert run_vera(["source", "add", "doomed", str(tmp_path / "doomed"), "--tier", "2"], env).exit_code == 0
    refused = CliRunner().invoke(main, ["source", "retract", "doomed", "--erase"], env=env, input="n\n")
    assert refused.exit_code == 1 and "Erase source 'doomed'" in refused.stderr
    assert "vera: error: nothing erased (pass --yes to erase without being asked)" in refused.stderr
    assert "'doomed'" in run_vera(["source", "list"], env).output
    no_answer = CliRunner().invoke(main, ["source", "retract", "doomed", "--erase"], env=env)
    assert no_answer.exit_code == 1 and "nothing erased" in no_answer.stderr
    confirmed = CliRunner().invoke(main, ["source", "retract", "doomed", "--erase"], env=env, input="y\n")
    assert confirmed.exit_code == 0 and "erased" in confirmed.stdout
    assert "no sources" in run_vera(["source", "list"], env).output


def test_the_demo_revokes_only_its_own_keys(demo_db: Database) -> None:
    """Before, a demo run revoked every key of the demo owner: an application's, another user's."""
    env = vera_env(demo_db.server, demo_db.name)
    first = KEY.search(run_vera(["demo"], env).output)
    assert first is not None
    app_key = json.loads(
        run_vera(["key", "create", "my app", "--json"], env | {"VERA_API_KEY": first[0]}).output
    )
    with psycopg.connect(demo_db.dsn(APP_ROLE)) as conn:
        conn.execute("select vera.authenticate(%s)", (first[0],))
        other = conn.execute("select api_key from vera.create_api_key('demo key (someone-else)')").fetchone()
        conn.commit()
    assert other is not None
    second = run_vera(["demo"], env)
    assert "1 earlier ones of that name revoked" in second.output
    second_key = KEY.search(second.output)
    assert second_key is not None
    assert not _authenticates(demo_db, first[0])  # the demo's own earlier key
    assert _authenticates(demo_db, second_key[0])
    assert _authenticates(demo_db, app_key["api_key"]) and _authenticates(demo_db, other[0])


def test_key_create_list_rotate_revoke(demo_db: Database, tmp_path: Path) -> None:
    env = _folder_env(demo_db, tmp_path)
    owner = env["VERA_API_KEY"]
    created = run_vera(["key", "create", "ci", "--expires", "2100-01-01T00:00:00+00:00"], env)
    assert created.exit_code == 0 and "shown once" in created.output
    ci = KEY.search(created.output)
    assert ci is not None and _authenticates(demo_db, ci[0])
    listed = [json.loads(line) for line in run_vera(["key", "list", "--json"], env).output.splitlines()]
    [entry] = [k for k in listed if k["name"] == "ci"]
    assert "api_key" not in entry and entry["expires_at"].startswith("2100-01-01")
    assert "(this key)" in run_vera(["key", "list"], env).output
    rotated = run_vera(["key", "rotate", entry["prefix"], "--json"], env)
    assert rotated.exit_code == 0, rotated.output
    new = json.loads(rotated.output)
    assert not _authenticates(demo_db, ci[0]) and _authenticates(demo_db, new["api_key"])
    after = [json.loads(line) for line in run_vera(["key", "list", "--json"], env).output.splitlines()]
    [replacement] = [k for k in after if k["key_id"] == new["key_id"]]
    assert replacement["name"] == "ci" and replacement["expires_at"] == entry["expires_at"]
    # a revoked key cannot be rotated, and the refusal creates nothing
    assert "is revoked" in one_line_error(run_vera(["key", "rotate", entry["prefix"]], env))
    assert len(run_vera(["key", "list", "--json"], env).output.splitlines()) == len(after)
    assert "revoked" in run_vera(["key", "revoke", new["prefix"]], env).output
    assert not _authenticates(demo_db, new["api_key"]) and _authenticates(demo_db, owner)
    assert "already revoked" in run_vera(["key", "revoke", new["prefix"]], env).output
    assert "not found" in one_line_error(run_vera(["key", "revoke", "000000000000"], env))


def test_json_on_the_commands_that_print_data(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    key = KEY.search(run_vera(["demo"], env).output)
    assert key is not None
    env["VERA_API_KEY"] = key[0]
    status = json.loads(run_vera(["db", "status", "--json"], env).output)
    assert status["server"]["running"] and status["migrations"][0] == {
        "name": "0001_baseline.sql",
        "state": "applied",
    }
    assert status["job_queue"]
    sources = [json.loads(line) for line in run_vera(["source", "list", "--json"], env).output.splitlines()]
    assert {s["name"] for s in sources} >= {"cmdb", "team chat"} and all(
        s["tracked_records"] for s in sources
    )
    golden = ROOT / "examples" / "lumen" / "golden.toml"
    evaluated = run_vera(["eval", str(golden), "--json"], env)
    assert evaluated.exit_code == 0, evaluated.output
    figures = json.loads(evaluated.output)
    assert figures["passed"] and figures["figures"]["hit_at_k"] >= 0.9 and figures["queries"][0]["hit"]
    hit = json.loads(run_vera(["search", "who owns ledger-db?", "--json", "-k", "1"], env).output)
    vote = run_vera(
        ["feedback", hit["kind"], hit["item_id"], "up", "--query", "who owns ledger-db?", "--json"], env
    )
    assert json.loads(vote.output)["created"] is True
    calibrated = json.loads(run_vera(["calibrate", hit["group_id"], "--json"], env).output)
    assert (calibrated["sample_count"], calibrated["persisted"]) == (1, False)
    tenant = json.loads(run_vera(["tenant", "create", "Json Inc", "--owner", "Jo", "--json"], env).output)
    assert tenant["group_id"].startswith("o:") and KEY.fullmatch(tenant["api_key"])
    logins = [
        json.loads(line) for line in run_vera(["tenant", "login", "list", "--json"], env).output.splitlines()
    ]
    assert any(login["role"] == APP_ROLE and login["limits"]["connection_limit"] for login in logins)


def test_as_of_takes_iso_8601_with_time_and_offset(demo_db: Database) -> None:
    """Before, an instant with an offset (as --json prints it) was refused."""
    env = vera_env(demo_db.server, demo_db.name)
    key = KEY.search(run_vera(["demo"], env).output)
    assert key is not None
    env["VERA_API_KEY"] = key[0]
    for instant in ("2026-06-01", "2026-06-01T00:00:00", "2026-06-01T00:00:00Z", "2026-06-01T07:00:00+07:00"):
        before = run_vera(["search", "billing-api runs on", "--as-of", instant, "-k", "10"], env)
        assert before.exit_code == 0, before.output
        assert "vm-cluster-1" in before.output and "k8s-hanoi-2" not in before.output, instant
    refused = run_vera(["search", "x", "--as-of", "June 1st"], env)
    assert refused.exit_code == 2 and "'June 1st' is not an ISO 8601 date or date and time" in refused.stderr


def test_a_missing_key_and_an_unreachable_database_are_one_line(demo_db: Database) -> None:
    env = vera_env(demo_db.server, demo_db.name)
    for args in (["search", "x"], ["source", "list"], ["ingest", "--source", "x"], ["key", "list"]):
        assert one_line_error(run_vera(args, env)) == "vera: error: set VERA_API_KEY or pass --api-key"
    # a closed port: one line at once, not the pool's log lines until its timeout
    closed = env | {"VERA_DB__DSN": "postgresql://vera_app@127.0.0.1:1/vera", "VERA_API_KEY": "vera_x_y"}
    line = one_line_error(run_vera(["search", "x"], closed))
    assert line.startswith("vera: error: cannot connect to postgresql://vera_app@127.0.0.1:1/vera: ")


def test_the_worker_logs_job_ids_and_counts_not_thousands_of_ids(demo_db: Database, tmp_path: Path) -> None:
    env = _folder_env(demo_db, tmp_path)
    fact_ids = [str(uuid4()) for _ in range(2000)]
    with demo_db.admin() as conn:
        group, principal = conn.execute(
            "select group_id, principal_id from vera.memberships where role = 'owner' limit 1"
        ).fetchone()  # type: ignore[misc]
        job = conn.execute(
            "select vera.enqueue_job('vera.embed', %s)",
            (Jsonb({"group_id": group, "principal_id": str(principal), "fact_ids": fact_ids}),),
        ).fetchone()[0]  # type: ignore[index]
    worker = subprocess.run(  # noqa: S603
        [str(VERA), "worker", "--once", "--queue", "embed"], env={**os.environ, **env},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr
    assert f"vera.embed[{job}]" in worker.stderr and "fact_ids=[2000 items]" in worker.stderr
    assert fact_ids[0] not in worker.stderr and len(worker.stderr) < 5000


def test_the_worker_with_an_unreachable_database_is_one_line(demo_db: Database) -> None:
    """Before, the pool logged each failed attempt for 30 s and the worker ended in a traceback."""
    env = vera_env(demo_db.server, demo_db.name) | {"VERA_DB__DSN": "postgresql://vera_app@127.0.0.1:1/vera"}
    worker = subprocess.run(  # noqa: S603
        [str(VERA), "worker", "--once"], env={**os.environ, **env}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert worker.returncode == 1
    lines = [line for line in worker.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        "vera: error: cannot connect to postgresql://vera_app@127.0.0.1:1/vera: "
    )
