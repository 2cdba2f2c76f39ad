"""Reading a scanned file's bytes, and only that file's.

The scan (scan.py) saw a file at a path below the source's root; between the
scan and the read, anything on the path may have been replaced (a file by a
symbolic link to /etc/shadow, a folder by a link to another tenant's share).
So the read follows no link at all: the root is opened by its real path, one
component at a time, and every component below it relative to its parent's
descriptor with O_NOFOLLOW (folders with O_DIRECTORY too), so a link anywhere
fails the open. What was opened is then checked against what the scan saw
(a regular file, the same device, inode, size and modification time) and its
size against the kind's limit, before a single byte is read; the bytes are read
from that descriptor and no more than the size the scan saw.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in must not hang the open (a regular file ignores it)
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileState:
    """A file as the scan saw it."""

    key: str  # POSIX path relative to the source's root
    mtime_ns: int
    size: int
    # which file it was: the read opens it again and refuses another (a file swapped for a link)
    device: int = 0
    inode: int = 0

    @property
    def signature(self) -> str:
        """What a run compares with the signature VERA holds of its record: the same time and size
        is not read again."""
        return f"{self.mtime_ns}:{self.size}"


class FileSkipped(Exception):
    """The file is not read, for the reason given (a link, a swapped or changed file, over its
    size limit): the run reports it as skipped with a warning naming it, and goes on."""


def open_root(real_root: Path) -> int:
    """A descriptor of the source's root folder, opened by its real path without following any
    link on the way (a component swapped for a link since the path was resolved fails)."""
    if not real_root.is_absolute():
        raise ValueError(f"{real_root} is not absolute")
    fd = os.open("/", _FOLDER)
    try:
        for part in real_root.parts[1:]:
            child = os.open(part, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_scanned(root_fd: int, state: FileState, max_bytes: int) -> bytes:
    """The bytes of the file the scan saw at state.key below the root, or FileSkipped; OSError
    when it cannot be read at all (then it is a failure, tried again by the next run)."""
    parts = state.key.split("/")
    if any(part in {"", ".", ".."} for part in parts):
        raise FileSkipped(f"{state.key}: not a plain path below the root")
    fd = _open_below(root_fd, state.key, parts)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise FileSkipped(f"{state.key}: not a regular file any more (replaced since the scan): not read")
        if (found.st_dev, found.st_ino) != (state.device, state.inode):
            raise FileSkipped(f"{state.key}: replaced by another file since the scan: not read")
        if (found.st_size, found.st_mtime_ns) != (state.size, state.mtime_ns):
            raise FileSkipped(f"{state.key}: changed since the scan: not read now, the next run reads it")
        if found.st_size > max_bytes:
            raise FileSkipped(
                f"{state.key}: {found.st_size:,} bytes, over the limit of {max_bytes:,} for its kind "
                "(VERA_WORKER__READ_LIMITS__*): not read"
            )
        return _read_exactly(fd, state)
    finally:
        os.close(fd)


def _open_below(root_fd: int, key: str, parts: list[str]) -> int:
    """The file at parts below root_fd, every component opened without following a link."""
    fd = root_fd
    try:
        for part in parts[:-1]:
            child = os.open(part, _FOLDER, dir_fd=fd)
            if fd != root_fd:
                os.close(fd)
            fd = child
        return os.open(parts[-1], _FILE, dir_fd=fd)
    except OSError as exc:
        if exc.errno in {errno.ELOOP, errno.ENOTDIR, errno.EMLINK}:
            raise FileSkipped(
                f"{key}: a symbolic link on its path (swapped since the scan?): not followed"
            ) from exc
        raise
    finally:
        if fd != root_fd:
            os.close(fd)


def _read_exactly(fd: int, state: FileState) -> bytes:
    """The file's bytes, at most the size the scan saw; a file that grows while read is skipped."""
    chunks: list[bytes] = []
    remaining = state.size
    while remaining > 0:
        chunk = os.read(fd, min(_CHUNK, remaining))
        if not chunk:
            raise FileSkipped(f"{state.key}: shrank while it was read: not read now, the next run reads it")
        chunks.append(chunk)
        remaining -= len(chunk)
    if os.read(fd, 1):
        raise FileSkipped(f"{state.key}: grew while it was read: not read now, the next run reads it")
    return b"".join(chunks)
