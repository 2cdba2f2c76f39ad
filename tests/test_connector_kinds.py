"""The kinds of source: the CLI's list (vera_cli imports no worker code at startup) is the
registry's, each kind has a default tier, and a folder source goes to the folder connector
whatever its kind label."""

from __future__ import annotations

import pytest

from vera_cli.commands.sources import CONNECTOR_KINDS
from vera_client.domain.errors import InvalidArgumentError
from vera_worker.connectors.registry import FOLDER, KINDS, connector_kind
from vera_worker.connectors.secrets import MissingSecretError, redacted, source_token


def test_the_cli_names_the_registrys_kinds() -> None:
    assert set(CONNECTOR_KINDS) == set(KINDS)
    assert all(kind.tier in range(1, 5) for kind in KINDS.values())


def test_a_source_with_a_root_is_a_folder_whatever_its_kind() -> None:
    assert connector_kind("cmdb", {"root": "/srv/cmdb-export"}) is FOLDER
    assert connector_kind("cmdb", {"url": "http://127.0.0.1/"}) is KINDS["cmdb"]
    with pytest.raises(InvalidArgumentError, match="no connector reads sources of kind 'wiki'"):
        connector_kind("wiki", {})


def test_a_token_comes_only_from_the_named_variable_and_is_redacted() -> None:
    assert source_token("s", None, {"X": "y"}) is None
    assert source_token("s", "CMDB_TOKEN", {"CMDB_TOKEN": " abc \n"}) == "abc"
    with pytest.raises(MissingSecretError, match="its token_env CMDB_TOKEN is not set"):
        source_token("s", "CMDB_TOKEN", {"CMDB_TOKEN": " "})
    assert redacted("bad token abc in abc", "abc") == "bad token [secret] in [secret]"
    assert redacted("nothing", None) == "nothing"
