from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from vera_client.bootstrap import build_database
from vera_client.config import VeraSettings, default_data_dir


def test_nested_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_DB__DSN", "postgresql://vera_app@db.internal/vera")
    monkeypatch.setenv("VERA_DB__ADMIN_DSN", "postgresql://dba:s3cret@db.internal/vera")
    monkeypatch.setenv("VERA_DB__TCP", "true")
    settings = VeraSettings()
    assert settings.db.dsn == "postgresql://vera_app@db.internal/vera"
    assert settings.db.tcp is True
    assert not settings.db.embedded
    database = build_database(settings)
    assert database.server is None
    assert database.app_dsn.startswith("postgresql://vera_app@")
    assert database.admin_dsn.startswith("postgresql://dba:")


def test_embedded_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VERA_DB__DSN", raising=False)
    monkeypatch.delenv("VERA_DB__ADMIN_DSN", raising=False)
    monkeypatch.setenv("VERA_DB__DATA_DIR", str(tmp_path / "pg"))
    database = build_database(VeraSettings())
    assert database.server is not None
    assert database.app_dsn.startswith("postgresql://vera_app@/vera?host=")


def test_empty_dsn_means_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_DB__DSN", "  ")
    assert VeraSettings().db.embedded


@pytest.mark.parametrize("dsn", ["not a dsn", "mysql://x@y/z"])
def test_malformed_dsn_is_refused(monkeypatch: pytest.MonkeyPatch, dsn: str) -> None:
    monkeypatch.setenv("VERA_DB__DSN", dsn)
    with pytest.raises(pydantic.ValidationError, match="postgresql://"):
        VeraSettings()


def test_port_out_of_range_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_DB__PORT", "80")
    with pytest.raises(pydantic.ValidationError):
        VeraSettings()


def test_root_data_dir_is_never_under_root_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert default_data_dir() == Path("/var/lib/vera/postgres")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_DATA_HOME", "/home/u/.data")
    assert default_data_dir() == Path("/home/u/.data/vera/postgres")
