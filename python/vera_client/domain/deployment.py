"""What VERA knows of the servers and migrations it manages: values of the operator's
tools (the embedded server, the migration runner, SQL applications' logins)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
    # listed in sql/migrations/RELEASED: frozen, an edit is refused
    released: bool = False


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
class LoginLimits:
    """What one SQL application's login may use: connections at once, and how
    long a statement may run and a transaction may sit idle before the server
    ends it ("30s", "500ms", "2min", "1h"; "0" turns a limit off)."""

    connection_limit: int = 20
    statement_timeout: str = "30s"
    idle_in_transaction_timeout: str = "60s"


@dataclass(frozen=True, kw_only=True, slots=True)
class AppLogin:
    """A login role of one SQL application: a member of vera_app, with its limits."""

    role: str
    limits: LoginLimits
    can_login: bool
    sessions: int
