"""The MCP server's settings, read from the environment with the prefix VERA_MCP_.

    VERA_MCP_HOST=127.0.0.1                 # where `vera mcp serve --http` listens
    VERA_MCP_PORT=8765
    VERA_MCP_PUBLIC_URL=https://vera.example.com   # how clients reach it (the OAuth resource)
    VERA_MCP_ALLOWED_HOSTS='["vera.example.com"]'  # Host headers accepted (DNS rebinding)
    VERA_MCP_ALLOWED_ORIGINS='["https://app.example.com"]'
    VERA_MCP_GATEWAY_DSN=postgresql://vera_gateway@db.internal/vera   # external PostgreSQL only

The database, embedder and pool settings stay those of vera_client (VERA_DB__*, ...).
Only the entrypoints build settings.
"""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_PORT = 8765


class McpSettings(BaseSettings):
    """How the MCP server listens, whom it answers, and how long it waits."""

    model_config = SettingsConfigDict(env_prefix="VERA_MCP_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535)
    public_url: str | None = Field(
        default=None,
        description="the URL clients use to reach this server (without /mcp); "
        "default http://HOST:PORT. It names the OAuth protected resource.",
    )
    authorization_servers: list[str] = Field(
        default_factory=list,
        description="issuers of OAuth tokens this server accepts (RFC 9728 metadata); "
        "default: the server itself (API keys only)",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host headers accepted besides the public URL's and loopback ('name:*': any port)",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Origin headers accepted besides the public URL's and loopback ('http://name:*')",
    )
    max_body_bytes: int = Field(default=1 << 20, ge=1024, le=64 << 20)
    request_timeout_s: float = Field(default=30.0, gt=0, le=600)
    api_key_cache_s: float = Field(
        default=30.0,
        ge=0,
        le=300,
        description="how long a verified API key is remembered by the transport; 0: checked on every "
        "request. A revoked key passes the transport for at most this long, but every tool call "
        "authenticates it again in SQL, so it reads nothing meanwhile.",
    )
    gateway_dsn: str | None = Field(
        default=None,
        description="DSN of the vera_gateway login on an external PostgreSQL; "
        "on the embedded server the gateway role is used without it",
    )

    @field_validator("public_url")
    @classmethod
    def _url_shape(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    @property
    def base_url(self) -> str:
        """The URL clients reach this server at (no trailing slash)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return self.public_url or f"http://{host}:{self.port}"
