"""Configuration, read from the environment: prefix VERA_, nesting '__'.

    VERA_DB__DSN=postgresql://vera_app@db.internal/vera    # use an external PostgreSQL
    VERA_DB__ADMIN_DSN=postgresql://dba@db.internal/vera   # who runs migrations
    VERA_DB__DATA_DIR=/srv/vera/postgres                   # embedded server's data
    VERA_DB__TCP=true                                      # embedded: also listen on 127.0.0.1

Only the composition root (bootstrap.py) and the CLI build settings.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    """Where the embedded server keeps its data, per OS user.

    Root gets a dedicated folder under /var/lib: the embedded server runs as an
    unprivileged OS user and must be able to traverse every parent folder, so
    its data must never sit under /root (which would have to be opened up).
    """
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/vera/postgres")
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "vera" / "postgres"


class DbSettings(BaseModel):
    """Where the database is. Without a DSN, VERA runs its embedded PostgreSQL."""

    dsn: str | None = Field(
        default=None, description="Application DSN of an external PostgreSQL (role vera_app)"
    )
    admin_dsn: str | None = Field(
        default=None, description="DSN used for migrations and provisioning; defaults to dsn"
    )
    data_dir: Path = Field(default_factory=default_data_dir)
    database: str = "vera"
    port: int = Field(default=54329, ge=1024, le=65535)
    tcp: bool = False
    connect_timeout: int = Field(default=10, ge=1, le=600)

    @field_validator("dsn", "admin_dsn")
    @classmethod
    def _dsn_shape(cls, value: str | None) -> str | None:
        if value is None or value.strip() == "":
            return None
        if not (value.startswith(("postgresql://", "postgres://")) or "=" in value):
            raise ValueError("must be a postgresql:// URL or a key=value connection string")
        return value

    @property
    def embedded(self) -> bool:
        return self.dsn is None and self.admin_dsn is None


class VeraSettings(BaseSettings):
    """All of VERA's settings."""

    model_config = SettingsConfigDict(
        env_prefix="VERA_", env_nested_delimiter="__", extra="ignore", frozen=True
    )

    db: DbSettings = Field(default_factory=DbSettings)
