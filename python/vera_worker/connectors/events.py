"""What an ingestion run tells: an event per file as it goes, a report when it ends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID


@dataclass(frozen=True, slots=True)
class IngestEvent:
    """Progress of a run, for a progress line or a log."""

    kind: Literal["planned", "ingested", "unchanged", "retracted", "failed", "skipped", "warned"]
    source: str
    key: str | None = None
    done: int = 0
    total: int = 0
    passages: int = 0
    claims: int = 0
    embeddings: int = 0
    message: str | None = None


@dataclass(slots=True)
class IngestReport:
    source: str
    scanned: int = 0
    untouched: int = 0  # the same change signature as VERA holds (a file's time and size): not read
    unchanged: int = 0  # read, same content
    ingested: int = 0  # a new episode or version
    retracted: int = 0
    passages: int = 0
    claims: int = 0
    embeddings: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (file, what its parser said)
    # (file, why): not read at all (over its size limit, swapped for a link, changed since the
    # scan); given no signature, so the next run looks at it again
    skipped: list[tuple[str, str]] = field(default_factory=list)
    stopped: bool = False  # asked to stop before every file was read
    pruned: bool = False  # a connector compared the source's id listing with what VERA holds
    episodes: list[UUID] = field(default_factory=list)  # the new episodes written (for extraction)

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (the CLI's --json summary)."""
        counts = {name: getattr(self, name) for name in _COUNTS}
        return {
            "source": self.source,
            **counts,
            "failed": [{"file": key, "error": message} for key, message in self.failed],
            "warnings": [{"file": key, "warning": message} for key, message in self.warnings],
            "skipped": [{"file": key, "reason": message} for key, message in self.skipped],
            "stopped": self.stopped,
        }


_COUNTS = ("scanned", "untouched", "unchanged", "ingested", "retracted", "passages", "claims", "embeddings")


def combined(reports: Sequence[IngestReport]) -> IngestReport:
    """The sum of a set of runs' reports."""
    total = IngestReport(source=", ".join(r.source for r in reports))
    for r in reports:
        for name in _COUNTS:
            setattr(total, name, getattr(total, name) + getattr(r, name))
        total.failed.extend(r.failed)
        total.warnings.extend(r.warnings)
        total.skipped.extend(r.skipped)
        total.stopped = total.stopped or r.stopped
        total.episodes.extend(r.episodes)
    return total
