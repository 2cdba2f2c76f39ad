from __future__ import annotations

from pathlib import Path

import pytest

from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.domain.errors import InvalidArgumentError, NotFoundError


def test_put_get_delete(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    store.put("a/b/c.md", "Tiếng Việt".encode())
    assert store.get("a/b/c.md").decode() == "Tiếng Việt"
    assert store.delete("a/b/c.md") is True
    assert store.delete("a/b/c.md") is False
    with pytest.raises(NotFoundError):
        store.get("a/b/c.md")


@pytest.mark.parametrize("key", ["", "/etc/passwd", "../escape", "a/../../b", "a//b", "a\\b"])
def test_keys_cannot_escape_the_root(tmp_path: Path, key: str) -> None:
    with pytest.raises(InvalidArgumentError):
        LocalObjectStore(tmp_path).put(key, b"x")
