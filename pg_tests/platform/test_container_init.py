"""The container's init script (Dockerfile.postgres), run here against the
real server with the embedded psql: Docker itself cannot run on this machine,
but what the script does to a database can be checked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psycopg

from pg_tests.support.catalogs import assert_same, bookkeeping, snapshot, write_script
from pg_tests.support.databases import ROOT, Database
from vera_client.adapters.postgres import provisioning
from vera_client.adapters.postgres.migrations import MigrationRunner

SCRIPT = ROOT / "docker" / "initdb" / "10-vera-migrate.sh"


def _run_script(database: Database, sql_script: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """The init script as the image runs it, with what its first build stage wrote (vera db sql)."""
    env = os.environ | {
        "PATH": f"{database.server.bin_dir}:{os.environ['PATH']}",
        "PGHOST": str(database.server.socket_dir),
        "PGPORT": str(database.server.port),
        "POSTGRES_USER": "postgres",
        "POSTGRES_DB": database.name,
        "VERA_SQL_SCRIPT": str(sql_script),
        "VERA_APP_LOGIN_SCRIPT": str(sql_script.with_name("app-login.sql")),
        **extra,
    }
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, check=False)  # noqa: S603, S607


def test_init_script_migrates_and_records_like_the_runner(make_database, tmp_path: Path) -> None:
    database: Database = make_database(template="template0")
    sql_script = write_script(tmp_path)
    # what the image's build stage writes beside vera.sql
    sql_script.with_name("app-login.sql").write_text(provisioning.app_login_script("main"))
    result = _run_script(database, sql_script, VERA_APP_PASSWORD="app's secret")
    assert result.returncode == 0, result.stderr
    runner = MigrationRunner(database.admin_dsn)
    assert all(state.applied and not state.edited for state in runner.states())
    before = snapshot(database), bookkeeping(database)
    assert runner.migrate() == []
    assert (snapshot(database), bookkeeping(database)) == before
    by_runner: Database = make_database(template="template0")
    MigrationRunner(by_runner.admin_dsn).migrate()
    assert_same(snapshot(by_runner), before[0], "container init vs runner")
    assert bookkeeping(by_runner) == before[1]
    with psycopg.connect(database.admin_dsn) as conn:
        login = conn.execute(
            "select rolcanlogin, rolpassword is not null, pg_has_role(oid, 'vera_app', 'usage') "
            "from pg_authid where rolname = 'vera_app_main'"
        )
        assert login.fetchone() == (True, True, True)
        assert conn.execute("select rolcanlogin from pg_roles where rolname = 'vera_app'").fetchone() == (
            False,
        )
        queue = conn.execute("select to_regclass('procrastinate.procrastinate_jobs') is not null").fetchone()
        assert queue == (True,)
    again = _run_script(database, sql_script, VERA_APP_PASSWORD="another secret")
    assert again.returncode == 0, again.stderr
    assert "applying" not in again.stdout
    assert [login.role for login in provisioning.list_app_logins(database.admin_dsn)].count(
        "vera_app_main"
    ) == 1
    provisioning.drop_app_login(database.admin_dsn, "main")  # roles are cluster-wide: leave none behind
