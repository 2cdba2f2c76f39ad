"""What `vera source add` checks of a folder before registering it (issue 29), without a database:
a folder the worker could not list is refused then, not at ingest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vera_client.domain.errors import InvalidArgumentError, SourceUnavailableError
from vera_worker.connectors.folder import scan
from vera_worker.connectors.folder.scan import check_new_source


def test_an_unreadable_folder_is_refused_naming_the_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(_fd: int) -> list[str]:
        raise PermissionError(13, os.strerror(13))

    # (tests may run as root, whom permissions do not stop: the listing is refused here instead)
    monkeypatch.setattr(scan.os, "listdir", denied)
    with pytest.raises(
        SourceUnavailableError, match=r"source 'notes': cannot list folder .*: Permission denied"
    ):
        check_new_source(tmp_path, "notes", None)


def test_the_worker_roots_and_the_folder_itself(tmp_path: Path) -> None:
    inside = tmp_path / "in"
    inside.mkdir()
    assert check_new_source(inside, "notes", [tmp_path]) == inside.resolve()
    with pytest.raises(InvalidArgumentError, match="outside the folders the worker may read"):
        check_new_source(tmp_path, "notes", [inside])
    with pytest.raises(InvalidArgumentError, match="it does not exist"):
        check_new_source(tmp_path / "gone", "notes", None)
