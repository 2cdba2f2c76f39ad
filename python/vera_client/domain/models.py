"""Values that cross the library's boundary: frozen, keyword-only dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from uuid import UUID


@dataclass(frozen=True, kw_only=True, slots=True)
class ServerStatus:
    """State of a PostgreSQL server VERA manages."""

    running: bool
    data_dir: Path
    pid: int | None = None
    admin_url: str | None = None
    app_url: str | None = None
    tcp_address: str | None = None
    log_file: Path | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    """One numbered, run-once SQL file."""

    version: int
    name: str
    path: Path
    sha256: str


@dataclass(frozen=True, kw_only=True, slots=True)
class MigrationState:
    """A migration and whether (and with which checksum) the database applied it."""

    migration: Migration
    applied: bool
    applied_sha256: str | None = None

    @property
    def edited(self) -> bool:
        return self.applied and self.applied_sha256 != self.migration.sha256


@dataclass(frozen=True, kw_only=True, slots=True)
class Tenant:
    """An organisation as created by an operator, with its owner's first API key."""

    group_id: str
    owner_principal_id: UUID
    api_key: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Signals:
    """The six signals of the blend, each in [0, 1]."""

    relevance: float
    authority: float
    verification: float
    recency: float
    feedback: float
    confidence: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    """One ranked answer of vera.search: a fact or a passage, with its citation."""

    rank: int
    kind: str
    item_id: UUID
    group_id: str
    text: str
    score: float
    signals: Signals
    citation: dict[str, object]
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Source:
    """A registered source: where knowledge comes from and how far it is trusted."""

    group_id: str
    source_id: UUID
    kind: str
    name: str
    uri: str | None
    trust_tier: int
    config: dict[str, object]
    created_at: datetime
    retracted_at: datetime | None
    tracked_records: int
