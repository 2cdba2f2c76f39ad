"""The MCP server wired as `vera mcp serve` runs it, end to end with real servers:
OIDC access tokens from a live JWKS (tests/oidc_idp.py) through the SDK's
streamable HTTP client, just-in-time provisioning, key rotation and token
scopes; quotas through MCP against a real Valkey (and in process over stdio);
the Prometheus scrape; a tool span with its SQL spans; X-Request-Id in the
response and in the JSON log line; bad settings refused in one line."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
import valkey
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.oidc_idp import AUDIENCE, TestIdp, running_idp
from tests.servers import running_valkey
from tests.test_tracing import Receiver, receiver  # noqa: F401 - a local OTLP receiver

from pg_tests.support.mcp_servers import (
    VERA,
    HttpServer,
    cli_env,
    free_port,
    http_server,
    http_session,
    run,
    serve_process,
    stdio_session,
    structured,
    text_of,
)
from pg_tests.support.seed import World
from vera_client.config import CacheSettings, VeraSettings
from vera_mcp.adapters.logs import HEADER, configure_json_logging
from vera_mcp.adapters.tracing import tracing_to
from vera_mcp.config import McpSettings, OrganisationQuotaSettings, QuotaSettings
from vera_mcp.domain.oidc import ClaimRule, OidcSettings
from vera_mcp.entrypoints.wiring import quota_ledger

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def oidc_settings(idp: TestIdp, world: World) -> OidcSettings:
    return OidcSettings(
        issuer=idp.issuer,
        audience=AUDIENCE,
        jwks_url=idp.jwks_url,
        scope_prefix="vera:",
        # a token naming an unknown kid fetches the keys at once (rotation without a restart);
        # fetched keys are trusted for a second only, so a key the IdP drops stops verifying soon
        jwks_refetch_interval_s=0,
        jwks_cache_s=1,
        claim_mapping=(
            ClaimRule(claim="groups", value="lumen-engineers", group_id=world.a.workspace, role="viewer"),
        ),
    )


@pytest.fixture(scope="module")
def idp() -> Iterator[TestIdp]:
    with running_idp() as server:
        yield server


@pytest.fixture(scope="module")
def oidc_server(world: World, idp: TestIdp) -> Iterator[HttpServer]:
    idp.add_key("rsa-1")
    with http_server(world.db, oidc=oidc_settings(idp, world)) as running:
        yield running


def identities(world: World, idp: TestIdp, subject: str) -> list[UUID]:
    with world.db.admin() as conn:
        rows = conn.execute(
            "select principal_id from vera.external_identities where issuer = %s and subject = %s",
            (idp.issuer, subject),
        ).fetchall()
    return [row[0] for row in rows]


def a_fact_of(world: World, group: str) -> UUID:
    with world.db.admin() as conn:
        row = conn.execute("select fact_id from vera.facts where group_id = %s limit 1", (group,)).fetchone()
    assert row is not None
    return UUID(str(row[0]))


def post_initialize(server: HttpServer, token: str) -> httpx.Response:
    return httpx.post(
        server.url, json=INITIALIZE, headers={**JSON_HEADERS, "Authorization": f"Bearer {token}"}
    )


# --- OIDC --------------------------------------------------------------------------------------------


def test_an_oidc_token_calls_tools_as_its_subject_provisioned_once(
    world: World, idp: TestIdp, oidc_server: HttpServer
) -> None:
    assert identities(world, idp, "carol") == []

    async def scenario() -> list[dict[str, Any]]:
        answers = []
        for _ in range(3):  # several sessions, each request verified again
            async with http_session(oidc_server.url, idp.token("rsa-1", "carol")) as session:
                me = structured(await session.call_tool("whoami", {}))
                found = structured(await session.call_tool("search", {"query": "payments-api cluster"}))
                answers.append({"me": me, "found": found})
        return answers

    answers = run(scenario())
    [principal] = identities(world, idp, "carol")
    for answer in answers:
        me = answer["me"]
        assert me["principal_id"] == str(principal) and me["via"] == "oidc"
        assert me["display_name"] == "Carol" and set(me["token_scopes"]) == {"read", "feedback"}
        readable = {scope["group_id"] for scope in me["scopes"]}
        assert world.a.workspace in readable and not readable & set(world.b.groups)
        hits = answer["found"]["hits"]
        # the mapped group's data only: nothing of tenant B, nothing of A's owner's personal scope
        assert hits and {hit["group_id"] for hit in hits} <= readable
        assert world.a.owner_personal not in readable


def test_an_oidc_principal_reaches_only_its_mapped_group(
    world: World, idp: TestIdp, oidc_server: HttpServer
) -> None:
    b_fact = a_fact_of(world, world.b.organisation)
    with world.db.admin() as conn:
        votes_before = conn.execute("select count(*) from vera.feedback").fetchone()

    async def scenario() -> dict[str, Any]:
        async with http_session(oidc_server.url, idp.token("rsa-1", "dave")) as session:
            return {
                "search_b": await session.call_tool("search", {"query": "payments-api", "scopes": [world.b.organisation]}),
                "search_owner": await session.call_tool("search", {"query": "payments-api", "scopes": [world.a.owner_personal]}),
                "list_b": await session.call_tool("list_snapshots", {"scope": world.b.workspace}),
                "vote_b": await session.call_tool("feedback", {"kind": "fact", "item_id": str(b_fact),
                                                               "query": "payments-api", "vote": "up"}),
                "all": await session.call_tool("search", {"query": "payments-api cluster blue", "k": 50}),
            }  # fmt: skip

    results = run(scenario())
    hits = structured(results.pop("all"))["hits"]
    assert hits and not {hit["group_id"] for hit in hits} & set(world.b.groups)
    assert str(b_fact) not in {hit["item_id"] for hit in hits}
    for name, result in results.items():
        assert result.is_error, f"{name}: {text_of(result)}"
    with world.db.admin() as conn:
        assert conn.execute("select count(*) from vera.feedback").fetchone() == votes_before


@pytest.mark.parametrize(
    ("kid", "claims"),
    [
        (
            "rsa-1",
            {"exp": int(time.time()) - 600, "iat": int(time.time()) - 900, "nbf": int(time.time()) - 900},
        ),
        ("rsa-1", {"aud": "https://someone-else.example/mcp"}),
        ("rsa-1", {"iss": "https://evil.example/realm"}),
        ("never-published", {}),  # signed by a key the IdP's JWKS does not hold
    ],
    ids=["expired", "wrong audience", "wrong issuer", "unknown kid"],
)
def test_a_bad_oidc_token_gets_401_naming_the_metadata(
    world: World, idp: TestIdp, oidc_server: HttpServer, kid: str, claims: dict[str, Any]
) -> None:
    if kid not in idp.keys:
        idp.add_key(kid, publish=False)
    answer = post_initialize(oidc_server, idp.token(kid, "erin", **claims))
    assert answer.status_code == 401
    metadata_url = f"{oidc_server.base}/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata_url}"' in answer.headers["www-authenticate"]
    assert httpx.get(metadata_url).json()["authorization_servers"] == [idp.issuer]
    assert identities(world, idp, "erin") == []
    # a good token of the same IdP is let in: the refusal was this token's
    assert post_initialize(oidc_server, idp.token("rsa-1", "erin-ok")).status_code == 200


def test_keys_rotate_without_a_restart(world: World, idp: TestIdp, oidc_server: HttpServer) -> None:
    idp.add_key("unpublished", publish=False)
    assert post_initialize(oidc_server, idp.token("unpublished", "frank")).status_code == 401

    idp.add_key("rsa-2")  # the IdP publishes a new key beside the old one: it verifies at once
    assert post_initialize(oidc_server, idp.token("rsa-2", "frank")).status_code == 200
    assert post_initialize(oidc_server, idp.token("rsa-1", "frank")).status_code == 200

    idp.publish("rsa-2")  # the old key is dropped: once the fetched keys are stale, it stops verifying
    time.sleep(1.2)
    assert post_initialize(oidc_server, idp.token("rsa-1", "frank")).status_code == 401
    assert post_initialize(oidc_server, idp.token("rsa-2", "frank")).status_code == 200
    idp.publish("rsa-1", "rsa-2")
    assert len(identities(world, idp, "frank")) == 1


def test_a_read_only_token_is_refused_feedback_naming_the_scope(
    world: World, idp: TestIdp, oidc_server: HttpServer
) -> None:
    fact = a_fact_of(world, world.a.organisation)

    async def scenario() -> tuple[Any, Any]:
        async with http_session(
            oidc_server.url, idp.token("rsa-1", "gina", scope="openid vera:read")
        ) as session:
            found = await session.call_tool("search", {"query": "payments-api"})
            vote = await session.call_tool(
                "feedback", {"kind": "fact", "item_id": str(fact), "query": "payments-api", "vote": "up"}
            )
            return found, vote

    found, vote = run(scenario())
    assert not found.is_error
    assert vote.is_error and "lacks the scope 'feedback'" in text_of(vote)


# --- quotas -------------------------------------------------------------------------------------------


def wait_for_a_fresh_minute(margin_s: float = 10.0) -> None:
    """Quotas count in clock minutes: start the calls well inside one, so all of them land in it."""
    left = 60 - time.time() % 60
    if left < margin_s:
        time.sleep(left + 0.05)


def metric(scrape: str, name: str, **labels: str) -> float:
    """The value of one sample of a Prometheus text scrape (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in scrape.splitlines():
        if line.startswith(f"{name}{{") and line.split("}")[0] == f"{name}{{{wanted}":
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.fixture(scope="module")
def valkey_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_valkey(tmp_path_factory.mktemp("valkey")) as server:
        yield server.url


def test_quotas_in_valkey_refuse_the_fourth_read_and_say_when_to_retry(world: World, valkey_url: str) -> None:
    quotas = QuotaSettings(read="3/min", key_prefix="quota-test")
    ledger = quota_ledger(
        McpSettings(quotas=quotas), VeraSettings(cache=CacheSettings(valkey_url=valkey_url))
    )
    with http_server(world.db, quotas=quotas, ledger=ledger) as server:

        async def scenario() -> tuple[list[Any], Any]:
            wait_for_a_fresh_minute()
            async with http_session(server.url, world.a.owner_key) as session:
                calls = [await session.call_tool("search", {"query": "payments-api"}) for _ in range(4)]
            async with http_session(server.url, world.b.owner_key) as other:
                theirs = await other.call_tool("search", {"query": "payments-api"})
            return calls, theirs

        calls, theirs = run(scenario())
        scrape = httpx.get(f"{server.base}/metrics").text
    assert [call.is_error for call in calls] == [False, False, False, True]
    message = text_of(calls[3])
    assert "quota exceeded for read tools (3/min): retry after" in message and message.endswith(" s")
    assert not theirs.is_error  # another principal has its own allowance
    assert metric(scrape, "vera_mcp_quota_refusals_total", tool_class="read") == 1
    assert metric(scrape, "vera_mcp_tool_calls_total", tool="search", outcome="refused_quota") == 1
    assert metric(scrape, "vera_mcp_tool_calls_total", tool="search", outcome="ok") == 4
    # the counters are Valkey's, shared by every instance: one key per principal in this window,
    # and one per organisation (the ceiling its principals share)
    keys = valkey.Valkey.from_url(valkey_url).keys("quota-test:quota:v1:read:*")
    assert len(keys) == 4


def test_the_principals_of_one_organisation_share_its_ceiling(world: World) -> None:
    """An owner and a viewer of tenant A (as an admin's service accounts would) draw on one
    organisation allowance; tenant B's owner on another."""
    quotas = QuotaSettings(read="10/min", organisation=OrganisationQuotaSettings(read="3/min"))
    ledger = quota_ledger(McpSettings(quotas=quotas), VeraSettings())
    with http_server(world.db, quotas=quotas, ledger=ledger) as server:

        async def scenario() -> tuple[list[Any], Any]:
            wait_for_a_fresh_minute()
            calls = []
            for key in (world.a.owner_key, world.a.viewer_key, world.a.owner_key, world.a.viewer_key):
                async with http_session(server.url, key) as session:
                    calls.append(await session.call_tool("whoami", {}))
            async with http_session(server.url, world.b.owner_key) as other:
                theirs = await other.call_tool("whoami", {})
            return calls, theirs

        calls, theirs = run(scenario())
    assert [call.is_error for call in calls] == [False, False, False, True]
    assert "quota exceeded for read tools (3/min per organisation)" in text_of(calls[3])
    assert not theirs.is_error


def test_quotas_over_stdio_are_counted_in_process(world: World) -> None:
    env = cli_env(world.db, VERA_API_KEY=world.a.viewer_key, VERA_MCP_QUOTAS__READ="3/min")

    async def scenario() -> list[Any]:
        async with stdio_session(env) as session:
            wait_for_a_fresh_minute()
            return [await session.call_tool("whoami", {}) for _ in range(4)]

    calls = run(scenario())
    assert [call.is_error for call in calls] == [False, False, False, True]
    assert "quota exceeded for read tools (3/min): retry after" in text_of(calls[3])


# --- metrics, traces, correlation ids ----------------------------------------------------------------


def test_metrics_count_tools_outcomes_and_http_without_any_caller_data(
    world: World, oidc_server: HttpServer, idp: TestIdp
) -> None:
    canary = "zebra-canary-query"

    async def scenario() -> None:
        async with http_session(oidc_server.url, world.a.owner_key) as session:
            structured(await session.call_tool("whoami", {}))
            structured(await session.call_tool("search", {"query": canary}))
            bad = await session.call_tool("search", {"query": canary, "k": 0})  # refused by the SDK's schema
            assert bad.is_error and "invalid arguments for search" in text_of(bad)
        async with http_session(oidc_server.url, idp.token("rsa-1", "hank", scope="vera:read")) as session:
            refused = await session.call_tool(
                "feedback",
                {
                    "kind": "fact",
                    "item_id": "00000000-0000-0000-0000-000000000000",
                    "query": canary,
                    "vote": "up",
                },
            )
            assert refused.is_error

    before = httpx.get(f"{oidc_server.base}/metrics").text
    run(scenario())
    assert post_initialize(oidc_server, "not-a-token").status_code == 401
    answer = httpx.get(f"{oidc_server.base}/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    scrape = answer.text

    def grew(name: str, by: float = 1, **labels: str) -> bool:
        return metric(scrape, name, **labels) - metric(before, name, **labels) == by

    assert grew("vera_mcp_tool_calls_total", tool="whoami", outcome="ok")
    assert grew("vera_mcp_tool_calls_total", tool="search", outcome="ok")
    assert grew("vera_mcp_tool_calls_total", tool="search", outcome="tool_error")
    assert grew("vera_mcp_tool_calls_total", tool="feedback", outcome="refused_scope")
    assert metric(scrape, "vera_mcp_tool_call_seconds_count", tool="whoami", outcome="ok") >= 1
    assert metric(scrape, "vera_mcp_http_requests_total", route="/mcp", status="200") >= 4
    assert grew("vera_mcp_http_requests_total", route="/mcp", status="401")
    for secret in (canary, str(world.a.owner), world.a.owner_key, "hank", world.a.owner_key.split("_")[1]):
        assert secret not in scrape


def test_a_tool_call_over_http_is_a_span_with_its_sql_spans_as_children(world: World) -> None:
    exporter = InMemorySpanExporter()
    tracing = tracing_to(exporter)
    try:
        with http_server(world.db, tracing=tracing) as server:

            async def scenario() -> None:
                async with http_session(server.url, world.a.owner_key) as session:
                    structured(await session.call_tool("search", {"query": "payments-api cluster"}))

            run(scenario())
    finally:
        tracing.shutdown()
    spans = exporter.get_finished_spans()
    [tool] = [span for span in spans if span.name == "tool search"]
    children = [
        span for span in spans if span.parent is not None and span.parent.span_id == tool.context.span_id
    ]
    assert "sql search" in {span.name for span in children}
    assert tool.attributes is not None and tool.attributes["vera.outcome"] == "ok"
    exported = json.dumps([dict(span.attributes or {}) for span in spans])
    assert "payments-api" not in exported and world.a.owner_key not in exported


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The JSON log lines the process writes while the test runs (as `vera mcp serve` configures them)."""
    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    handler = configure_json_logging(logging.INFO, stream)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_x_request_id_is_echoed_and_in_the_log_line_of_the_tool_call(
    world: World, oidc_server: HttpServer, json_log: io.StringIO
) -> None:
    request_id = "req-7f3a9c2e5b1d"

    async def scenario() -> None:
        async with http_session(
            oidc_server.url, world.a.owner_key, **{"X-Request-Id": request_id}
        ) as session:
            structured(await session.call_tool("whoami", {}))

    run(scenario())
    answer = post_initialize(oidc_server, world.a.owner_key)
    assert answer.headers[HEADER] and answer.headers[HEADER] != request_id  # a new one when none is sent
    echoed = httpx.get(f"{oidc_server.base}/health/live", headers={"X-Request-Id": request_id})
    assert echoed.headers[HEADER] == request_id
    refused = httpx.post(
        oidc_server.url, json=INITIALIZE, headers={**JSON_HEADERS, "X-Request-Id": request_id}
    )
    assert refused.status_code == 401 and refused.headers[HEADER] == request_id
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    [call] = [line for line in lines if line.get("tool") == "whoami" and line["correlation_id"] == request_id]
    assert call["outcome"] == "ok" and call["level"] == "info" and call["duration_ms"] >= 0


def test_vera_mcp_serve_logs_json_counts_quotas_and_exports_traces(
    world: World,
    receiver: Receiver,  # noqa: F811 - the local OTLP receiver fixture of tests/test_tracing.py
) -> None:
    """The command as an operator runs it: settings from the environment only."""
    request_id = "req-0d4c2b9a8e7f"
    env = cli_env(world.db, VERA_MCP_QUOTAS__READ="2/min", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
    with serve_process(env, free_port()) as server:

        async def scenario() -> list[Any]:
            wait_for_a_fresh_minute()
            async with http_session(server.url, world.a.owner_key, **{"X-Request-Id": request_id}) as session:
                return [await session.call_tool("whoami", {}) for _ in range(3)]

        calls = run(scenario())
        scrape = httpx.get(f"{server.base}/metrics").text
    assert [call.is_error for call in calls] == [False, False, True]
    assert "retry after" in text_of(calls[2])
    assert metric(scrape, "vera_mcp_tool_calls_total", tool="whoami", outcome="refused_quota") == 1
    lines = [json.loads(line) for line in server.stderr.splitlines() if line.startswith("{")]
    mine = [line for line in lines if line.get("tool") == "whoami" and line["correlation_id"] == request_id]
    assert [line["outcome"] for line in mine] == ["ok", "ok", "refused_quota"]
    assert all(len(line["trace_id"]) == 32 for line in mine)  # the tool span's, to find the trace
    # flushed on SIGTERM: each call's tool span, and the SQL spans of those that ran
    names = receiver.span_names()
    assert names.count("tool whoami") == 3 and "sql whoami" in names
    assert world.a.owner_key not in server.stderr


# --- configuration ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [
        # a setting that does not parse (tests/test_mcp_wiring.py has the others), and one the
        # composition root refuses: each is one line and exit code 2
        ({"VERA_MCP_QUOTAS__READ": "lots"}, "invalid setting VERA_MCP_QUOTAS__READ: bad quota 'lots'"),
        ({"VERA_DB__DSN": "postgresql://app@127.0.0.1:9/vera"}, "set VERA_DB__GATEWAY_DSN"),
    ],
    ids=["quota", "no gateway dsn"],
)
def test_bad_settings_stop_the_server_with_one_line(
    world: World, tmp_path: Path, env: dict[str, str], message: str
) -> None:
    done = subprocess.run(  # noqa: S603 - the checkout's own vera command
        [str(VERA), "mcp", "serve", "--http"], env=cli_env(world.db, **env),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("vera: error: ") and message in line, line
