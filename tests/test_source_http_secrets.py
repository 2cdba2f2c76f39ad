"""A source server that echoes the token in an error body never gets it into the connector's
error, even where the chain cuts the server's words to 200 characters mid-token."""

from __future__ import annotations

import json

import pytest

from tests.source_standins import CMDB_TOKEN, running_cmdb
from tests.standins import Reply
from vera_client.config import ResilienceSettings
from vera_client.domain.errors import SourceUnavailableError
from vera_worker.connectors.http import SourceHttp


@pytest.mark.parametrize("padding", [0, 160, 170, 175])
def test_a_token_echoed_in_an_error_body_is_redacted_before_it_is_cut(padding: int) -> None:
    echoed = json.dumps({"error": {"message": "x" * padding + f" bad request with {CMDB_TOKEN} inside"}})
    with running_cmdb() as standin:
        standin.script("/cmdb/v1/items", Reply(status=503, body=echoed.encode()))
        http = SourceHttp(
            "cmdb",
            base_url=standin.url,
            token=CMDB_TOKEN,
            token_env="CMDB_TOKEN",
            settings=ResilienceSettings(max_retries=0),
        )
        try:
            with pytest.raises(SourceUnavailableError) as raised:
                http.get_json("/items")
        finally:
            http.close()
    message = str(raised.value)
    assert "HTTP 503" in message
    # no run of 8 characters of the token survives, whole or cut
    assert not any(CMDB_TOKEN[i : i + 8] in message for i in range(len(CMDB_TOKEN) - 7)), message
