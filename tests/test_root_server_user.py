"""Run as root, the embedded PostgreSQL drops to an OS user of its own (vera_postgres), created
on first use: the command that creates it says so, in one line, once (issue 29, item 10)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from vera_cli.plumbing import database_from_env
from vera_client.adapters.postgres import embedded
from vera_client.adapters.postgres.embedded import SERVER_OS_USER


@pytest.fixture
def no_server_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """A root process on a machine without the server's OS user; useradd recorded, not run."""
    created: list[list[str]] = []

    def getpwnam(name: str) -> Any:
        if created:
            return object()
        raise KeyError(name)

    def run(command: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        created.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(embedded.pwd, "getpwnam", getpwnam)
    monkeypatch.setattr(embedded.subprocess, "run", run)
    monkeypatch.setattr(embedded.os, "geteuid", lambda: 0)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERA_DB__DATA_DIR", str(tmp_path / "postgres"))
    for name in ("VERA_DB__DSN", "VERA_DB__ADMIN_DSN"):
        monkeypatch.delenv(name, raising=False)
    return created


def test_the_cli_says_it_created_the_server_user_once(
    no_server_user: list[list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    server = database_from_env().server
    assert server is not None
    assert server._server_user() == SERVER_OS_USER
    assert server._server_user() == SERVER_OS_USER
    assert len(no_server_user) == 1 and no_server_user[0][-1] == SERVER_OS_USER
    said = [line for line in capsys.readouterr().err.splitlines() if SERVER_OS_USER in line]
    assert len(said) == 1, said
    assert "created the OS user vera_postgres" in said[0]


def test_a_library_caller_is_told_through_its_callback(
    no_server_user: list[list[str]], tmp_path: Path
) -> None:
    notices: list[str] = []
    server = embedded.EmbeddedPostgres(
        data_dir=tmp_path / "pg", port=54329, database="vera", notice=notices.append
    )
    server._server_user()
    assert len(notices) == 1 and SERVER_OS_USER in notices[0]
