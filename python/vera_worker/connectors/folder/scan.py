"""The files below a source's root folder, as the connector reads them."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from vera_client.domain.errors import InvalidArgumentError, SourceUnavailableError
from vera_worker.connectors.folder.cursor import FileState
from vera_worker.domain.formats import mime_type


def source_root(config: dict[str, object], name: str, allowed: Sequence[Path]) -> Path:
    """The folder a filesystem source reads (its config's "root"), which must lie within one of the
    folders the operator allows (VERA_WORKER__SOURCE_ROOTS): a source names its root freely, and
    without this any tenant could have the worker read another tenant's folder, or /etc."""
    root = config.get("root")
    if not isinstance(root, str) or not root:
        raise SourceUnavailableError(f"source {name!r} has no root folder in its config")
    path = Path(root)
    if not path.is_absolute():
        raise SourceUnavailableError(f"source {name!r}: root {root!r} is not an absolute path")
    if not path.is_dir():
        raise SourceUnavailableError(f"source {name!r}: folder {root} does not exist or is not a folder")
    real = path.resolve(strict=True)  # symbolic links resolved: a link cannot lead out of the allowed folders
    if not any(real == base or base in real.parents for base in (a.resolve() for a in allowed)):
        raise SourceUnavailableError(
            f"source {name!r}: folder {root} is outside the folders this worker may read "
            "(VERA_WORKER__SOURCE_ROOTS): ask the operator, or register a folder inside them"
        )
    return path


def scope_path(root: Path, scope: str | None) -> Path:
    """root/scope, refusing a scope that leaves the root."""
    if not scope:
        return root
    target = (root / scope).resolve()
    if target != root.resolve() and root.resolve() not in target.parents:
        raise InvalidArgumentError(f"{scope!r} is not below the source's root {root}")
    return target


def scan_files(root: Path, scope: str | None = None) -> Iterator[FileState]:
    """Readable records (Markdown, CSV, text) at or below root/scope, by relative POSIX path.

    Hidden files and folders are skipped (.git, editors' swap files), and so is
    anything a symbolic link would take outside the root.
    """
    real_root = root.resolve()
    start = scope_path(root, scope)
    if start.is_file():
        candidates: Iterator[Path] = iter([start])
    elif start.is_dir():
        candidates = _walk(start)
    else:
        return
    for path in candidates:
        key = path.relative_to(real_root).as_posix() if path.is_absolute() else path.as_posix()
        if mime_type(key) is None:
            continue
        try:
            resolved = path.resolve(strict=True)
            if real_root not in resolved.parents:
                continue
            stat = resolved.stat()
        except OSError:
            continue  # vanished or unreadable since the walk: the next run sees it again
        yield FileState(key=key, mtime_ns=stat.st_mtime_ns, size=stat.st_size)


def _walk(start: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(start.resolve(), followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(folder) / name
