"""A setting in the wrong shape is one line that names it and its expected form, never a
pydantic-settings traceback; a path list takes the PATH form (folders separated by ':') too."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vera_cli.main import main
from vera_client.config import VeraSettings, read_settings
from vera_client.domain.errors import ConfigurationError
from vera_mcp.config import read_settings as read_mcp_settings


@pytest.fixture(autouse=True)
def _no_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout is read


def test_source_roots_take_the_path_form(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_WORKER__SOURCE_ROOTS", "/srv/share:/srv/notes:")
    assert VeraSettings().worker.source_roots == (Path("/srv/share"), Path("/srv/notes"))
    monkeypatch.setenv("VERA_WORKER__SOURCE_ROOTS", "/srv/share")
    assert VeraSettings().worker.source_roots == (Path("/srv/share"),)


def test_source_roots_still_take_a_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_WORKER__SOURCE_ROOTS", '["/srv/a", "/srv/b:c"]')
    assert VeraSettings().worker.source_roots == (Path("/srv/a"), Path("/srv/b:c"))


def test_a_broken_json_list_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_WORKER__SOURCE_ROOTS", '["/srv/a"')
    with pytest.raises(ConfigurationError, match=r"VERA_WORKER__SOURCE_ROOTS.*JSON list"):
        read_settings()


def test_a_json_object_setting_in_another_shape_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_LLM__PRICES", "qwen=0")
    with pytest.raises(ConfigurationError, match=r"VERA_LLM__PRICES.*JSON object"):
        read_settings()


def test_the_cli_says_it_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_LLM__PRICES", "qwen=0")
    result = CliRunner().invoke(main, ["db", "status"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("vera: error: invalid setting VERA_LLM__PRICES"), lines[0]
    assert "Traceback" not in result.output


def test_the_mcp_server_says_it_as_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_LLM__PRICES", "[1, 2")
    with pytest.raises(ConfigurationError, match="VERA_LLM__PRICES"):
        read_mcp_settings()
