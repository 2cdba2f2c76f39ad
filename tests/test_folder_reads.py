"""What the folder connector reads of a scanned file (issue 27), without a database: a file
swapped for a symbolic link after the scan, or a folder on its path swapped for one, is not
read; a file over its kind's size limit is refused before a byte is read (a sparse file of
terabytes costs nothing here); a CSV is cut at the row cap with a warning naming it; a source's
root must lie within its organisation's folders and the worker's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from vera_client.config import ReadLimits, VeraSettings
from vera_client.domain.errors import SourceUnavailableError
from vera_worker.connectors.folder import reading
from vera_worker.connectors.folder.reading import FileSkipped, open_root, read_scanned
from vera_worker.connectors.folder.scan import scan_files, source_root
from vera_worker.domain.formats import parse_record

SECRET = "The launch code is 0000."


@pytest.fixture
def share(tmp_path: Path) -> Path:
    root = tmp_path / "share"
    (root / "runbooks").mkdir(parents=True)
    (root / "runbooks" / "billing.md").write_text("# Billing\n\nRestart with kubectl.\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    return root


@pytest.fixture
def root_fd(share: Path) -> Iterator[int]:
    fd = open_root(share.resolve())
    yield fd
    os.close(fd)


def _scanned(share: Path, key: str):  # type: ignore[no-untyped-def]
    return next(state for state in scan_files(share) if state.key == key)


def test_the_scanned_file_is_read(share: Path, root_fd: int) -> None:
    state = _scanned(share, "runbooks/billing.md")
    assert read_scanned(root_fd, state, 1024) == (share / "runbooks" / "billing.md").read_bytes()


def test_a_file_swapped_for_a_link_after_the_scan_is_not_read(share: Path, root_fd: int) -> None:
    state = _scanned(share, "runbooks/billing.md")
    target = share / "runbooks" / "billing.md"
    target.unlink()
    target.symlink_to(share.parent / "outside" / "secret.md")
    with pytest.raises(FileSkipped, match=r"runbooks/billing\.md: a symbolic link"):
        read_scanned(root_fd, state, 1024)


def test_a_folder_on_the_path_swapped_for_a_link_is_not_followed(share: Path, root_fd: int) -> None:
    state = _scanned(share, "runbooks/billing.md")
    (share / "runbooks").rename(share.parent / "moved")
    (share.parent / "outside" / "billing.md").write_text(SECRET, encoding="utf-8")
    (share / "runbooks").symlink_to(share.parent / "outside", target_is_directory=True)
    with pytest.raises(FileSkipped, match="a symbolic link on its path"):
        read_scanned(root_fd, state, 1024)


def test_a_file_replaced_or_changed_since_the_scan_is_not_read(share: Path, root_fd: int) -> None:
    state = _scanned(share, "runbooks/billing.md")
    path = share / "runbooks" / "billing.md"
    fresh = share / "fresh.tmp"
    fresh.write_text("# Billing\n\nRestart with kubectl.\n", encoding="utf-8")  # same size, another inode
    os.utime(fresh, ns=(state.mtime_ns, state.mtime_ns))
    fresh.replace(path)
    with pytest.raises(FileSkipped, match="replaced by another file"):
        read_scanned(root_fd, state, 1024)
    state = _scanned(share, "runbooks/billing.md")
    path.write_text("# Billing\n\nRestart with kubectl, then check.\n", encoding="utf-8")
    with pytest.raises(FileSkipped, match="changed since the scan"):
        read_scanned(root_fd, state, 1024)


def test_a_huge_sparse_file_is_refused_before_a_byte_is_read(
    share: Path, root_fd: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = share / "dump.txt"
    huge.touch()
    os.truncate(huge, 1 << 40)  # a terabyte of holes: no disk, and no memory unless read
    state = _scanned(share, "dump.txt")

    def no_read(*_: object) -> bytes:
        raise AssertionError("the file was read")

    monkeypatch.setattr(reading.os, "read", no_read)
    with pytest.raises(FileSkipped, match=r"dump\.txt: 1,099,511,627,776 bytes, over the limit of 8,388,608"):
        read_scanned(root_fd, state, ReadLimits().max_bytes("text/plain"))


def test_the_scan_skips_symbolic_links(share: Path) -> None:
    (share / "linked.md").symlink_to(share.parent / "outside" / "secret.md")
    (share / "inside.md").symlink_to(share / "runbooks" / "billing.md")
    (share / "elsewhere").symlink_to(share.parent / "outside", target_is_directory=True)
    assert [state.key for state in scan_files(share)] == ["runbooks/billing.md"]


def test_a_csv_over_the_row_cap_is_cut_with_a_warning_naming_it() -> None:
    rows = "".join(f"svc-{n},team-{n}\n" for n in range(8))
    record = parse_record("exports/cmdb.csv", ("service,owned by\n" + rows).encode(), max_csv_rows=5)
    assert [claim.subject for claim in record.claims] == [f"svc-{n}" for n in range(5)]
    [warning] = record.warnings
    assert warning.startswith("exports/cmdb.csv: more than 5 rows; only the first 5 are read")
    whole = parse_record("exports/cmdb.csv", ("service,owned by\n" + rows).encode(), max_csv_rows=8)
    assert (len(whole.claims), whole.warnings) == (8, ())


def test_the_limits_are_settings_per_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = ReadLimits()
    assert (limits.max_bytes("text/markdown"), limits.max_bytes("text/csv"), limits.csv_rows) == (
        8 << 20, 16 << 20, 10_000,
    )  # fmt: skip
    monkeypatch.setenv("VERA_WORKER__READ_LIMITS__CSV_ROWS", "500")
    monkeypatch.setenv("VERA_WORKER__READ_LIMITS__MARKDOWN_BYTES", "1024")
    configured = VeraSettings().worker.read_limits
    assert (configured.csv_rows, configured.max_bytes("text/markdown")) == (500, 1024)


def test_a_root_must_lie_within_the_worker_and_the_organisation_folders(tmp_path: Path) -> None:
    a, b = tmp_path / "tenant-a", tmp_path / "tenant-b"
    for folder in (a, b):
        folder.mkdir()
    (a / "to-b").symlink_to(b, target_is_directory=True)
    worker = [tmp_path]  # a worker serving both tenants
    assert source_root({"root": str(a)}, "docs", worker, [str(a)]) == a.resolve()
    with pytest.raises(SourceUnavailableError, match="outside the folders its organisation may read"):
        source_root({"root": str(b)}, "docs", worker, [str(a)])
    with pytest.raises(SourceUnavailableError, match="outside the folders its organisation may read"):
        source_root({"root": str(a / "to-b")}, "docs", worker, [str(a)])  # the link is resolved
    with pytest.raises(SourceUnavailableError, match="vera tenant roots add"):
        source_root({"root": str(a)}, "docs", worker, [])
    with pytest.raises(SourceUnavailableError, match="VERA_WORKER__SOURCE_ROOTS"):
        source_root({"root": str(a)}, "docs", [b], [str(tmp_path)])
