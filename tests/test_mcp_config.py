"""The MCP server's settings and the hosts and origins it answers."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from vera_client.domain.errors import ConfigurationError
from vera_mcp.adapters.http_app import transport_security
from vera_mcp.config import McpSettings, read_settings
from vera_mcp.domain.access import ToolClass


def test_defaults_listen_on_loopback() -> None:
    settings = McpSettings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.host, settings.port, settings.base_url) == ("127.0.0.1", 8765, "http://127.0.0.1:8765")


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_MCP_PUBLIC_URL", "https://vera.example.com/")
    monkeypatch.setenv("VERA_MCP_ALLOWED_ORIGINS", '["https://app.example.com"]')
    monkeypatch.setenv("VERA_MCP_REQUEST_TIMEOUT_S", "5")
    settings = McpSettings()
    assert settings.base_url == "https://vera.example.com" and settings.request_timeout_s == 5
    security = transport_security(settings)
    assert "vera.example.com" in security.allowed_hosts and "vera.example.com:*" in security.allowed_hosts
    assert {"https://vera.example.com", "https://app.example.com"} <= set(security.allowed_origins)
    assert "127.0.0.1:*" in security.allowed_hosts and security.enable_dns_rebinding_protection


@pytest.mark.parametrize(
    ("name", "value"),
    [("public_url", "vera.example.com"), ("port", 0), ("max_body_bytes", 10), ("request_timeout_s", 0)],
)
def test_bad_settings_are_refused(name: str, value: object) -> None:
    with pytest.raises(ValidationError):
        McpSettings(**{name: value})


def test_only_the_public_host_and_loopback_are_answered_by_default() -> None:
    security = transport_security(McpSettings(public_url="http://10.0.0.5:9000"))
    assert "10.0.0.5:9000" in security.allowed_hosts and "10.0.0.5:*" not in security.allowed_hosts
    assert not any("evil" in host for host in security.allowed_hosts)


def test_an_organisation_ceiling_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_MCP_QUOTAS__ORGANISATION__READ", "900/min")
    monkeypatch.setenv("VERA_MCP_AUTH_FAILURES_PER_ADDRESS", "5/min")
    settings, _ = read_settings()
    assert str(settings.quotas.limits().organisation_rate(ToolClass.READ)) == "900/min"
    assert settings.auth_throttle_limits().per_address.limit == 5
    monkeypatch.setenv("VERA_MCP_QUOTAS__ORGANISATION__READ", "lots")
    with pytest.raises(ConfigurationError, match="VERA_MCP_QUOTAS__ORGANISATION__READ: bad quota 'lots'"):
        read_settings()
