"""Shared set-up of the benchmark scripts: an embedded PostgreSQL of their
own (under /tmp, never the user's), migrated, with a tenant to write as."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import psycopg

from vera_client.adapters.postgres import provisioning
from vera_client.adapters.postgres.embedded import APP_LIMITS, APP_ROLE, EmbeddedPostgres
from vera_client.adapters.postgres.migrations import MigrationRunner


@dataclass
class Bench:
    server: EmbeddedPostgres
    database: str
    api_key: str
    organisation: str
    personal: str

    def app(self) -> psycopg.Connection:
        conn = psycopg.connect(self.server.app_url(self.database))
        conn.execute("select vera.authenticate(%s)", (self.api_key,))
        return conn

    def admin(self) -> psycopg.Connection:
        return psycopg.connect(self.server.admin_url(self.database), autocommit=True)


def bench_server() -> EmbeddedPostgres:
    """The benchmarks' embedded PostgreSQL, started."""
    data_dir = Path(os.environ.get("VERA_BENCH_DATA_DIR", f"/tmp/vera-bench-{os.getuid()}/postgres"))  # noqa: S108
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    data_dir.parent.chmod(0o755)
    # VERA_BENCH_PORT with VERA_BENCH_DATA_DIR: a server of its own beside another checkout's
    port = int(os.environ.get("VERA_BENCH_PORT", "54499"))
    server = EmbeddedPostgres(data_dir=data_dir, port=port, database="postgres")
    server.start()
    return server


def start(name: str, *, fresh: bool = True) -> Bench:
    server = bench_server()
    with psycopg.connect(server.admin_url("postgres"), autocommit=True) as conn:
        if fresh:
            conn.execute(f'drop database if exists "{name}" with (force)')
        exists = conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'create database "{name}"')
    MigrationRunner(server.admin_url(name)).migrate()
    provisioning.create_app_login(server.admin_url(name), APP_ROLE, APP_LIMITS, exists_ok=True)
    with psycopg.connect(server.admin_url(name), autocommit=True) as conn:
        row = conn.execute(
            "select g.group_id, p.personal_group_id, p.principal_id from vera.groups g "
            "join vera.memberships m on m.group_id = g.group_id join vera.principals p using (principal_id) "
            "where g.kind = 'organisation' and g.name = 'Bench' limit 1"
        ).fetchone()
        if row is None:
            org, principal, key = conn.execute(
                "select * from vera.create_tenant('Bench', 'Bench Owner')"
            ).fetchone()  # type: ignore[misc]
            personal = conn.execute("select personal_group_id from vera.principals where principal_id = %s",
                                    (principal,)).fetchone()[0]  # type: ignore[index]  # fmt: skip
        else:
            org, personal, principal = row
            key = conn.execute(
                "select api_key from vera.issue_api_key(%s, 'bench', null)", (principal,)
            ).fetchone()[0]  # type: ignore[index]
    return Bench(server=server, database=name, api_key=key, organisation=org, personal=personal)


@contextmanager
def peak_server_memory(server: EmbeddedPostgres) -> Iterator[dict[str, float]]:
    """Samples the resident memory of all server processes; yields a dict
    that holds the peak (MiB, sum of USS: memory unique to each process, so
    shared buffers are not counted once per backend) after the block."""
    result = {"peak_mib": 0.0}
    stop = threading.Event()
    status = server.status()
    root = psutil.Process(status.pid) if status.pid else None

    def sample() -> None:
        while not stop.is_set():
            if root is not None:
                total = 0
                for proc in [root, *root.children(recursive=True)]:
                    try:
                        total += proc.memory_full_info().uss
                    except (psutil.NoSuchProcess, psutil.AccessDenied):
                        continue
                result["peak_mib"] = max(result["peak_mib"], total / 2**20)
            time.sleep(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield result
    finally:
        stop.set()
        thread.join()


def cpu_reference(conn: psycopg.Connection) -> str:
    """How fast this machine is at the moment, as a line to print beside a benchmark's figures: one
    backend counting the rows of generate_series(1, 1,000,000), best of 3. The figures on this
    shared machine halved from one restart of it to the next (docs/benchmarks.md); this moves with
    them, so runs of different days can be compared. The series is in the select list, not in FROM:
    a function in FROM is materialised first, and a million rows spill past work_mem to a temporary
    file, which made the reference measure the disk as well (147-229 ms against a steady 67-78)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        conn.execute("select count(*) from (select generate_series(1, 1000000)) series").fetchone()
        best = min(best, (time.perf_counter() - started) * 1000)
    return f"CPU reference (one backend counting generate_series(1, 1,000,000), best of 3): {best:.0f} ms"


def start_server(arguments: list[str], env: dict[str, str], port: int, what: str) -> subprocess.Popen[bytes]:
    """`vera ARGUMENTS` as a subprocess (this venv's), once its /health/ready on 127.0.0.1:port
    answers 200 (60 s at most; then it is stopped and the benchmark ends saying so)."""
    vera = Path(sys.executable).with_name("vera")
    server = subprocess.Popen([str(vera), *arguments], env=env)  # noqa: S603 - the checkout's own command
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.terminate()
    raise SystemExit(f"the {what} did not become ready within 60 s")
