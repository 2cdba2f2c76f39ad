"""A new user's client: `VeraClient.from_settings()` with nothing passed acts as the key in
VERA_API_KEY (from the environment or a .env file in the current folder), and the async
face's every method, usage() included, is awaited."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from pg_tests.support.databases import Database
from pg_tests.support.lumen import Lumen
from vera_client import AsyncVeraClient, VeraClient
from vera_client.domain.errors import ConfigurationError, UnknownApiKeyError


@pytest.fixture(scope="module")
def owner(db: Database) -> Lumen:
    with db.admin() as admin:
        row = admin.execute("select * from vera.create_tenant('Settings Ltd', 'Settings Owner')").fetchone()
        assert row is not None
    return Lumen(organisation=row[0], key=row[2], objects=Path())


@pytest.fixture
def demo_environment(
    db: Database, owner: Lumen, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> dict[str, str]:
    """os.environ as after `vera demo`, in an empty folder (no .env)."""
    env = owner.environment(db)
    for name in [n for n in os.environ if n.startswith("VERA_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        if name.startswith("VERA_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("VERA_EMBEDDER__PROVIDER", "deterministic")
    monkeypatch.chdir(tmp_path)
    return env


def _organisations(vera: VeraClient) -> set[str]:
    return {m.group_id for m in vera.whoami() if m.group_kind == "organisation"}


def test_from_settings_acts_as_the_key_in_vera_api_key(
    demo_environment: dict[str, str], owner: Lumen
) -> None:
    with VeraClient.from_settings() as vera:
        assert _organisations(vera) == {owner.organisation}


def test_from_settings_reads_the_key_from_a_dot_env_file(
    demo_environment: dict[str, str], owner: Lumen, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("VERA_API_KEY")
    (tmp_path / ".env").write_text(f"VERA_API_KEY={owner.key}\n", encoding="utf-8")
    with VeraClient.from_settings() as vera:
        assert _organisations(vera) == {owner.organisation}


def test_a_key_passed_wins_over_vera_api_key(demo_environment: dict[str, str]) -> None:
    with VeraClient.from_settings("vera_000000000000_" + "x" * 43) as vera, pytest.raises(UnknownApiKeyError):
        vera.whoami()


def test_without_any_key_the_error_names_vera_api_key(
    demo_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERA_API_KEY")
    with VeraClient.from_settings() as vera, pytest.raises(ConfigurationError, match="VERA_API_KEY"):
        vera.whoami()


def test_the_async_client_from_settings_awaits_every_method(
    demo_environment: dict[str, str], owner: Lumen
) -> None:
    async def scenario() -> None:
        vera = await AsyncVeraClient.from_settings()
        async with vera:
            assert {m.group_id for m in await vera.whoami() if m.group_kind == "organisation"} == {
                owner.organisation
            }
            assert await vera.usage() == {}  # the deterministic embedder calls no hosted provider

    asyncio.run(scenario())
