"""The MCP server's settings, read from the environment with the prefix VERA_MCP_
(nested settings with `__`):

    VERA_MCP_HOST=127.0.0.1                 # where `vera mcp serve --http` listens
    VERA_MCP_PORT=8765
    VERA_MCP_API=true                       # the HTTP API beside /mcp (`vera api serve`: alone)
    VERA_MCP_API_PORT=8766                  # where `vera api serve` listens
    VERA_MCP_CORS_ORIGINS='["https://app.example.com"]'   # browsers may call the API from there
    VERA_MCP_PUBLIC_URL=https://vera.example.com   # how clients reach it (the OAuth resource)
    VERA_MCP_ALLOWED_HOSTS='["vera.example.com"]'  # Host headers accepted (DNS rebinding)
    VERA_MCP_ALLOWED_ORIGINS='["https://app.example.com"]'
    VERA_MCP_OIDC__ISSUER=https://login.example.com/realms/lumen   # OIDC access tokens (see OidcSettings)
    VERA_MCP_QUOTAS__READ=120/min           # per principal and tool class
    VERA_MCP_QUOTAS__ORGANISATION__READ=1200/min   # a ceiling the organisation's principals share
    VERA_MCP_LOG_LEVEL=info
    OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318   # traces; none are recorded without it

The database (its gateway login VERA_DB__GATEWAY_DSN included), embedder, pool
and Valkey (VERA_CACHE__VALKEY_URL, which quotas share) settings stay those of
vera_client. Only the entrypoints build settings (`read_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pydantic
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from vera_client.config import VeraSettings, misshapen_setting
from vera_client.config import read_settings as read_vera_settings
from vera_client.domain.errors import ConfigurationError, VeraError
from vera_mcp.domain.access import ToolClass
from vera_mcp.domain.oidc import OidcSettings
from vera_mcp.domain.quotas import QuotaLimits, ThrottleLimits, parse_rate

DEFAULT_PORT = 8765
DEFAULT_API_PORT = 8766


def _readable_rate(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parse_rate(value)
    except VeraError as error:  # a form it cannot read: say which, as a validation error
        raise ValueError(str(error)) from None
    return value


class ClassRates(BaseModel):
    """A rate per tool class, "COUNT/UNIT" (e.g. "120/min"); a class not set keeps its default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    read: str | None = None
    context: str | None = None
    propose: str | None = None
    feedback: str | None = None
    snapshot: str | None = None
    review: str | None = None
    admin: str | None = None

    @field_validator("read", "context", "propose", "feedback", "snapshot", "review", "admin")
    @classmethod
    def _readable(cls, value: str | None) -> str | None:
        return _readable_rate(value)

    def overrides(self) -> Mapping[str, str]:
        return {c.value: rate for c in ToolClass if (rate := getattr(self, c.value)) is not None}


class OrganisationQuotaSettings(ClassRates):
    """Calls per organisation and tool class: a ceiling every principal of one organisation
    shares (service accounts included); a class not set keeps its default, ten times a
    principal's (vera_mcp.domain.quotas.DEFAULT_ORGANISATION_RATES)."""


class QuotaSettings(ClassRates):
    """Calls per principal and tool class; a class not set keeps its default
    (vera_mcp.domain.quotas.DEFAULT_RATES). The counters live in Valkey when
    VERA_CACHE__VALKEY_URL is set (shared by every instance), in process otherwise."""

    organisation: OrganisationQuotaSettings = Field(default_factory=OrganisationQuotaSettings)
    key_prefix: str = Field(
        default="vera", min_length=1, max_length=100, description="separates deployments sharing a Valkey"
    )

    def limits(self) -> QuotaLimits:
        return QuotaLimits.from_settings(self.overrides(), organisation=self.organisation.overrides())


class McpSettings(BaseSettings):
    """How the MCP server listens, whom it answers, how it counts and what it reports."""

    model_config = SettingsConfigDict(
        env_prefix="VERA_MCP_",
        env_nested_delimiter="__",
        extra="ignore",
        frozen=True,
        populate_by_name=True,
    )

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
        "default: the OIDC issuer when configured, else the server itself (API keys only)",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host headers accepted besides the public URL's and loopback ('name:*': any port)",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Origin headers accepted besides the public URL's and loopback ('http://name:*')",
    )
    api: bool = Field(
        default=False,
        description="serve the HTTP API (/v1, /openapi.json, /docs) in this server's app beside /mcp "
        "(`vera api serve` serves it alone)",
    )
    api_port: int = Field(
        default=DEFAULT_API_PORT, ge=1, le=65535, description="where `vera api serve` listens"
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description="origins whose pages may call the HTTP API from a browser (CORS); none by default",
    )
    probe_hosts: list[str] = Field(
        default_factory=list,
        description="Host headers accepted on /health/* only (a load balancer probing the pod's address)",
    )
    auth_failures_per_address: str = Field(
        default="30/min",
        description="failed bearer tokens one client address may send (COUNT/UNIT); then 429",
    )
    auth_failures_per_key_prefix: str = Field(
        default="10/min", description="failed API keys with one key prefix (COUNT/UNIT); then 429"
    )
    auth_negative_cache_s: float = Field(
        default=10.0, ge=0, le=300, description="a refused token is refused from memory for this long; 0: off"
    )
    max_body_bytes: int = Field(default=1 << 20, ge=1024, le=64 << 20)
    header_timeout_s: float = Field(
        default=10.0, gt=0, le=300, description="a request's head (line and headers) must arrive within this"
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, le=600, description="a request's body must arrive within this of its head"
    )
    keep_alive_s: float = Field(
        default=5.0, gt=0, le=300, description="an idle kept-alive connection is closed after this"
    )
    max_connections: int = Field(
        default=512,
        ge=1,
        le=100_000,
        description="connections open at once; more are answered 503 and closed",
    )
    max_header_bytes: int = Field(
        default=16 * 1024, ge=1024, le=1 << 20, description="the largest request head (line and headers)"
    )
    request_timeout_s: float = Field(default=30.0, gt=0, le=600)
    api_key_cache_s: float = Field(
        default=30.0,
        ge=0,
        le=300,
        description="how long a verified API key is remembered by the transport; 0: checked on every "
        "request. A revoked key passes the transport for at most this long, but every tool call "
        "authenticates it again in SQL, so it reads nothing meanwhile.",
    )
    oidc: OidcSettings | None = Field(
        default=None, description="OIDC access tokens over HTTP, beside API keys; none: API keys only"
    )
    quotas: QuotaSettings = Field(default_factory=QuotaSettings)
    metrics: bool = Field(
        default=True, description="serve Prometheus metrics at /metrics (no authentication: see docs/mcp.md)"
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT", "otlp_endpoint"),
        description="OTLP/HTTP collector of traces (the standard OTEL_EXPORTER_OTLP_ENDPOINT); "
        "none: no traces are recorded or sent",
    )

    @field_validator("auth_failures_per_address", "auth_failures_per_key_prefix")
    @classmethod
    def _rate(cls, value: str) -> str:
        return _readable_rate(value) or value

    def auth_throttle_limits(self) -> ThrottleLimits:
        return ThrottleLimits(
            per_address=parse_rate(self.auth_failures_per_address),
            per_key_prefix=parse_rate(self.auth_failures_per_key_prefix),
            negative_cache_s=self.auth_negative_cache_s,
        )

    @field_validator("public_url", "otlp_endpoint")
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


def _setting_name(prefix: str, location: tuple[int | str, ...]) -> str:
    """The environment variable a validation error points at (VERA_MCP_OIDC__ISSUER, ...)."""
    parts = [str(part) for part in location if not isinstance(part, int)]
    if parts and parts[0] == "OTEL_EXPORTER_OTLP_ENDPOINT":
        return parts[0]
    return prefix + "__".join(parts).upper() if parts else prefix.rstrip("_")


def read_settings(**overrides: Any) -> tuple[McpSettings, VeraSettings]:
    """The server's settings and the client's, from the environment (and the CLI's overrides);
    ConfigurationError naming the first bad setting in one line."""
    try:
        settings = McpSettings(**overrides)
    except pydantic.ValidationError as error:
        raise _configuration_error("VERA_MCP_", error) from None
    except SettingsError as error:
        raise misshapen_setting(error, McpSettings, "VERA_MCP_") from None
    return settings, read_vera_settings()


def _configuration_error(prefix: str, error: pydantic.ValidationError) -> ConfigurationError:
    problem = error.errors(include_url=False, include_input=False)[0]
    message = " ".join(str(problem["msg"]).split()).removeprefix("Value error, ")
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return ConfigurationError(f"invalid setting {_setting_name(prefix, problem['loc'])}: {message}{more}")
