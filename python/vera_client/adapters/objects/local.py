"""Raw bytes in a folder of the local filesystem, one file per key."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path, PurePosixPath

from vera_client.domain.errors import InvalidArgumentError, NotFoundError


class LocalObjectStore:
    """Keys are relative POSIX paths below root; nothing can escape it."""

    def __init__(self, root: Path) -> None:
        self.root = root.expanduser().absolute()

    def _path(self, key: str) -> Path:
        parts = PurePosixPath(key).parts
        if not key or key.startswith("/") or "//" in key or ".." in parts or "\\" in key:
            raise InvalidArgumentError(f"invalid object key {key!r}: a relative path without '..'")
        return self.root.joinpath(*parts)

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # write then rename: a reader never sees half an object
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".partial-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError as exc:
            raise NotFoundError(f"no object {key!r}") from exc

    def delete(self, key: str) -> bool:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            return False
        return True
