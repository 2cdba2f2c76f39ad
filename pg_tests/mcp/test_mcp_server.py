"""The MCP server, end to end: the SDK's own client sessions over stdio (a real
`vera mcp serve --stdio` subprocess) and streamable HTTP (uvicorn on 127.0.0.1)
against the seeded tenants: every tool, the resource-server auth (401s, RFC 9728
metadata), bad arguments, tenant isolation with ids passed by hand, token
scopes, Host/Origin, body size, and readiness when the database goes away."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import httpx
import psycopg
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from psycopg import sql

from pg_tests.support.clients import client_for
from pg_tests.support.databases import Database
from pg_tests.support.mcp_servers import (
    NARROW,
    VERA,
    HttpServer,
    cli_env,
    free_port,
    http_server,
    http_session,
    per_request_client,
    run,
    serve_process,
    stdio_session,
    structured,
    text_of,
    vera_settings,
    with_read_only_tokens,
)
from pg_tests.support.seed import SeededTenant, World
from vera_cli.commands.demo import agent_client_config
from vera_client.client import VeraClient
from vera_mcp.domain.access import Scope
from vera_mcp.domain.limits import LIMITS


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[HttpServer]:
    with http_server(world.db, with_read_only_tokens, max_body_bytes=64 * 1024) as running:
        yield running


def pending_claim(db: Database, tenant: SeededTenant, subject: str) -> UUID:
    """A tier-3 claim of the tenant's organisation, waiting for review."""
    return pending_items(db, tenant, subject)[0]


def pending_items(db: Database, tenant: SeededTenant, subject: str) -> tuple[UUID, UUID]:
    """A tier-3 claim and passage of the tenant's organisation, both waiting for review."""
    with client_for(db, tenant.owner_key) as vera:
        org = tenant.organisation
        source = vera.register_source(org, "markdown", "forum", 3)
        episode = vera.record_episode(
            org, source, f"thread-{subject}", hashlib.sha256(subject.encode()).digest()
        )
        [published] = vera.publish(org, episode.episode_id, [{"subject": subject, "predicate": "owned by",
                                                              "object": "team green"}])  # fmt: skip
        [chunk] = vera.store_chunks(org, episode.episode_id, [{"text": f"{subject} is owned by team green"}])
    assert published.lifecycle == "pending_review"
    return published.fact_id, chunk.chunk_id


def lifecycle(db: Database, fact: UUID) -> str:
    with db.admin() as conn:
        row = conn.execute("select lifecycle::text from vera.facts where fact_id = %s", (fact,)).fetchone()
    assert row is not None
    return str(row[0])


async def exercise_every_tool(session: Any, world: World, pending: tuple[UUID, UUID], snapshot: str) -> None:
    """Every tool once, as tenant A's owner, checking what each answers."""
    a = world.a
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) >= {"whoami", "search", "feedback", "create_snapshot", "get_snapshot", "list_snapshots",
                          "pending_reviews", "review"}  # fmt: skip
    search_input = tools["search"].input_schema["properties"]
    assert search_input["k"]["minimum"] == LIMITS.min_k and search_input["k"]["maximum"] == LIMITS.max_k
    assert search_input["query"]["maxLength"] == LIMITS.max_query_chars
    assert tools["search"].output_schema is not None

    me = structured(await session.call_tool("whoami", {}))
    assert me["principal_id"] == str(a.owner) and me["via"] == "api_key"
    assert {s["group_id"] for s in me["scopes"]} == set(a.groups)
    assert {s["name"] for s in me["scopes"]} >= {"Acme", "Engineering"}
    assert me["search_version"].startswith("vera-search/") and me["limits"]["max_k"] == 50

    found = structured(await session.call_tool("search", {"query": "payments-api cluster", "k": 5}))
    assert found["hits"] and {hit["group_id"] for hit in found["hits"]} <= set(a.groups)
    hit = found["hits"][0]
    assert set(hit["signals"]) == {
        "relevance",
        "authority",
        "verification",
        "recency",
        "feedback",
        "confidence",
        "period",
    }
    assert hit["signals"]["period"] is None and found["during"] is None  # the query names no period
    dated = structured(await session.call_tool("search", {"query": "payments-api cluster in 2026", "k": 5}))
    assert dated["during"] == {"start": "2026-01-01", "end": "2027-01-01", "text": "2026"}
    assert all(h["signals"]["period"] in (0.0, 0.5, 1.0) for h in dated["hits"])
    # a period passed wins over the one the words state; an open end stays open
    passed = structured(await session.call_tool("search", {
        "query": "payments-api cluster in 2026", "k": 5, "during": {"start": "2020-01-01", "end": "2021-01-01"}}))  # fmt: skip
    assert passed["during"] == {
        "start": "2020-01-01",
        "end": "2021-01-01",
        "text": "2020-01-01 .. 2021-01-01",
    }
    assert passed["hits"] and all(h["signals"]["period"] is not None for h in passed["hits"])
    since = structured(await session.call_tool(
        "search", {"query": "payments-api cluster", "k": 5, "during": {"start": "2025-06-01"}}))  # fmt: skip
    assert since["during"] == {"start": "2025-06-01", "end": None, "text": "2025-06-01 .. ..."}
    assert hit["citation"]["source"]["name"] == "docs" and hit["text"] == "payments-api runs on cluster blue"
    # a scope named by what whoami lists
    in_workspace = structured(
        await session.call_tool("search", {"query": "payments-api", "scopes": ["Engineering"]})
    )
    assert {h["group_id"] for h in in_workspace["hits"]} == {a.workspace}

    vote = structured(await session.call_tool(
        "feedback", {"kind": hit["kind"], "item_id": hit["item_id"], "query": "payments-api cluster", "vote": "up"}))  # fmt: skip
    assert vote["group_id"] == hit["group_id"] and set(vote["signals"]) == set(hit["signals"])

    taken = structured(await session.call_tool("create_snapshot", {"scope": "Acme", "name": snapshot}))
    assert (taken["scope"], taken["name"], taken["sealed"]) == (a.organisation, snapshot, True)
    assert taken["item_count"] >= 1
    again = structured(await session.call_tool("get_snapshot", {"scope": a.organisation, "name": snapshot}))
    assert again["snapshot_id"] == taken["snapshot_id"]
    listed = structured(await session.call_tool("list_snapshots", {"scope": "Acme"}))
    assert snapshot in {s["name"] for s in listed["snapshots"]}
    frozen = structured(await session.call_tool(
        "search", {"query": "payments-api", "scopes": ["Acme"], "snapshot": snapshot}))  # fmt: skip
    assert frozen["hits"] and {h["group_id"] for h in frozen["hits"]} == {a.organisation}

    fact, passage = pending
    waiting = structured(await session.call_tool("pending_reviews", {"scope": "Acme"}))
    assert {("fact", str(fact)), ("passage", str(passage))} <= {
        (i["kind"], i["item_id"]) for i in waiting["items"]
    }
    decided = structured(await session.call_tool(
        "review", {"scope": "Acme", "item_id": str(fact), "decision": "approve", "note": "checked"}))  # fmt: skip
    assert (decided["item_id"], decided["lifecycle"]) == (str(fact), "published")
    decided = structured(await session.call_tool(
        "review", {"scope": "Acme", "item_id": str(passage), "kind": "passage", "decision": "reject"}))  # fmt: skip
    assert (decided["item_id"], decided["lifecycle"]) == (str(passage), "rejected")


def test_every_tool_over_streamable_http(world: World, server: HttpServer) -> None:
    pending = pending_items(world.db, world.a, "ledger-http")

    async def scenario() -> None:
        async with http_session(server.url, world.a.owner_key) as session:
            await exercise_every_tool(session, world, pending, "mcp-http")

    run(scenario())
    assert lifecycle(world.db, pending[0]) == "published"


def test_every_tool_over_the_per_request_protocol(world: World, server: HttpServer) -> None:
    """An agent on the SDK's Client (mode auto) discovers the server and speaks 2026-07-28, which
    the SDK serves in the request's own task; every tool answers there exactly as over a session."""
    pending = pending_items(world.db, world.a, "ledger-per-request")

    async def scenario() -> None:
        async with per_request_client(server.url, world.a.owner_key) as client:
            assert client.protocol_version == PER_REQUEST_VERSION
            await exercise_every_tool(client, world, pending, "mcp-per-request")

    run(scenario())
    assert lifecycle(world.db, pending[0]) == "published"


def test_every_tool_over_stdio(world: World) -> None:
    pending = pending_items(world.db, world.a, "ledger-stdio")

    async def scenario() -> None:
        async with stdio_session(cli_env(world.db, VERA_API_KEY=world.a.owner_key)) as session:
            await exercise_every_tool(session, world, pending, "mcp-stdio")

    run(scenario())
    assert lifecycle(world.db, pending[0]) == "published"


@pytest.mark.parametrize(
    ("env", "message"),
    [({}, "VERA_API_KEY is not set"), ({"VERA_API_KEY": "not-a-key"}, "not an API key"),
     ({"VERA_API_KEY": "vera_000000000000_" + "x" * 43}, "VERA_API_KEY was refused")],
)  # fmt: skip
def test_stdio_without_a_valid_key_says_so_in_one_line(
    world: World, env: dict[str, str], message: str
) -> None:
    done = subprocess.run(  # noqa: S603 - the checkout's own vera command
        [str(VERA), "mcp", "serve", "--stdio"], env=cli_env(world.db, **env), capture_output=True, text=True,
        timeout=60, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("vera: error: ") and message in lines[0], done.stderr
    assert done.stdout == ""


def test_stdio_refuses_a_revoked_key(world: World) -> None:
    done = subprocess.run(  # noqa: S603 - the checkout's own vera command
        [str(VERA), "mcp", "serve", "--stdio"], env=cli_env(world.db, VERA_API_KEY=world.revoked_key),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "revoked" in done.stderr, done.stderr


# --- the resource server ------------------------------------------------------------------------

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
# the per-request revision: no initialize; the version, capabilities and routing travel with each request
PER_REQUEST_VERSION = "2026-07-28"
WHOAMI_PER_REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "whoami", "arguments": {}, "_meta": {"io.modelcontextprotocol/protocolVersion": PER_REQUEST_VERSION,
                                                 "io.modelcontextprotocol/clientCapabilities": {}}}}  # fmt: skip
PER_REQUEST_HEADERS = {
    "MCP-Protocol-Version": PER_REQUEST_VERSION,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "whoami",
}
# the first request of a client in each protocol revision: (body, extra headers)
FIRST_REQUESTS = [
    pytest.param((INITIALIZE, {}), id="handshake"),
    pytest.param((WHOAMI_PER_REQUEST, PER_REQUEST_HEADERS), id="per-request"),
]


def with_bearer(
    first: tuple[dict[str, Any], dict[str, str]], token: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """A first request and its headers, with the token as a Bearer."""
    body, extra = first
    return body, {**JSON_HEADERS, **extra, "Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("first", FIRST_REQUESTS)
@pytest.mark.parametrize(
    "token", [None, "bad", "vera_000000000000_" + "x" * 43, "revoked", "expired", "disabled"]
)
def test_requests_without_a_valid_token_get_401_naming_the_metadata(
    world: World, server: HttpServer, token: str | None, first: tuple[dict[str, Any], dict[str, str]]
) -> None:
    token = {"revoked": world.revoked_key, "expired": world.expired_key, "disabled": world.disabled_key}.get(
        token or "", token
    )
    body, extra = first
    headers = {**JSON_HEADERS, **extra, **({"Authorization": f"Bearer {token}"} if token else {})}
    answer = httpx.post(server.url, json=body, headers=headers)
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    metadata_url = f"{server.base}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    metadata = httpx.get(metadata_url).json()
    assert metadata["resource"] == server.url and metadata["authorization_servers"]
    root = httpx.get(f"{server.base}/.well-known/oauth-protected-resource").json()
    assert root["resource"] == server.url and set(root["scopes_supported"]) == {s.value for s in Scope}


@pytest.mark.parametrize("first", FIRST_REQUESTS)
def test_a_valid_key_is_let_in(
    world: World, server: HttpServer, first: tuple[dict[str, Any], dict[str, str]]
) -> None:
    body, headers = with_bearer(first, world.a.owner_key)
    answer = httpx.post(server.url, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert "error" not in answer.json(), answer.text


@pytest.mark.parametrize(
    ("headers", "status"),
    [({"Host": "evil.example"}, 421), ({"Host": "evil.example:80"}, 421),
     ({"Origin": "http://evil.example"}, 403), ({"Origin": "https://localhost.evil.example"}, 403)],
)  # fmt: skip
@pytest.mark.parametrize("first", FIRST_REQUESTS)
def test_other_hosts_and_origins_are_refused(
    world: World,
    server: HttpServer,
    headers: dict[str, str],
    status: int,
    first: tuple[dict[str, Any], dict[str, str]],
) -> None:
    """DNS rebinding: a page elsewhere that reaches the server by a rebound name or from its origin."""
    body, auth = with_bearer(first, world.a.owner_key)
    answer = httpx.post(server.url, json=body, headers={**auth, **headers})
    assert answer.status_code == status, answer.text
    allowed = httpx.post(server.url, json=body, headers={**auth, "Origin": "http://localhost:3000"})
    assert allowed.status_code == 200


@pytest.mark.parametrize("first", FIRST_REQUESTS)
def test_an_oversize_body_is_refused(
    world: World, server: HttpServer, first: tuple[dict[str, Any], dict[str, str]]
) -> None:
    body, auth = with_bearer(first, world.a.owner_key)
    padded = {**body, "padding": "x" * (64 * 1024)}
    assert httpx.post(server.url, json=padded, headers=auth).status_code == 413


# --- tool errors ----------------------------------------------------------------------------------


def bad_calls(world: World) -> list[tuple[str, dict[str, Any], str]]:
    return [
        (
            "search",
            {"query": "x" * (LIMITS.max_query_chars + 1)},
            "query: String should have at most 8192 characters",
        ),
        ("search", {"query": "payments", "k": 0}, "greater than or equal to 1"),
        (
            "search",
            {"query": "payments", "k": 51},
            "invalid arguments for search: k: Input should be less than or equal to 50",
        ),
        ("search", {"query": "payments", "scopes": [world.b.organisation]}, "no scope"),
        ("search", {"query": "payments", "scopes": ["Bravo"]}, "no scope"),
        ("search", {"query": "payments", "scopes": ["nowhere"]}, "no scope"),
        ("search", {"query": "payments", "snapshot": "nightly"}, "exactly one scope"),
        ("search", {"query": "payments", "as_of": "yesterday-ish"}, "as_of"),
        ("feedback", {"kind": "fact", "item_id": "not-a-uuid", "query": "q", "vote": "up"}, "item_id"),
        ("feedback", {"kind": "fact", "item_id": str(uuid4()), "query": "q", "vote": "sideways"}, "vote"),
        ("feedback", {"kind": "fact", "item_id": str(uuid4()), "query": "q", "vote": "up"}, "not"),
        ("get_snapshot", {"scope": "Acme", "name": "never taken"}, "no snapshot"),
        ("review", {"scope": "Acme", "item_id": str(uuid4()), "decision": "maybe"}, "decision"),
        ("review", {"scope": "Acme", "item_id": str(uuid4()), "decision": "approve"}, "no claim"),
        ("create_snapshot", {"scope": "Acme", "name": ""}, "at least 1 character"),
        (
            "search",
            {"query": "q", "during": {"start": "2021-01-01", "end": "2020-01-01"}},
            "during: Value error, the period must end after it starts: 2021-01-01 .. 2020-01-01",
        ),
        (
            "search",
            {"query": "q", "during": {"start": "2021-01-01", "end": "2021-01-01"}},
            "must end after it starts",
        ),
        (
            "search",
            {"query": "q", "during": {"start": "01/02/2020"}},
            "during.start: Value error, a day is written YYYY-MM-DD",
        ),
        (
            "search",
            {"query": "q", "during": {"end": 1577836800}},
            "during.end: Value error, a day is written YYYY-MM-DD",
        ),
        ("search", {"query": "q", "during": {"start": "2020-02-30"}}, "during.start"),
        ("search", {"query": "q", "during": {}}, "a period needs a start, an end or both"),
        (
            "search",
            {"query": "q", "during": {"start": "2020-01-01", "until": "2021-01-01"}},
            "during.until: Extra inputs",
        ),
        ("search", {"query": "q", "during": "2020"}, "during"),
        (
            "feedback",
            {
                "kind": "fact",
                "item_id": str(uuid4()),
                "query": "q",
                "vote": "up",
                "during": {"end": "2020-13-01"},
            },
            "during.end",
        ),
    ]


def test_bad_arguments_are_tool_errors_with_a_readable_message(world: World, server: HttpServer) -> None:
    async def scenario() -> list[tuple[str, bool, str]]:
        async with http_session(server.url, world.a.owner_key) as session:
            return [
                (expected, (r := await session.call_tool(tool, arguments)).is_error, text_of(r))
                for tool, arguments, expected in bad_calls(world)
            ]

    for expected, is_error, message in run(scenario()):
        assert is_error, message
        assert expected in message, message
        assert "Traceback" not in message and "pydantic.dev" not in message and "\n" not in message
        assert "xxxxxxxxxx" not in message  # the rejected value is the caller's data: not echoed


def test_a_viewer_reaches_neither_the_owners_personal_scope_nor_admin_tools(
    world: World, server: HttpServer
) -> None:
    async def scenario() -> list[Any]:
        async with http_session(server.url, world.a.viewer_key) as session:
            return [
                await session.call_tool("search", {"query": "payments", "scopes": [world.a.owner_personal]}),
                await session.call_tool("pending_reviews", {"scope": "Acme"}),
                await session.call_tool("create_snapshot", {"scope": "Acme", "name": "by a viewer"}),
            ]

    personal, reviews, snapshot = run(scenario())
    assert personal.is_error and "no scope" in text_of(personal)
    assert reviews.is_error and snapshot.is_error
    assert "role" in text_of(reviews).lower() or "admin" in text_of(reviews).lower(), text_of(reviews)


def test_a_token_without_the_scope_a_tool_needs_is_refused_naming_it(
    world: World, server: HttpServer
) -> None:
    pending = pending_claim(world.db, world.a, "narrow")

    async def scenario() -> dict[str, Any]:
        async with http_session(server.url, NARROW + world.a.owner_key) as session:
            return {
                "whoami": await session.call_tool("whoami", {}),
                "search": await session.call_tool("search", {"query": "payments-api"}),
                "feedback": await session.call_tool(
                    "feedback", {"kind": "fact", "item_id": str(uuid4()), "query": "q", "vote": "up"}
                ),
                "snapshot": await session.call_tool("create_snapshot", {"scope": "Acme", "name": "narrow"}),
                "review": await session.call_tool("pending_reviews", {"scope": "Acme"}),
                "decide": await session.call_tool(
                    "review", {"scope": "Acme", "item_id": str(pending), "decision": "approve"}
                ),
            }

    results = run(scenario())
    assert structured(results["whoami"])["token_scopes"] == ["read"]
    assert structured(results["search"])["hits"]
    for tool, scope in (
        ("feedback", "feedback"),
        ("snapshot", "snapshot"),
        ("review", "review"),
        ("decide", "review"),
    ):
        assert results[tool].is_error and f"lacks the scope '{scope}'" in text_of(results[tool]), text_of(
            results[tool]
        )
    assert lifecycle(world.db, pending) == "pending_review"


# --- tenant isolation -------------------------------------------------------------------------------


def b_ids(world: World) -> dict[str, UUID]:
    with world.db.admin() as conn:
        fact, chunk = conn.execute(
            # a published fact of B's (an earlier test may have left B's pending claims beside it)
            "select fact_id, chunk_id from vera.facts where group_id = %s and lifecycle = 'published' "
            "order by recorded_at, fact_id limit 1",
            (world.b.organisation,),
        ).fetchone()  # type: ignore[misc]
    return {"fact": fact, "passage": chunk}


@pytest.mark.parametrize("protocol", ["handshake", "per-request"])
def test_tenant_a_never_sees_or_touches_tenant_b_through_any_tool(
    world: World, server: HttpServer, protocol: str
) -> None:
    b = world.b
    theirs = b_ids(world)
    b_pending = pending_claim(world.db, b, "bravo-secret")
    votes_before = _votes(world.db, b.organisation)

    opened = http_session if protocol == "handshake" else per_request_client

    async def scenario() -> dict[str, Any]:
        async with opened(server.url, world.a.owner_key) as session:
            calls: dict[str, tuple[str, dict[str, Any]]] = {
                "whoami": ("whoami", {}),
                "search": ("search", {"query": "payments-api cluster blue bravo-secret", "k": 50}),
                "search_b": ("search", {"query": "payments-api", "scopes": [b.organisation, b.workspace]}),
                "snapshot_b": ("search", {"query": "payments-api", "scopes": [b.organisation], "snapshot": "nightly"}),
                "get_snapshot_b": ("get_snapshot", {"scope": b.organisation, "name": "nightly"}),
                "list_snapshots_b": ("list_snapshots", {"scope": b.organisation}),
                "create_snapshot_b": ("create_snapshot", {"scope": b.organisation, "name": "stolen"}),
                "pending_b": ("pending_reviews", {"scope": b.organisation}),
                "review_b_in_b": ("review", {"scope": b.organisation, "item_id": str(b_pending), "decision": "approve"}),
                "review_b_in_a": ("review", {"scope": "Acme", "item_id": str(b_pending), "decision": "approve"}),
                "review_b_fact": ("review", {"scope": "Acme", "item_id": str(theirs["fact"]), "decision": "reject"}),
                "review_b_passage": ("review", {"scope": "Acme", "item_id": str(theirs["passage"]),
                                                "kind": "passage", "decision": "reject"}),
            }  # fmt: skip
            for kind, item in theirs.items():
                for vote in ("up", "down"):
                    calls[f"feedback_{kind}_{vote}"] = ("feedback", {
                        "kind": kind, "item_id": str(item), "query": "payments-api", "vote": vote})  # fmt: skip
                calls[f"feedback_{kind}_scoped"] = ("feedback", {
                    "kind": kind, "item_id": str(item), "query": "payments-api", "vote": "up",
                    "scopes": [b.organisation]})  # fmt: skip
            return {name: await session.call_tool(tool, args) for name, (tool, args) in calls.items()}

    results = run(scenario())
    me = structured(results.pop("whoami"))
    assert not {s["group_id"] for s in me["scopes"]} & set(b.groups)
    hits = structured(results.pop("search"))["hits"]
    assert hits and {h["group_id"] for h in hits} <= set(world.a.groups)
    assert not {h["item_id"] for h in hits} & {str(i) for i in (*theirs.values(), b_pending)}
    for name, result in results.items():
        assert result.is_error, f"{name}: {text_of(result)}"
        message = text_of(result)
        assert b.organisation not in message.replace(f"'{b.organisation}'", "") or "no scope" in message, (
            message
        )
    assert lifecycle(world.db, b_pending) == "pending_review"
    assert lifecycle(world.db, theirs["fact"]) == "published"
    assert _votes(world.db, b.organisation) == votes_before
    with world.db.admin() as conn:
        assert conn.execute("select count(*) from vera.snapshots where name = 'stolen'").fetchone() == (0,)


def _votes(db: Database, group: str) -> int:
    with db.admin() as conn:
        row = conn.execute("select count(*) from vera.feedback where group_id = %s", (group,)).fetchone()
    return int(row[0]) if row else 0


# --- API keys: revocation and the verification cache -------------------------------------------------


def test_a_revoked_key_reads_nothing_at_once_and_is_refused_by_the_transport_when_its_cache_entry_ends(
    world: World,
    owner_a: VeraClient,
) -> None:
    created = owner_a.create_api_key("short-lived agent")
    key = created.api_key

    with http_server(world.db, api_key_cache_s=1.0) as server:

        async def before() -> Any:
            async with http_session(server.url, key) as session:
                assert structured(await session.call_tool("search", {"query": "payments-api"}))["hits"]
                assert owner_a.revoke_api_key(created.prefix)
                # still let in by the transport (cached), but the call authenticates again in SQL
                return await session.call_tool("search", {"query": "payments-api"})

        refused = run(before())
        assert refused.is_error and "revoked" in text_of(refused), text_of(refused)
        time.sleep(1.2)
        answer = httpx.post(
            server.url, json=INITIALIZE, headers={**JSON_HEADERS, "Authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 401


# --- health ---------------------------------------------------------------------------------------


def test_ready_answers_503_while_the_database_is_unreachable(make_database: Any) -> None:
    db: Database = make_database()
    with db.admin() as conn:
        key = conn.execute(
            "select api_key from vera.create_tenant('Charlie', 'Owner of Charlie')"
        ).fetchone()[0]  # type: ignore[index]
    with http_server(db) as server:
        assert httpx.get(f"{server.base}/health/live").status_code == 200
        ready = httpx.get(f"{server.base}/health/ready")
        assert ready.status_code == 200 and ready.json()["database"] == "ok"
        _allow_connections(db, allowed=False)
        try:
            down = httpx.get(f"{server.base}/health/ready", timeout=10)
            assert down.status_code == 503 and down.json()["status"] == "unavailable"
            assert httpx.get(f"{server.base}/health/live").status_code == 200
            # a key that cannot be checked now is not called invalid: the client keeps it and retries
            unchecked = httpx.post(server.url, json=INITIALIZE, timeout=30,
                                   headers={**JSON_HEADERS, "Authorization": f"Bearer {key}"})  # fmt: skip
            assert unchecked.status_code == 503, unchecked.text
        finally:
            _allow_connections(db, allowed=True)
        # ready again once the pool has reconnected (it backs off between attempts)
        deadline = time.monotonic() + 60
        while httpx.get(f"{server.base}/health/ready", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "not ready again within 60 s of the database's return"
            time.sleep(0.2)


def _allow_connections(db: Database, *, allowed: bool) -> None:
    """The database goes away for its clients: no new connections, and the open ones are ended."""
    with psycopg.connect(db.server.admin_url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("alter database {} with allow_connections {}").format(
            sql.Identifier(db.name), sql.Literal(allowed)))  # fmt: skip
        if not allowed:
            conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
                (db.name,),
            )


def test_the_snippet_vera_demo_prints_connects_an_agent(world: World) -> None:
    """The stdio entry `vera demo` prints, as an agent client would run it (its command, args and env)."""
    settings = vera_settings(world.db)
    stdio, http = agent_client_config(str(VERA), world.a.viewer_key, settings.db)
    entry = stdio["mcpServers"]["vera"]  # type: ignore[index]
    assert entry["env"]["VERA_DB__DATABASE"] == world.db.name and entry["args"] == ["mcp", "serve", "--stdio"]
    assert http["mcpServers"]["vera"]["headers"] == {"Authorization": f"Bearer {world.a.viewer_key}"}  # type: ignore[index]

    async def scenario() -> dict[str, Any]:
        parameters = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return structured(await session.call_tool("search", {"query": "payments-api", "k": 3}))

    hits = run(scenario())["hits"]
    assert hits and {hit["group_id"] for hit in hits} <= {world.a.organisation, world.a.workspace}


def test_vera_mcp_serve_http_runs_until_stopped(world: World) -> None:
    """The command itself: it serves on the port it was given, as the gateway, and stops on SIGTERM."""
    port = free_port()
    with serve_process(cli_env(world.db), port) as server:

        async def scenario() -> dict[str, Any]:
            async with http_session(server.url, world.b.owner_key) as session:
                return structured(await session.call_tool("whoami", {}))

        me = run(scenario())
        assert me["principal_id"] == str(world.b.owner) and me["server_version"]
        with world.db.admin() as conn:
            roles = conn.execute(
                "select distinct usename from pg_stat_activity where datname = %s and usename like 'vera_%%'",
                (world.db.name,),
            ).fetchall()
        assert ("vera_gateway",) in roles
    # uvicorn shuts down gracefully, then re-raises the signal so that the exit status says why
    assert server.process.returncode in {0, -signal.SIGTERM}, server.stderr
    assert "Traceback" not in server.stderr
    assert f"serving http://127.0.0.1:{port}/mcp" in server.stderr
