"""The files below a source's root folder, as the connector reads them."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from vera_client.domain.errors import InvalidArgumentError, SourceUnavailableError
from vera_worker.connectors.folder.reading import FileState, open_root
from vera_worker.domain.formats import mime_type


def source_root(
    config: dict[str, object], name: str, allowed: Sequence[Path], organisation_roots: Sequence[str]
) -> Path:
    """The real path of the folder a filesystem source reads (its config's "root"), which must lie
    within one of the folders the operator lets this worker read (VERA_WORKER__SOURCE_ROOTS) and
    within one of the folders of the source's organisation (`vera tenant roots add`, checked when
    the source was registered and again here, links resolved): a worker serving several tenants
    reads each one's sources only in that tenant's folders."""
    root = config.get("root")
    if not isinstance(root, str) or not root:
        raise SourceUnavailableError(f"source {name!r} has no root folder in its config")
    path = Path(root)
    if not path.is_absolute():
        raise SourceUnavailableError(f"source {name!r}: root {root!r} is not an absolute path")
    if not path.is_dir():
        raise SourceUnavailableError(f"source {name!r}: folder {root} does not exist or is not a folder")
    real = path.resolve(strict=True)  # symbolic links resolved: a link cannot lead out of the allowed folders
    if not _within(real, allowed):
        raise SourceUnavailableError(
            f"source {name!r}: folder {root} is outside the folders this worker may read "
            "(VERA_WORKER__SOURCE_ROOTS): ask the operator, or register a folder inside them"
        )
    if not organisation_roots:
        raise SourceUnavailableError(
            f"source {name!r}: its organisation may read no folder yet: an operator allows one "
            "with `vera tenant roots add ORGANISATION PATH`"
        )
    if not _within(real, [Path(r) for r in organisation_roots]):
        raise SourceUnavailableError(
            f"source {name!r}: folder {root} (really {real}) is outside the folders its organisation "
            f"may read ({', '.join(organisation_roots)}): see `vera tenant roots list`"
        )
    return real


def open_source_root(real: Path, name: str) -> int:
    """A descriptor of a source's root folder (reading.open_root: no link followed) whose entries
    can be listed, or SourceUnavailableError naming the source (a folder the worker cannot read
    would otherwise look empty)."""
    try:
        fd = open_root(real)
    except OSError as exc:
        raise SourceUnavailableError(f"source {name!r}: cannot open {real}: {exc.strerror}") from exc
    try:
        os.listdir(fd)
    except OSError as exc:
        os.close(fd)
        raise SourceUnavailableError(f"source {name!r}: cannot list folder {real}: {exc.strerror}") from exc
    return fd


def check_new_source(folder: Path, name: str, worker_roots: Sequence[Path] | None) -> Path:
    """The real path of folder, checked as `vera source add` can before registering it as source
    name: a folder that exists and can be listed, within worker_roots (VERA_WORKER__SOURCE_ROOTS of
    the worker that reads it, when known: the embedded install's is this process's own). The
    organisation's folders are checked by SQL when the source is registered (VR001)."""
    path = folder.expanduser()
    if not path.is_dir():
        why = "it is a file" if path.exists() else "it does not exist"
        raise InvalidArgumentError(f"{folder} is not a folder: {why}")
    real = path.resolve(strict=True)
    if worker_roots is not None and not _within(real, worker_roots):
        raise InvalidArgumentError(
            f"folder {real} is outside the folders the worker may read (VERA_WORKER__SOURCE_ROOTS: "
            f"{', '.join(str(r) for r in worker_roots)}): register a folder inside them, or widen the setting"
        )
    os.close(open_source_root(real, name))
    return real


def within(real: Path, folders: Iterable[Path]) -> bool:
    """Whether a real path lies at or below one of the folders, each with its links resolved."""
    return _within(real, folders)


def _within(real: Path, folders: Iterable[Path]) -> bool:
    """Whether a real path lies at or below one of the folders, each with its links resolved."""
    return any(real == base or base in real.parents for base in (f.resolve() for f in folders))


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

    Hidden files and folders are skipped (.git, editors' swap files), and so are symbolic
    links: a file is read at its own path below the root, never through a link (reading.py
    opens it again without following any, and checks it is the file scanned here).
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
            found = os.lstat(path)  # the file itself, never what a link points to
        except OSError:
            continue  # vanished or unreadable since the walk: the next run sees it again
        if not stat.S_ISREG(found.st_mode) or real_root not in path.parents:
            continue  # a symbolic link (or a FIFO, a device) is never read
        yield FileState(key=key, mtime_ns=found.st_mtime_ns, size=found.st_size,
                        device=found.st_dev, inode=found.st_ino)  # fmt: skip


def _walk(start: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(start.resolve(), followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(folder) / name
