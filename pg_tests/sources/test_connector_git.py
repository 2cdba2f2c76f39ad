"""The git connector through the real worker, on repositories the tests make
with the git CLI: a first run, an incremental run after a commit that edits,
renames and deletes (the deleted and the old name retracted), a re-run with
no new commit that reads nothing, a run that dies mid-way and the next one
resuming with nothing lost or doubled, documents in the repository, and the
transports and paths refused."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.document_files import pdf

from pg_tests.support.clients import client_for
from pg_tests.support.ingesting import run_worker
from pg_tests.support.seed import World, caller, create_project
from vera_client.api import sources as sources_api
from vera_client.api.sources import SourceStatus
from vera_client.config import ReadLimits
from vera_client.domain.errors import SourceUnavailableError
from vera_worker.connectors.git import repository as git_repository


def _git(repo: Path, *args: str, when: str = "2026-03-01T10:00:00+00:00") -> str:
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_NAME": "Ann",
           "GIT_AUTHOR_EMAIL": "ann@example.org", "GIT_COMMITTER_NAME": "Ann",
           "GIT_COMMITTER_EMAIL": "ann@example.org", "PATH": "/usr/bin:/bin", "HOME": str(repo)}  # fmt: skip
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=env, check=True)  # noqa: S603, S607
    return done.stdout.decode().strip()


def _commit(repo: Path, files: dict[str, str | bytes | None], message: str, when: str) -> str:
    for name, content in files.items():
        path = repo / name
        if content is None:
            _git(repo, "rm", "-q", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        _git(repo, "add", name)
    _git(repo, "commit", "-q", "-m", message, when=when)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "handbook"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    _commit(path, {
        "teams/ledger.md": "# Ledger\n\nThe ledger service is run by the Data Platform team.\n",
        "teams/billing.md": "# Billing\n\nThe billing API issues invoices every night.\n",
        "notes/old.txt": "The mailer sends digests on Mondays.\n",
        "image.png": b"\x89PNG not read",
    }, "first", "2026-01-10T09:00:00+00:00")  # fmt: skip
    _commit(path, {"runbooks/backup.pdf": pdf(["Backups of the ledger run nightly at two."])},
            "runbook", "2026-02-01T09:00:00+00:00")  # fmt: skip
    return path


def _register(world: World, group: str, repo: Path | str, **config: Any) -> sources_api.Source:
    with client_for(world, world.a.owner_key) as vera:
        source_id = vera.register_source(group, "git", "handbook", 2, config={"repo": str(repo), **config})
        vera.request_ingest(group, source_id)
        return next(s for s in vera.list_sources(group) if s.source_id == source_id)


def _ingest(world: World, source: sources_api.Source) -> None:
    with client_for(world, world.a.owner_key) as vera:
        vera.request_ingest(source.group_id, source.source_id)


def _status(world: World, group: str) -> SourceStatus:
    with client_for(world, world.a.owner_key) as vera:
        [found] = vera.source_status(group)
    return found


def _search(world: World, group: str, query: str) -> list[tuple[str, str | None]]:
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select text, citation -> 'chunk' ->> 'heading' from vera.search(%s, groups => array[%s])",
            (query, group),
        ).fetchall()
    return [(row[0], row[1]) for row in rows]


def _episodes(world: World, group: str) -> list[tuple[str, str, str, bool]]:
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select external_id, uri, observed_at::text, status = 'retracted' from vera.episodes "
            "where group_id = %s order by external_id, observed_at",
            (group,),
        ).fetchall()
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def test_first_run_incremental_run_and_no_change_rerun(
    world: World, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = create_project(world, "git-runs")
    source = _register(world, group, repo, page_size=2)
    head = _git(repo, "rev-parse", "HEAD")
    first_commit = _git(repo, "rev-parse", "HEAD~1")

    [first] = run_worker(world.db, tmp_path / "objects")
    assert (first.scanned, first.ingested, first.skipped, first.failed) == (4, 4, [], [])
    episodes = {e[0]: e for e in _episodes(world, group)}
    assert set(episodes) == {"teams/ledger.md", "teams/billing.md", "notes/old.txt", "runbooks/backup.pdf"}
    # each cites the commit that last changed it and its path, and is dated by that commit
    assert episodes["teams/ledger.md"][1] == f"{repo}@{first_commit}:teams/ledger.md"
    assert episodes["teams/ledger.md"][2].startswith("2026-01-10 09:00:00")
    assert episodes["runbooks/backup.pdf"][1] == f"{repo}@{head}:runbooks/backup.pdf"
    assert episodes["runbooks/backup.pdf"][2].startswith("2026-02-01 09:00:00")
    # the PDF's text is found, its page in the passage's heading
    assert ("Backups of the ledger run nightly at two.", "page 1") in _search(world, group, "backups nightly")
    assert _status(world, group).cursor_position == {"commit": head}

    # nothing committed since: no body read at all (a blob read would fail the run)
    def no_bodies(self: git_repository.GitRepository, ids: Any) -> list[bytes]:
        raise AssertionError(f"bodies read: {ids}")

    with monkeypatch.context() as patch:
        patch.setattr(git_repository.GitRepository, "blobs", no_bodies)
        _ingest(world, source)
        [idle] = run_worker(world.db, tmp_path / "objects")
    assert (idle.scanned, idle.ingested, idle.retracted) == (0, 0, 0)

    # edit one file, rename one, delete one, add a non-readable one
    _git(repo, "mv", "teams/billing.md", "teams/payments.md")
    new_head = _commit(repo, {
        "teams/ledger.md": "# Ledger\n\nThe ledger service is run by the Storage team since March.\n",
        "notes/old.txt": None,
        "data.bin": b"\0\1",
    }, "second", "2026-03-05T12:00:00+00:00")  # fmt: skip
    _ingest(world, source)
    [second] = run_worker(world.db, tmp_path / "objects")
    # only the changed files are read: the edit and the rename's new name
    assert (second.scanned, second.ingested, second.retracted) == (2, 2, 2)
    live = {e[0]: e for e in _episodes(world, group) if not e[3]}
    assert set(live) == {"teams/ledger.md", "teams/payments.md", "runbooks/backup.pdf"}
    assert live["teams/ledger.md"][1] == f"{repo}@{new_head}:teams/ledger.md"
    assert live["teams/ledger.md"][2].startswith("2026-03-05 12:00:00")
    texts = [t for t, _h in _search(world, group, "ledger service team")]
    assert any("Storage team" in t for t in texts)
    assert not any("digests on Mondays" in t for t, _h in _search(world, group, "mailer digests Mondays"))
    assert _status(world, group).cursor_position == {"commit": new_head}


def test_a_run_that_dies_mid_way_resumes_with_nothing_lost_or_doubled(
    world: World, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = create_project(world, "git-crash")
    source = _register(world, group, repo, page_size=1)
    original = git_repository.GitRepository.blobs
    calls = {"n": 0}

    def failing_third_page(self: git_repository.GitRepository, ids: Any) -> list[bytes]:
        calls["n"] += 1
        if calls["n"] == 3:
            raise SourceUnavailableError("source 'handbook': git cat-file failed: the disk went away")
        return original(self, ids)

    monkeypatch.setattr(git_repository.GitRepository, "blobs", failing_third_page)
    assert run_worker(world.db, tmp_path / "objects") == []
    status = _status(world, group)
    assert status.last_status == "failed" and "disk went away" in (status.error or "")
    head = _git(repo, "rev-parse", "HEAD")
    # four readable files in sorted order, pages of one: two committed
    assert status.cursor_position == {"target": head, "after": "runbooks/backup.pdf"}

    monkeypatch.setattr(git_repository.GitRepository, "blobs", original)
    _ingest(world, source)
    [resumed] = run_worker(world.db, tmp_path / "objects")
    assert (resumed.scanned, resumed.ingested) == (2, 2)  # the rest only
    counts: dict[str, int] = {}
    for external_id, *_rest in _episodes(world, group):
        counts[external_id] = counts.get(external_id, 0) + 1
    assert counts == {
        "notes/old.txt": 1,
        "runbooks/backup.pdf": 1,
        "teams/billing.md": 1,
        "teams/ledger.md": 1,
    }
    assert _status(world, group).cursor_position == {"commit": head}


def test_bad_documents_are_skipped_by_name_and_the_run_goes_on(
    world: World, repo: Path, tmp_path: Path
) -> None:
    group = create_project(world, "git-bad")
    _commit(repo, {"broken.pdf": b"%PDF-1.4\nnot a pdf", "page.html": b"<html><body><p>Hello board.</p>"
                   b"<script>alert(1)</script></body></html>"}, "bad", "2026-02-02T00:00:00+00:00")  # fmt: skip
    _commit(repo, {"big.pdf": pdf(["x" * 60_000])}, "big", "2026-02-03T00:00:00+00:00")
    _register(world, group, repo)
    [report] = run_worker(world.db, tmp_path / "objects", read_limits=ReadLimits(document_bytes=50_000))
    assert report.ingested == 5
    assert [key for key, _why in report.skipped] == ["big.pdf", "broken.pdf"]
    assert "over the limit of 50,000 for its kind" in report.skipped[0][1]
    assert "cannot be read as PDF" in report.skipped[1][1]
    assert report.warnings == [("page.html", "page.html: 1 <script> element(s) removed, not read as text")]
    assert not any("alert" in t for t, _h in _search(world, group, "hello board alert"))


def test_a_repository_outside_the_allowed_folders_is_refused(world: World, tmp_path: Path) -> None:
    group = create_project(world, "git-outside")
    _register(world, group, Path("/usr/share"))
    assert run_worker(world.db, tmp_path / "objects") == []
    status = _status(world, group)
    assert status.last_status == "failed" and "outside the folders" in (status.error or "")


@pytest.fixture
def daemon(repo: Path) -> Iterator[str]:
    """`git daemon` serving the test's repository on 127.0.0.1 (git://): a URL repository."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(  # noqa: S603
        ["git", "daemon", "--reuseaddr", "--export-all", f"--base-path={repo.parent}",  # noqa: S607
         "--listen=127.0.0.1", f"--port={port}", str(repo.parent)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(100):
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/{repo.name}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_url_repository_is_fetched_into_the_cache(
    world: World, repo: Path, daemon: str, tmp_path: Path
) -> None:
    group = create_project(world, "git-url")
    source = _register(world, group, daemon, branch="main")
    [first] = run_worker(world.db, tmp_path / "objects")
    assert (first.ingested, first.failed) == (4, [])
    clones = list((tmp_path / "objects" / "connector-cache" / "git").iterdir())
    assert len(clones) == 1 and (clones[0] / "HEAD").exists()  # a bare repository in the worker's cache
    head = _commit(repo, {"teams/ledger.md": "# Ledger\n\nRun by the Storage team.\n"}, "edit",
                   "2026-04-01T00:00:00+00:00")  # fmt: skip
    _ingest(world, source)
    [second] = run_worker(world.db, tmp_path / "objects")
    assert (second.scanned, second.ingested, second.retracted) == (1, 1, 0)
    assert _status(world, group).cursor_position == {"commit": head}
    assert any(uri == f"{daemon}@{head}:teams/ledger.md" for _k, uri, _at, _r in _episodes(world, group))
