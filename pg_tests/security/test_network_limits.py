"""The HTTP server's doors against a network client (uvicorn on 127.0.0.1, the seeded tenants):

- Host and Origin are checked on every route, not only /mcp (health may also answer the
  configured probe hosts);
- failed bearer tokens are throttled per client address and per API key prefix (429 with
  Retry-After, structured), a refused token is refused again from memory, and the number of
  key checks (each a database transaction) stays bounded whatever the number of random keys;
  a legitimate key still works from another address;
- a request without credentials gets a challenge without an error code (RFC 6750 §3.1).

Client addresses other than 127.0.0.1 are other loopback addresses (127.0.0.2, ...): the
kernel routes all of 127/8 to the loopback interface.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from pg_tests.support.mcp_servers import HttpServer, http_server
from pg_tests.support.seed import World
from vera_client.client import AsyncVeraClient
from vera_mcp.adapters.api_keys import ApiKeyVerification
from vera_mcp.config import McpSettings
from vera_mcp.domain.access import VerifiedCaller
from vera_mcp.domain.ports import TokenVerification

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PER_ADDRESS = 20
PER_PREFIX = 5


class CountingKeys:
    """The server's API key verification, counting the keys it checks (each one whoami
    transaction in the database when not already verified)."""

    def __init__(self, inner: ApiKeyVerification) -> None:
        self.inner = inner
        self.checked = 0

    async def verify(self, token: str) -> VerifiedCaller | None:
        self.checked += 1
        return await self.inner.verify(token)


COUNTERS: list[CountingKeys] = []


def counting_verifiers(client: AsyncVeraClient, settings: McpSettings) -> Sequence[TokenVerification]:
    keys = CountingKeys(ApiKeyVerification(client, cache_seconds=settings.api_key_cache_s))
    COUNTERS.append(keys)
    return [keys]


def random_key(prefix: str | None = None) -> str:
    return f"vera_{prefix or secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"


def from_address(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=10)


def initialize(http: httpx.Client, server: HttpServer, token: str | None) -> httpx.Response:
    headers = {**JSON_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    return http.post(server.url, json=INITIALIZE, headers=headers)


@pytest.fixture
def throttled(world: World) -> Iterator[tuple[HttpServer, CountingKeys]]:
    COUNTERS.clear()
    with http_server(
        world.db, counting_verifiers, auth_failures_per_address=f"{PER_ADDRESS}/min",
        auth_failures_per_key_prefix=f"{PER_PREFIX}/min", auth_negative_cache_s=30, probe_hosts=["10.9.8.7:*"],
    ) as server:  # fmt: skip
        yield server, COUNTERS[-1]


# --- Host and Origin ------------------------------------------------------------------------------

ROUTES = ["/health/live", "/health/ready", "/metrics", "/.well-known/oauth-protected-resource",
          "/.well-known/oauth-protected-resource/mcp", "/mcp"]  # fmt: skip


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_refuses_a_foreign_host_and_origin(
    world: World, throttled: tuple[HttpServer, CountingKeys], path: str
) -> None:
    server, _ = throttled
    url = server.base + path
    headers = {**JSON_HEADERS, "Authorization": f"Bearer {world.a.owner_key}"}

    def ask(**extra: str) -> httpx.Response:
        if path == "/mcp":
            return httpx.post(url, json=INITIALIZE, headers={**headers, **extra})
        return httpx.get(url, headers=extra)

    assert ask().status_code == 200
    assert ask(Origin="http://localhost:3000").status_code == 200
    for foreign, status in (({"Host": "evil.example"}, 421), ({"Host": "evil.example:80"}, 421),
                            ({"Origin": "http://evil.example"}, 403)):  # fmt: skip
        answer = ask(**foreign)
        assert answer.status_code == status, (path, foreign, answer.text)
        assert answer.json()["error"] in ("invalid_host", "invalid_origin")
        # a problem detail (RFC 9457) like every other refusal
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert answer.json()["type"] == "urn:vera:problem:" + answer.json()["error"].replace("_", "-")
        assert answer.json()["status"] == status and answer.json()["request_id"]
    # a load balancer probing by the pod's address reaches health, and health only
    probe = ask(Host="10.9.8.7:8765")
    assert probe.status_code == (200 if path.startswith("/health/") else 421)


# --- failed authentication ------------------------------------------------------------------------


def test_random_keys_cost_a_bounded_number_of_key_checks(
    world: World, throttled: tuple[HttpServer, CountingKeys]
) -> None:
    server, keys = throttled
    with from_address("127.0.0.1") as attacker:
        statuses = [initialize(attacker, server, random_key()).status_code for _ in range(300)]
        refused = initialize(attacker, server, random_key())
    # a fixed window may begin during the run: at most twice the limit gets to the database
    assert keys.checked <= 2 * PER_ADDRESS, keys.checked
    assert statuses.count(401) <= 2 * PER_ADDRESS and statuses.count(429) >= 300 - 2 * PER_ADDRESS
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
    body = refused.json()
    assert body["error"] == "too_many_requests" and body["retry_after"] == int(refused.headers["retry-after"])
    assert "from this address" in body["error_description"]
    with from_address("127.0.0.2") as colleague:
        assert initialize(colleague, server, world.a.owner_key).status_code == 200
    metrics = httpx.get(server.base + "/metrics").text
    assert 'vera_mcp_auth_refusals_total{reason="throttled"}' in metrics
    throttled_count = next(line for line in metrics.splitlines() if 'reason="throttled"' in line)
    assert float(throttled_count.split()[-1]) >= 300 - 2 * PER_ADDRESS


def test_a_key_prefix_is_throttled_across_addresses(
    world: World, throttled: tuple[HttpServer, CountingKeys]
) -> None:
    server, keys = throttled
    victim_prefix = secrets.token_hex(6)
    statuses = []
    for n in range(30):
        with from_address(f"127.0.1.{n + 1}") as guesser:
            statuses.append(initialize(guesser, server, random_key(victim_prefix)).status_code)
    assert keys.checked <= 2 * PER_PREFIX and statuses.count(429) >= 30 - 2 * PER_PREFIX, statuses
    with from_address("127.0.2.1") as other:
        answer = initialize(other, server, random_key(victim_prefix))
    assert answer.status_code == 429 and "key prefix" in answer.json()["error_description"]


def test_a_refused_key_is_refused_again_from_memory(
    world: World, throttled: tuple[HttpServer, CountingKeys]
) -> None:
    server, keys = throttled
    for bad in (random_key(), world.revoked_key, world.expired_key):
        with from_address("127.0.3.1") as client:
            answers = [initialize(client, server, bad).status_code for _ in range(10)]
        assert answers == [401] * 10
    assert keys.checked == 3
    # a key verified once is never remembered as refused
    with from_address("127.0.3.2") as client:
        assert [initialize(client, server, world.a.owner_key).status_code for _ in range(3)] == [200] * 3


# --- the challenge of a request without credentials -----------------------------------------------


def test_a_request_without_credentials_gets_a_challenge_without_an_error_code(
    world: World, throttled: tuple[HttpServer, CountingKeys]
) -> None:
    server, _ = throttled
    metadata = f'resource_metadata="{server.base}/.well-known/oauth-protected-resource/mcp"'
    for headers in ({}, {"Authorization": "Basic dXNlcjpwYXNz"}):
        anonymous = httpx.post(server.url, json=INITIALIZE, headers={**JSON_HEADERS, **headers})
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"] == f"Bearer {metadata}"
        assert "error" not in anonymous.json()
    wrong: Any = initialize(httpx.Client(), server, random_key())
    challenge = wrong.headers["www-authenticate"]
    assert wrong.status_code == 401 and 'error="invalid_token"' in challenge and metadata in challenge
