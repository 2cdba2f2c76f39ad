"""What `vera demo` prints last: how to go on with its key, the HTTP API included."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from vera_cli.commands.demo import API_URL, _print_next_steps
from vera_client.config import DbSettings

pytestmark = pytest.mark.unit


def test_the_demo_says_how_to_start_and_call_the_http_api(capsys: pytest.CaptureFixture[str]) -> None:
    database = SimpleNamespace(
        server=None, app_dsn="postgresql://app@db/vera", settings=SimpleNamespace(db=DbSettings())
    )
    _print_next_steps(database, "vera_abc_secret", Path("/examples/lumen"))  # type: ignore[arg-type]
    printed = capsys.readouterr().out
    assert API_URL == "http://127.0.0.1:8766"
    assert "api serve" in printed
    assert f"curl -H 'Authorization: Bearer vera_abc_secret' '{API_URL}/v1/search?q=" in printed
    assert f"{API_URL}/openapi.json" in printed and f"{API_URL}/docs" in printed
    assert f"{API_URL}/console" in printed
