"""A git repository through the git CLI, read by commit, never through a work
tree: `ls-tree` lists a commit's files with their sizes, `diff --name-only`
what changed between two commits, `log --name-only` when each file last
changed, `cat-file --batch` the bodies.

Where the repository is:

- a local path (a work tree or a bare repository) that must lie within the
  folders the worker may read and its organisation's (as a folder source);
- a URL (https, http, ssh, git, or scp-like `user@host:path`), fetched into a
  bare repository under the worker's cache folder (one per URL). The `ext::`
  and `file::` transports, any other `transport::address` form and an
  option-like URL (starting with '-') are refused before git sees them, and
  git itself is told to allow only the network protocols.

Every command runs with the system and global configuration ignored, no
terminal prompt, no pager, hooks off, no external diff or text conversion: a
repository's own settings cannot make reading it run a program."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from vera_client.domain.errors import InvalidArgumentError, SourceUnavailableError

_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^:]")
_NETWORK = ("https://", "http://", "ssh://", "git://")
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.quotePath=false",
         "-c", "protocol.ext.allow=never", "-c", "protocol.file.allow=user")  # fmt: skip
_TIMEOUT_S = 600.0
_FETCH_TIMEOUT_S = 3600.0


@dataclass(frozen=True, slots=True)
class TreeFile:
    path: str
    blob: str  # the blob's id
    size: int


@dataclass(frozen=True, slots=True)
class Change:
    commit: str
    at: str  # the committer's time, ISO


def is_url(repo: str) -> bool:
    return repo.startswith(_NETWORK) or bool(_SCP_LIKE.match(repo))


def check_repo(repo: str) -> str:
    """The repository as given, or InvalidArgumentError: an option-like value, a `transport::`
    form (ext::, file::), or neither an absolute path nor a network URL."""
    if not repo or repo.startswith("-"):
        raise InvalidArgumentError(f"repository {repo!r}: a path or a URL, not an option")
    if "::" in repo.split("/", 1)[0] or repo.lower().startswith(("ext::", "file::", "fd::")):
        transport = repo.split("::", maxsplit=1)[0]
        raise InvalidArgumentError(f"repository {repo!r}: the {transport}:: transport is refused")
    if any(c in repo for c in "\0\n\r"):
        raise InvalidArgumentError("repository: a control character in its path or URL")
    if is_url(repo):
        return repo
    if repo.startswith("file:") or "://" in repo:
        raise InvalidArgumentError(
            f"repository {repo!r}: only https, http, ssh and git URLs, or an absolute path, are read"
        )
    if not Path(repo).is_absolute():
        raise InvalidArgumentError(f"repository {repo!r}: a local repository is given by its absolute path")
    return repo


def check_ref(branch: str) -> str:
    if not branch or branch.startswith("-") or not re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", branch):
        raise InvalidArgumentError(f"branch {branch!r}: not a branch name")
    return branch


def _git_command() -> str:
    """The git program's full path (SourceUnavailableError when the worker has none)."""
    found = shutil.which("git")
    if found is None:
        raise SourceUnavailableError("the git command is not installed on the worker")
    return found


def _env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "LC_ALL", "SSH_AUTH_SOCK"}}
    return {**keep, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_ALLOW_PROTOCOL": "https:http:ssh:git",
            "GIT_OPTIONAL_LOCKS": "0"}  # fmt: skip


class GitRepository:
    """Read-only access to one repository (a work tree or a bare one) at git_dir."""

    def __init__(self, source: str, git_dir: Path) -> None:
        self._source = source
        self._dir = git_dir

    @classmethod
    def open_local(cls, source: str, path: str) -> GitRepository:
        repo = cls(source, Path(path))
        repo._git("rev-parse", "--git-dir")  # a repository at all: one clear line if not
        return repo

    @classmethod
    def fetched(cls, source: str, url: str, cache_dir: Path, ref: str) -> GitRepository:
        """A bare repository under cache_dir holding url's ref as refs/vera/head, fetched now."""
        folder = cache_dir / hashlib.sha256(url.encode()).hexdigest()[:32]
        repo = cls(source, folder)
        if not (folder / "HEAD").exists():
            folder.mkdir(parents=True, exist_ok=True)
            repo._git("init", "--bare", "--quiet")
        refspec = f"+{ref if ref == 'HEAD' else 'refs/heads/' + ref}:refs/vera/head"
        repo._git("fetch", "--quiet", "--no-tags", "--", url, refspec, timeout=_FETCH_TIMEOUT_S)
        return repo

    def commit(self, ref: str) -> str:
        """The commit id ref names; SourceUnavailableError when there is none."""
        return self._git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").strip()

    def has_commit(self, commit: str) -> bool:
        try:
            self.commit(commit)
        except SourceUnavailableError:
            return False
        return True

    def tree(self, commit: str) -> dict[str, TreeFile]:
        """Every file (blob) of the commit's tree by path, with its size."""
        files: dict[str, TreeFile] = {}
        for entry in self._git_bytes("ls-tree", "-r", "-l", "-z", "--full-tree", commit).split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            parts = meta.split()
            if len(parts) != 4 or parts[1] != b"blob" or parts[3] == b"-":
                continue
            name = path.decode("utf-8", "surrogateescape")
            files[name] = TreeFile(name, parts[2].decode(), int(parts[3]))
        return files

    def changed(self, base: str, target: str) -> list[str]:
        """Paths added, modified, copied or renamed to (their new name) from base to target."""
        out = self._git_bytes(
            "diff", "--name-only", "-z", "-M", "--diff-filter=ACMRT", "--no-ext-diff", "--no-textconv",
            base, target, "--",
        )  # fmt: skip
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def last_changes(self, target: str, base: str | None, paths: Iterable[str]) -> dict[str, Change]:
        """For each path, the newest commit (up to target, after base) that changed it."""
        wanted = set(paths)
        found: dict[str, Change] = {}
        if not wanted:
            return found
        args = ["log", "-z", "--format=%x01%H %cI", "--name-only", "--no-renames", target]
        if base:
            args.append(f"^{base}")
        with subprocess.Popen(  # noqa: S603 (git, arguments as a list, no shell)
            [_git_command(), *_SAFE, "-C", str(self._dir), *args], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=_env(),
        ) as process:  # fmt: skip
            assert process.stdout is not None
            for commit, at, names in _log_records(process.stdout):
                for name in names:
                    if name in wanted and name not in found:
                        found[name] = Change(commit, at)
                if len(found) == len(wanted):
                    process.kill()  # the rest of the history is not needed
                    break
        return found

    def blobs(self, ids: Sequence[str]) -> list[bytes]:
        """The bodies of the blobs, in order, read by one `git cat-file --batch`."""
        if not ids:
            return []
        out = self._git_bytes("cat-file", "--batch", stdin="".join(f"{i}\n" for i in ids).encode())
        bodies: list[bytes] = []
        at = 0
        for blob in ids:
            header_end = out.index(b"\n", at)
            header = out[at:header_end].split()
            if len(header) != 3 or header[1] != b"blob":
                raise SourceUnavailableError(f"source {self._source!r}: blob {blob} cannot be read")
            size = int(header[2])
            bodies.append(out[header_end + 1 : header_end + 1 + size])
            at = header_end + 1 + size + 1
        return bodies

    def _git(self, *args: str, timeout: float = _TIMEOUT_S) -> str:
        return self._git_bytes(*args, timeout=timeout).decode("utf-8", "replace")

    def _git_bytes(self, *args: str, stdin: bytes | None = None, timeout: float = _TIMEOUT_S) -> bytes:
        try:
            done = subprocess.run(  # noqa: S603 (git, arguments as a list, no shell)
                [_git_command(), *_SAFE, "-C", str(self._dir), *args], input=stdin, capture_output=True,
                env=_env(), timeout=timeout, check=False,
            )  # fmt: skip
        except FileNotFoundError:
            raise SourceUnavailableError("the git command is not installed on the worker") from None
        except subprocess.TimeoutExpired:
            raise SourceUnavailableError(
                f"source {self._source!r}: git {args[0]} took over {timeout:.0f} s"
            ) from None
        if done.returncode != 0:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {done.returncode}"
            raise SourceUnavailableError(f"source {self._source!r}: git {args[0]} failed: {why[:300]}")
        return done.stdout


def _log_records(stream: Iterable[bytes]) -> Iterator[tuple[str, str, list[str]]]:
    """(commit, time, paths) of `git log -z --format=%x01%H %cI --name-only` output, streamed."""
    pending = b""
    for chunk in iter(lambda: stream.read(1 << 16), b""):  # type: ignore[attr-defined]
        pending += chunk
        records = pending.split(b"\x01")
        pending = records.pop()
        yield from (_log_record(r) for r in records if r)
    if pending:
        yield _log_record(pending)


def _log_record(record: bytes) -> tuple[str, str, list[str]]:
    head, *names = record.split(b"\0")
    commit, _, at = head.decode().partition(" ")
    paths = [n.lstrip(b"\n").decode("utf-8", "surrogateescape") for n in names]
    return commit, at, [p for p in paths if p]
