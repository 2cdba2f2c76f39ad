"""The git connector. Config (what `vera source add git` writes):

    {"repo": "/srv/git/handbook" | "https://git.example/handbook.git",
     "branch": "main",             # default: the repository's HEAD
     "file_uri": "https://git.example/handbook/blob/{commit}/{path}",  # optional
     "functional": [...], "page_size": 100, "prune_interval_s": 0}

A run reads the branch's head commit (a URL repository is fetched first into
the worker's cache folder). The first run reads every Markdown, CSV, text and
document file of its tree; later runs only the files added, modified or
renamed since the cursor's commit (`git diff --name-only`); a run whose head
is the cursor's commit reads nothing. Deleted files, and the old names of
renamed ones, are gone from the slim listing (the head's tree), so the
runner retracts them: the git kind prunes on every run by default (listing a
tree reads no bodies). A file's episode is dated by the commit that last
changed it and cites that commit and the path.

The position: {"commit": C} once a run completed; while one is under way
{"base": B, "target": T, "after": PATH}: the run that resumes goes on from
the path after PATH of the same diff, and ends at {"commit": T}."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from vera_client.domain.errors import InvalidArgumentError, SourceUnavailableError
from vera_worker.connectors.contract import Item, Page, Pending, Position, Skip, SourceContext
from vera_worker.connectors.folder.scan import within
from vera_worker.connectors.git.repository import (
    Change,
    GitRepository,
    TreeFile,
    check_ref,
    check_repo,
    is_url,
)
from vera_worker.domain.formats import mime_type, parse_record
from vera_worker.domain.records import RecordFormatError
from vera_worker.domain.statements import functional_predicates

DEFAULT_PAGE_SIZE = 100
PAGE_BYTES = 64 * 1024 * 1024  # a page's bodies are read together: at most this much at once


class GitConnector:
    def __init__(self, context: SourceContext) -> None:
        config = context.config
        repo = config.get("repo")
        if not isinstance(repo, str):
            raise InvalidArgumentError(f'source {context.name!r}: config "repo" names the repository')
        self._repo = check_repo(repo)
        branch = config.get("branch")
        self._ref = check_ref(branch) if isinstance(branch, str) and branch else "HEAD"
        size = config.get("page_size", DEFAULT_PAGE_SIZE)
        self._page_size = size if isinstance(size, int) and 1 <= size <= 1000 else DEFAULT_PAGE_SIZE
        template = config.get("file_uri")
        self._file_uri = template if isinstance(template, str) and template else None
        self._functional = functional_predicates(config.get("functional"))
        self._context = context
        self._git: GitRepository | None = None
        self._target: str | None = None

    def _open(self) -> GitRepository:
        if self._git is not None:
            return self._git
        context = self._context
        if is_url(self._repo):
            if context.cache_dir is None:
                raise SourceUnavailableError(f"source {context.name!r}: this worker has no folder for clones")
            self._git = GitRepository.fetched(context.name, self._repo, context.cache_dir / "git", self._ref)
            self._ref = "refs/vera/head"
        else:
            self._git = GitRepository.open_local(context.name, self._checked_path())
        return self._git

    def _checked_path(self) -> str:
        """The local repository's real path, within the worker's and the organisation's folders."""
        name = self._context.name
        path = Path(self._repo)
        if not path.is_dir():
            raise SourceUnavailableError(f"source {name!r}: repository {self._repo} is not a folder")
        real = path.resolve(strict=True)
        if not within(real, self._context.allowed_roots):
            raise SourceUnavailableError(
                f"source {name!r}: repository {self._repo} is outside the folders this worker may read "
                "(VERA_WORKER__SOURCE_ROOTS)"
            )
        if not within(real, [Path(r) for r in self._context.organisation_roots]):
            raise SourceUnavailableError(
                f"source {name!r}: repository {self._repo} is outside the folders its organisation may "
                "read: see `vera tenant roots list`"
            )
        return str(real)

    def poll(self, position: Position | None) -> Iterator[Page]:
        git = self._open()
        done = _text(position, "commit")
        target = _text(position, "target")
        base = _text(position, "base") if target else done
        after = _text(position, "after")
        if target is None or not git.has_commit(target):
            target, after = git.commit(self._ref), None
        self._target = target
        if base is not None and not git.has_commit(base):
            base = None  # history rewritten (a force push): read the whole tree, unchanged by hash
        if base == target:
            return
        tree = git.tree(target)
        paths = git.changed(base, target) if base else list(tree)
        todo = sorted(
            p for p in paths if p in tree and mime_type(p) is not None and (after is None or p > after)
        )
        changes = git.last_changes(target, base, todo)
        for start in range(0, len(todo), self._page_size):
            batch = _within_bytes(todo[start : start + self._page_size], tree)
            for piece, last in batch:
                items = self._items(git, [tree[p] for p in piece], changes, target)
                finished = last and start + self._page_size >= len(todo)
                resume = {"commit": target} if finished else {"target": target, "after": piece[-1]}
                if base and not finished:
                    resume["base"] = base
                yield Page(items=tuple(items), position=resume)
        if not todo:
            yield Page(items=(), position={"commit": target})

    def slim(self) -> Iterator[str]:
        git = self._open()
        target = self._target or git.commit(self._ref)
        yield from (p for p in git.tree(target) if mime_type(p) is not None)

    def _items(
        self, git: GitRepository, files: Sequence[TreeFile], changes: dict[str, Change], target: str
    ) -> list[Skip | Pending]:
        """A page's files: their bodies fetched in one batch here, parsed by the runner's pipeline
        (Pending) ahead of the writes."""
        limits = self._context.read_limits
        readable = [f for f in files if f.size <= limits.max_bytes(mime_type(f.path))]
        bodies = dict(zip((f.path for f in readable), git.blobs([f.blob for f in readable]), strict=True))
        items: list[Skip | Pending] = []
        for file in files:
            data = bodies.get(file.path)
            if data is None:
                limit = limits.max_bytes(mime_type(file.path))
                why = f"{file.size:,} bytes, over the limit of {limit:,} for its kind"
                items.append(Skip(key=file.path, reason=f"{why} (VERA_WORKER__READ_LIMITS__*): not read"))
                continue
            change = changes.get(file.path)
            commit = change.commit if change else target
            read = partial(_fetched, data)
            convert = partial(self._convert, file.path, commit=commit, at=change.at if change else None)
            items.append(Pending(key=file.path, signature=None, read=read, convert=convert))
        return items

    def _convert(self, path: str, data: bytes, *, commit: str, at: str | None) -> Item | Skip:
        """A file's bytes as an Item, or a Skip naming why they hold nothing to write."""
        limits = self._context.read_limits
        try:
            record = parse_record(path, data, functional=self._functional, max_csv_rows=limits.csv_rows)
        except RecordFormatError as exc:
            return Skip(key=path, reason=str(exc))
        if record.warnings and not record.passages and not record.claims:
            return Skip(key=path, reason="nothing read: " + "; ".join(record.warnings))
        return Item(key=path, raw=data, mime=mime_type(path) or "application/octet-stream", record=record,
                    uri=self._uri(commit, path), observed_at=at, version=commit)  # fmt: skip

    def _uri(self, commit: str, path: str) -> str:
        if self._file_uri:
            return self._file_uri.replace("{commit}", commit).replace("{path}", path)
        return f"{self._repo}@{commit}:{path}"


def _fetched(data: bytes) -> bytes:
    """A body already fetched with its page's batch (git cat-file)."""
    return data


def _within_bytes(paths: list[str], tree: dict[str, TreeFile]) -> list[tuple[list[str], bool]]:
    """A page's paths cut where their bodies together pass PAGE_BYTES; (piece, is the last)."""
    pieces: list[list[str]] = [[]]
    total = 0
    for path in paths:
        size = tree[path].size
        if pieces[-1] and total + size > PAGE_BYTES:
            pieces.append([])
            total = 0
        pieces[-1].append(path)
        total += size
    return [(piece, n == len(pieces) - 1) for n, piece in enumerate(pieces)]


def _text(position: Position | None, name: str) -> str | None:
    value: Any = position.get(name) if position else None
    return value if isinstance(value, str) and value else None
