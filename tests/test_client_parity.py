"""What a new user meets before any database call: the two faces of the client have the same
methods (checked by introspection, so a method added to one face only fails here), both are
importable from the package, a created key never shows its secret in a repr, and settings come
from the environment and a .env file."""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from uuid import uuid4

import pytest

import vera_client
from vera_client import client as client_module
from vera_client.api.access import NewApiKey
from vera_client.api.operation import Operation
from vera_client.api.operator import Tenant
from vera_client.config import VeraSettings

SECRET = "vera_0123456789ab_" + "S" * 43

# Attributes that do no I/O and so are plain on both faces: a view is an object, the
# caller and the executor are what the client holds.
PLAIN_ON_BOTH = {"as_caller", "caller", "executor"}
# How each face is opened: VeraClient(dsn, ...) blocks; AsyncVeraClient.connect(...) is awaited.
ONLY_ASYNC = {"connect"}


def _public(face: type) -> dict[str, object]:
    """The face's public attributes; an operation (a descriptor both faces inherit) as the method
    a caller gets from an instance."""
    instance = object.__new__(face)
    found = {}
    for name in dir(face):
        if name.startswith("_"):
            continue
        attribute = inspect.getattr_static(face, name)
        found[name] = attribute.__get__(instance, face) if isinstance(attribute, Operation) else attribute
    return found


def _callable(attribute: object) -> object:
    return attribute.__func__ if isinstance(attribute, classmethod | staticmethod) else attribute


def _parameters(attribute: object) -> list[inspect.Parameter]:
    """The parameters a caller passes (no self or cls), with names, kinds, defaults and types."""
    function = _callable(attribute)
    assert callable(function)
    parameters = list(inspect.signature(function).parameters.values())
    return parameters[1:] if parameters and parameters[0].name in {"self", "cls"} else parameters


def test_the_clients_are_importable_from_the_package() -> None:
    from vera_client import AsyncVeraClient, VeraClient  # noqa: PLC0415 (the import is the test)

    assert VeraClient is client_module.VeraClient
    assert AsyncVeraClient is client_module.AsyncVeraClient
    assert {"VeraClient", "AsyncVeraClient", "VeraError"} <= set(vera_client.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        vera_client.Nothing  # noqa: B018 (the lookup is the test)


def test_every_method_of_one_face_is_on_the_other_with_the_same_signature() -> None:
    sync, asynchronous = _public(client_module.VeraClient), _public(client_module.AsyncVeraClient)
    only_sync, only_async = set(sync) - set(asynchronous), set(asynchronous) - set(sync) - ONLY_ASYNC
    assert not only_sync and not only_async, f"only sync: {only_sync}; only async: {only_async}"
    for name in sorted(set(sync) - {"caller", "executor"}):
        assert _parameters(sync[name]) == _parameters(asynchronous[name]), name


def test_the_async_face_is_all_coroutines_and_the_sync_face_none() -> None:
    sync, asynchronous = _public(client_module.VeraClient), _public(client_module.AsyncVeraClient)
    for name, attribute in asynchronous.items():
        if name in PLAIN_ON_BOTH:
            continue
        assert inspect.iscoroutinefunction(_callable(attribute)), f"AsyncVeraClient.{name} is not a coroutine"
    for name, attribute in sync.items():
        if name in PLAIN_ON_BOTH:
            continue
        assert callable(_callable(attribute)), name
        assert not inspect.iscoroutinefunction(_callable(attribute)), f"VeraClient.{name} is a coroutine"


@pytest.mark.parametrize(
    "created",
    [
        NewApiKey(key_id=uuid4(), prefix="0123456789ab", api_key=SECRET),
        Tenant(group_id="o:0123456789abcdef", owner_principal_id=uuid4(), api_key=SECRET),
    ],
    ids=["NewApiKey", "Tenant"],
)
def test_a_created_key_never_shows_its_secret(created: NewApiKey | Tenant) -> None:
    for shown in (repr(created), str(created), f"{created}", f"{created!r}", repr([created])):
        assert "S" * 43 not in shown and SECRET not in shown
    assert created.api_key == SECRET  # shown once, on purpose, by reading the field


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No VERA_ variable from the caller's shell, in an empty folder."""
    for name in [n for n in os.environ if n.startswith("VERA_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_settings_read_a_dot_env_file_and_the_environment_wins(
    clean_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (clean_environment / ".env").write_text(
        f"VERA_API_KEY={SECRET}\nVERA_EMBEDDER__PROVIDER=deterministic\nVERA_POOL__MAX_SIZE=3\n"
        "OPENAI_API_KEY=not-a-vera-setting\n",
        encoding="utf-8",
    )
    settings = VeraSettings()
    assert settings.api_key is not None and settings.api_key.get_secret_value() == SECRET
    assert settings.embedder.provider == "deterministic"
    assert settings.pool.max_size == 3
    assert SECRET not in repr(settings)

    monkeypatch.setenv("VERA_POOL__MAX_SIZE", "7")
    assert VeraSettings().pool.max_size == 7  # the environment over the file
    assert VeraSettings(pool={"max_size": 9}).pool.max_size == 9  # arguments over both


def test_without_a_dot_env_file_nothing_changes(clean_environment: Path) -> None:
    settings = VeraSettings()
    assert settings.api_key is None
    assert settings.embedder.provider == "local"


@pytest.mark.parametrize(
    "name", ["get_entity", "explore", "explore_graph", "changes", "conflicts", "list_proposals"]
)
def test_a_lists_length_is_limit_on_both_faces_of_the_api(name: str) -> None:
    """The MCP tools take `limit` (public: agents send it); the client's methods took `max_rows`
    until issue 29, so one call had two names. The SQL functions keep their `max_rows`."""
    for face in (client_module.VeraClient, client_module.AsyncVeraClient):
        operation = getattr(face, name)
        assert isinstance(operation, Operation)
        parameters = operation.signature.parameters
        assert "limit" in parameters and "max_rows" not in parameters, (face.__name__, name)
