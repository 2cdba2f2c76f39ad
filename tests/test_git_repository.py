"""What the git connector lets reach git: repositories by absolute path or by a
network URL only (no ext:: or file:: transport, nothing option-like), branch
names only, and the parsing of `git log -z --name-only`."""

from __future__ import annotations

import pytest

from vera_client.domain.errors import InvalidArgumentError
from vera_worker.connectors.git.repository import _log_record, check_ref, check_repo, is_url


@pytest.mark.parametrize(
    "bad",
    ["-uhack", "--upload-pack=touch /tmp/x", "ext::sh -c touch% /tmp/pwned", "file::/etc", "fd::3",
     "file:///etc/x", "relative/path", "/srv/repo\nx", ""],
)  # fmt: skip
def test_refused_repositories(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        check_repo(bad)


@pytest.mark.parametrize(
    "good", ["https://git.example/handbook.git", "ssh://git@git.example/h.git", "git@git.example:org/h.git",
             "git://127.0.0.1:9418/h", "/srv/git/handbook"],
)  # fmt: skip
def test_accepted_repositories(good: str) -> None:
    assert check_repo(good) == good
    assert is_url(good) == (not good.startswith("/"))


def test_branch_names_only() -> None:
    assert check_ref("release/2026-12") == "release/2026-12"
    for bad in ("-b", "--upload-pack=x", "main;rm", "a b", ""):
        with pytest.raises(InvalidArgumentError):
            check_ref(bad)


def test_a_log_record_names_its_commit_time_and_paths() -> None:
    record = b"abc123 2026-03-01T10:00:00+00:00\x00\nteams/a b.md\x00docs/x.pdf\x00"
    assert _log_record(record) == ("abc123", "2026-03-01T10:00:00+00:00", ["teams/a b.md", "docs/x.pdf"])
    assert _log_record(b"def456 2026-01-01T00:00:00+00:00\x00") == ("def456", "2026-01-01T00:00:00+00:00", [])
