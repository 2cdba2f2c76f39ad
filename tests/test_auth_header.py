from __future__ import annotations

import pytest

from vera_client.adapters.postgres.errors import redact
from vera_client.domain.errors import MalformedApiKeyError
from vera_mcp.domain.auth import bearer_api_key

KEY = "vera_0123456789ab_" + "A" * 43


@pytest.mark.parametrize("header", [f"Bearer {KEY}", f"bearer   {KEY} ", f" Bearer {KEY}"])
def test_bearer_key_is_read(header: str) -> None:
    assert bearer_api_key(header) == KEY


@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer", f"Token {KEY}", "Bearer abc"])
def test_other_headers_are_malformed(header: str | None) -> None:
    with pytest.raises(MalformedApiKeyError):
        bearer_api_key(header)


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://dba:hunter2@db/vera", "postgresql://dba:***@db/vera"),
        ("host=db password=hunter2 user=dba", "host=db password=*** user=dba"),
        ("postgresql://vera_app@/vera?host=/tmp", "postgresql://vera_app@/vera?host=/tmp"),
    ],
)
def test_redact_hides_passwords(dsn: str, shown: str) -> None:
    assert redact(dsn) == shown
