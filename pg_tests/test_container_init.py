"""The container's init script (Dockerfile.postgres), run here against the
real server with the embedded psql: Docker itself cannot run on this machine,
but what the script does to a database can be checked."""

from __future__ import annotations

import os
import subprocess
from importlib import metadata, resources
from pathlib import Path

import psycopg

from pg_tests.databases import ROOT, Database
from vera_client.adapters.postgres.migrations import MigrationRunner

SCRIPT = ROOT / "docker" / "initdb" / "10-vera-migrate.sh"


def _queue_dir(tmp_path: Path) -> Path:
    """What the image's first build stage extracts from the procrastinate wheel."""
    folder = tmp_path / "procrastinate"
    folder.mkdir()
    schema = resources.files("procrastinate.sql").joinpath("schema.sql").read_text(encoding="utf-8")
    (folder / "schema.sql").write_text(schema, encoding="utf-8")
    (folder / "VERSION").write_text(metadata.version("procrastinate") + "\n")
    return folder


def _run_script(database: Database, queue_dir: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "PATH": f"{database.server.bin_dir}:{os.environ['PATH']}",
        "PGHOST": str(database.server.socket_dir),
        "PGPORT": str(database.server.port),
        "POSTGRES_USER": "postgres",
        "POSTGRES_DB": database.name,
        "VERA_SQL_DIR": str(ROOT / "sql"),
        "VERA_PROCRASTINATE_DIR": str(queue_dir),
        **extra,
    }
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, check=False)  # noqa: S603, S607


def test_init_script_migrates_and_records_like_the_runner(make_database, tmp_path: Path) -> None:
    database: Database = make_database(template="template0")
    queue_dir = _queue_dir(tmp_path)
    result = _run_script(database, queue_dir, VERA_APP_PASSWORD="app's secret")
    assert result.returncode == 0, result.stderr
    runner = MigrationRunner(database.admin_dsn)
    assert all(state.applied and not state.edited for state in runner.states())
    assert runner.migrate() == []
    with psycopg.connect(database.admin_dsn) as conn:
        has_password = conn.execute(
            "select rolpassword is not null from pg_authid where rolname = 'vera_app'"
        )
        assert has_password.fetchone() == (True,)
        conn.execute("alter role vera_app password null")  # roles are cluster-wide: leave it as found
        queue = conn.execute("select to_regclass('procrastinate.procrastinate_jobs') is not null").fetchone()
        assert queue == (True,)
    again = _run_script(database, queue_dir)
    assert again.returncode == 0, again.stderr
    assert "applying" not in again.stdout
