"""The knowledge, proposal and context-pack tools of the MCP server, end to end:
the SDK's client sessions over stdio (a real `vera mcp serve --stdio`
subprocess) and streamable HTTP, against the demo corpus (examples/lumen,
ingested through the real worker) and the two seeded tenants: every tool, bad
arguments naming their bounds, tenant isolation with another tenant's ids
passed by hand, the contamination guard, stored packs, pack votes, erasure,
and token scopes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.databases import Database
from pg_tests.support.ingesting import ingest_manifest, run_worker
from pg_tests.support.lumen import EXAMPLE
from pg_tests.support.mcp_servers import (
    NARROW,
    HttpServer,
    cli_env,
    http_server,
    http_session,
    run,
    stdio_session,
    structured,
    text_of,
    with_read_only_tokens,
)
from pg_tests.support.seed import SeededTenant, World
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_mcp.domain.limits import LIMITS

KNOWLEDGE_TOOLS = {
    "get_fact", "explain_fact", "get_evidence", "get_entity", "get_source", "explore", "changes", "conflicts",
    "get_context", "get_context_pack", "pack_feedback", "propose", "retract_proposal", "list_proposals",
}  # fmt: skip
SIGNALS = {"relevance", "authority", "verification", "recency", "feedback", "confidence", "period"}
LONG_AGO = "2000-01-01T00:00:00Z"


@dataclass
class Lumen:
    organisation: str
    key: str


@pytest.fixture(scope="module")
def lumen(world: World, tmp_path_factory: pytest.TempPathFactory) -> Lumen:
    """The demo corpus in a tenant of its own, ingested with the embedder the servers use."""
    with world.db.admin() as admin:
        row = admin.execute("select * from vera.create_tenant('Lumen Freight', 'Lumen Owner')").fetchone()
        assert row is not None
        organisation, _, key = row
    ingest_manifest(world.db, key, organisation, EXAMPLE / "sources.toml")
    reports = run_worker(world.db, tmp_path_factory.mktemp("objects"), DeterministicEmbedder())
    assert all(not r.failed for r in reports) and sum(r.claims for r in reports) == 15
    return Lumen(organisation=str(organisation), key=str(key))


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[HttpServer]:
    with http_server(world.db, with_read_only_tokens) as running:
        yield running


async def exercise_knowledge_tools(session: Any, lumen: Lumen, label: str) -> None:
    """Every new tool once, as the demo tenant's owner, checking what each answers."""
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) >= KNOWLEDGE_TOOLS
    depth = tools["explore"].input_schema["properties"]["depth"]
    assert (depth["minimum"], depth["maximum"]) == (LIMITS.min_depth, LIMITS.max_depth)
    budget = tools["get_context"].input_schema["properties"]["token_budget"]
    assert (budget["minimum"], budget["maximum"]) == (LIMITS.min_token_budget, LIMITS.max_token_budget)
    assert all(tools[name].output_schema is not None for name in KNOWLEDGE_TOOLS)
    mine = {s["group_id"] for s in structured(await session.call_tool("whoami", {}))["scopes"]}

    # an entity, its facts, and one fact read, explained and traced to its source
    entities = structured(await session.call_tool("get_entity", {"name_or_id": "billing-api"}))["entities"]
    # the chat's tier-4 claim waits in the owner's personal scope, beside the organisation's entity
    [billing] = [e for e in entities if e["group_id"] == lumen.organisation]
    [chat] = [e for e in entities if e["group_id"].startswith("u:")]
    assert [(f["object"], f["lifecycle"]) for f in chat["facts"]] == [("heroku", "proposal")]
    assert billing["canonical_name"] == "billing-api" and billing["group_id"] == lumen.organisation
    runs_on = {f["object"]: f for f in billing["facts"] if f["predicate"].upper() == "RUNS_ON"}
    assert "k8s-hanoi-2" in runs_on, billing["facts"]
    current = runs_on["k8s-hanoi-2"]
    by_id = structured(await session.call_tool("get_entity", {"name_or_id": billing["entity_id"]}))
    assert [e["entity_id"] for e in by_id["entities"]] == [billing["entity_id"]]

    fact = structured(await session.call_tool("get_fact", {"fact_id": current["fact_id"]}))
    assert (fact["fact_id"], fact["object"], fact["tier"]) == (current["fact_id"], "k8s-hanoi-2", 1)
    assert fact["citation"]["source"]["name"] == "cmdb"
    explained = structured(await session.call_tool("explain_fact", {"fact_id": current["fact_id"]}))
    assert explained["fact"]["fact_id"] == current["fact_id"]
    assert "vm-cluster-1" in {f["object"] for f in explained["superseded"]}, explained
    assert all(f["citation"] for f in explained["superseded"])
    evidence = structured(await session.call_tool("get_evidence", {"fact_id": current["fact_id"]}))
    assert (evidence["source_name"], evidence["external_id"]) == ("cmdb", "services.csv")  # a row, no chunk
    source = structured(await session.call_tool("get_source", {"source_id": evidence["source_id"]}))
    assert (source["name"], source["trust_tier"]) == ("cmdb", 1)
    assert source["versions"] and source["versions"][0]["episode_id"] == evidence["episode_id"]
    assert source["age_seconds"] is not None and source["age_seconds"] >= 0

    # the graph, recent changes and conflicts, all within the caller's scopes
    explored = structured(await session.call_tool("explore", {"entity": "tracking-gateway", "depth": 2}))
    hops = {(f["hop"], f["subject"]) for f in explored["facts"]}
    assert (1, "tracking-gateway") in hops and any(hop == 2 for hop, _ in hops), hops
    assert {f["group_id"] for f in explored["facts"]} <= mine
    one_hop = structured(await session.call_tool("explore", {"entity": "tracking-gateway", "depth": 1}))
    assert {f["hop"] for f in one_hop["facts"]} == {1}
    changed = structured(await session.call_tool("changes", {"since": LONG_AGO, "limit": 50}))
    assert changed["changes"] and {c["group_id"] for c in changed["changes"]} <= mine
    assert {c["change"] for c in changed["changes"]} >= {"published", "superseded"}
    newest = structured(await session.call_tool("changes", {"since": LONG_AGO, "limit": 1}))
    assert len(newest["changes"]) == 1
    found = structured(await session.call_tool("conflicts", {"limit": 10}))
    billing_values = {
        v["object"] for c in found["conflicts"] if c["subject"] == "billing-api" for v in c["values"]
    }
    assert {"k8s-hanoi-2", "heroku"} <= billing_values, found  # the CMDB and the chat's proposal
    for conflict in found["conflicts"]:
        assert len({v["object"] for v in conflict["values"]}) >= 2
        assert {v["group_id"] for v in conflict["values"]} <= mine

    # a context pack, stored and read back, and a vote on one of its positions
    pack = structured(await session.call_tool(
        "get_context", {"query": "Which cluster does billing-api run on?", "token_budget": 400}))  # fmt: skip
    assert pack["items"] and [i["position"] for i in pack["items"]] == list(range(1, len(pack["items"]) + 1))
    assert pack["tokens_used"] <= 400 and pack["searched_groups"]
    for item in pack["items"]:
        assert set(item["signals"]) == SIGNALS and item["citation"] and item["group_id"] in mine
    assert any("k8s-hanoi-2" in item["text"] for item in pack["items"]), pack["items"]
    again = structured(await session.call_tool("get_context_pack", {"pack_id": pack["pack_id"]}))
    assert again == pack
    first = pack["items"][0]
    vote = structured(await session.call_tool(
        "pack_feedback", {"pack_id": pack["pack_id"], "position": 1, "vote": "up"}))  # fmt: skip
    assert vote["group_id"] == first["group_id"] and set(vote["signals"]) == SIGNALS
    assert pack["during"] is None  # the query names no period
    # the period asked about: read from the query's words, or passed (which wins); the pack keeps it
    read = structured(await session.call_tool(
        "get_context", {"query": "Which cluster did billing-api run on in 2025?", "token_budget": 400}))  # fmt: skip
    assert read["during"] == {"start": "2025-01-01", "end": "2026-01-01", "text": "2025"}
    passed = structured(await session.call_tool("get_context", {
        "query": "Which cluster did billing-api run on in 2025?", "token_budget": 400,
        "during": {"start": "2024-03-01", "end": "2024-04-01"}}))  # fmt: skip
    assert passed["during"] == {
        "start": "2024-03-01",
        "end": "2024-04-01",
        "text": "2024-03-01 .. 2024-04-01",
    }
    assert passed["items"] and all(item["signals"]["period"] is not None for item in passed["items"])
    stored = structured(await session.call_tool("get_context_pack", {"pack_id": passed["pack_id"]}))
    assert stored == passed

    # a proposal of the owner: made, listed, withdrawn
    subject = f"dispatch-{label}"
    proposed = structured(await session.call_tool("propose", {
        "subject": subject, "predicate": "runs on", "object": "k8s-hanoi-3",
        "evidence": f"{subject} moved to k8s-hanoi-3 last week", "scope": "Lumen Freight"}))  # fmt: skip
    assert proposed["proposed_for"] == lumen.organisation and proposed["group_id"].startswith("u:")
    listed = structured(await session.call_tool("list_proposals", {"limit": 10}))["proposals"]
    assert (proposed["fact_id"], "proposal") in {(p["fact_id"], p["lifecycle"]) for p in listed}
    withdrawn = structured(await session.call_tool("retract_proposal", {"fact_id": proposed["fact_id"]}))
    assert (withdrawn["fact_id"], withdrawn["lifecycle"]) == (proposed["fact_id"], "retracted")
    twice = await session.call_tool("retract_proposal", {"fact_id": proposed["fact_id"]})
    assert twice.is_error and "already" in text_of(twice), text_of(twice)


def test_every_knowledge_tool_over_streamable_http(world: World, lumen: Lumen, server: HttpServer) -> None:
    async def scenario() -> None:
        async with http_session(server.url, lumen.key) as session:
            await exercise_knowledge_tools(session, lumen, "http")

    run(scenario())


def test_every_knowledge_tool_over_stdio(world: World, lumen: Lumen) -> None:
    async def scenario() -> None:
        async with stdio_session(cli_env(world.db, VERA_API_KEY=lumen.key)) as session:
            await exercise_knowledge_tools(session, lumen, "stdio")

    run(scenario())


def test_a_vote_on_a_pack_position_is_recorded_on_its_item(
    world: World, lumen: Lumen, server: HttpServer
) -> None:
    query = "Who owns route-planner?"

    async def scenario() -> dict[str, Any]:
        async with http_session(server.url, lumen.key) as session:
            pack = structured(await session.call_tool("get_context", {"query": query, "token_budget": 300}))
            await session.call_tool(
                "pack_feedback", {"pack_id": pack["pack_id"], "position": 1, "vote": "down"}
            )
            return pack

    pack = run(scenario())
    first = pack["items"][0]
    with world.db.admin() as conn:
        votes = conn.execute(
            "select vote, query_text from vera.feedback where item_id = %s and group_id = %s",
            (first["item_id"], first["group_id"]),
        ).fetchall()
    assert (-1, query) in votes, votes


# --- bad arguments --------------------------------------------------------------------------------


def bad_calls(world: World) -> list[tuple[str, dict[str, Any], str]]:
    pack = str(uuid4())
    return [
        ("explore", {"entity": "payments-api", "depth": 0}, "depth: Input should be greater than or equal to 1"),
        ("explore", {"entity": "payments-api", "depth": 6}, "depth: Input should be less than or equal to 5"),
        ("get_context", {"query": "payments", "token_budget": 99},
         "token_budget: Input should be greater than or equal to 100"),
        ("get_context", {"query": "payments", "token_budget": 32_001},
         "token_budget: Input should be less than or equal to 32000"),
        ("get_context", {"query": "x" * (LIMITS.max_query_chars + 1)},
         "query: String should have at most 8192 characters"),
        ("get_context", {"query": "payments", "max_tier": 5}, "max_tier"),
        ("get_context", {"query": "payments", "scopes": ["nowhere"]}, "no scope 'nowhere' among yours"),
        ("get_context", {"query": "payments", "during": {"start": "2024-05-01", "end": "2024-04-01"}},
         "during: Value error, the period must end after it starts"),
        ("get_context", {"query": "payments", "during": {"end": "2024-13-01"}}, "during.end"),
        ("get_context", {"query": "payments", "during": {"start": "May 2024"}}, "a day is written YYYY-MM-DD"),
        ("get_entity", {"name_or_id": "payments-api", "scopes": ["nowhere"]}, "no scope 'nowhere' among yours"),
        ("explore", {"entity": "payments-api", "scopes": [world.b.organisation]}, "no scope"),
        ("changes", {"since": LONG_AGO, "scopes": ["Bravo"]}, "no scope 'Bravo' among yours"),
        ("conflicts", {"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ("conflicts", {"limit": 1001}, "limit: Input should be less than or equal to 1000"),
        ("changes", {"since": "last tuesday"}, "since"),
        ("get_fact", {"fact_id": "not-a-uuid"}, "fact_id"),
        ("get_entity", {"name_or_id": "e" * (LIMITS.max_entity_chars + 1)}, "name_or_id: String should have at most 500"),
        ("propose", {"subject": "payments-api", "predicate": "runs on", "object": "cluster red",
                     "evidence": "said so", "scope": "nowhere"}, "no scope 'nowhere' among yours"),
        ("propose", {"subject": "payments-api", "predicate": "runs on", "object": "cluster red",
                     "evidence": "", "scope": "Acme"}, "evidence: String should have at least 1 character"),
        ("pack_feedback", {"pack_id": pack, "position": 0, "vote": "up"}, "position: Input should be greater than or equal to 1"),
        ("pack_feedback", {"pack_id": pack, "position": 1, "vote": "sideways"}, "vote"),
        ("get_context_pack", {"pack_id": pack}, "no context pack"),
        ("get_fact", {"fact_id": str(uuid4())}, "no fact"),
    ]  # fmt: skip


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_bad_arguments_are_tool_errors_naming_the_bound(
    world: World, server: HttpServer, transport: str
) -> None:
    key = world.a.owner_key
    over = (
        http_session(server.url, key)
        if transport == "http"
        else stdio_session(cli_env(world.db, VERA_API_KEY=key))
    )

    async def scenario() -> list[tuple[str, str, bool, str]]:
        async with over as session:
            return [
                (tool, expected, (r := await session.call_tool(tool, arguments)).is_error, text_of(r))
                for tool, arguments, expected in bad_calls(world)
            ]

    for tool, expected, is_error, message in run(scenario()):
        assert is_error, f"{tool}: {message}"
        assert expected in message, f"{tool}: {message}"
        assert "Traceback" not in message and "pydantic.dev" not in message and "\n" not in message
        assert "xxxxxxxxxx" not in message and "eeeeeeeeee" not in message  # the caller's data: not echoed


# --- tenant isolation -----------------------------------------------------------------------------


def _publish_only_in(db: Database, key: str, group: str, subject: str) -> dict[str, UUID]:
    """A tier-1 source, episode and published fact about an entity no other tenant names."""
    with client_for(db, key) as vera:
        source = vera.register_source(group, "markdown", f"{subject} notes", 1)
        episode = vera.record_episode(group, source, f"{subject}.md", subject.encode().ljust(32, b"."))
        [chunk] = vera.store_chunks(
            group, episode.episode_id, [{"text": f"{subject} runs on cluster {subject}-home"}]
        )
        [fact] = vera.publish(group, episode.episode_id, [{"subject": subject, "predicate": "runs on",
                                                           "object": f"cluster {subject}-home"}])  # fmt: skip
    assert fact.lifecycle == "published"
    return {"source": source, "episode": episode.episode_id, "chunk": chunk.chunk_id, "fact": fact.fact_id}


def _same_refusal(theirs: Any, their_id: str, random: Any, random_id: str) -> None:
    """Another tenant's id is refused exactly as an id that does not exist (the id aside)."""
    assert theirs.is_error and random.is_error, (text_of(theirs), text_of(random))
    assert text_of(theirs).replace(their_id, "ID") == text_of(random).replace(random_id, "ID"), (
        text_of(theirs), text_of(random))  # fmt: skip


def test_tenant_a_cannot_reach_tenant_b_by_passing_its_ids(world: World, server: HttpServer) -> None:
    b = world.b
    theirs = _publish_only_in(world.db, b.owner_key, b.organisation, "bravo-ledger")
    # the same name in both tenants: two entities, each reached only by its own tenant
    for tenant in (world.a, b):
        _publish_only_in(world.db, tenant.owner_key, tenant.organisation, "twin-ledger")

    async def bravo_pack_and_proposal() -> tuple[str, str, str]:
        async with http_session(server.url, b.owner_key) as session:
            pack = structured(await session.call_tool("get_context", {"query": "bravo-ledger cluster"}))
            [entity] = structured(await session.call_tool("get_entity", {"name_or_id": "bravo-ledger"}))[
                "entities"
            ]
        async with http_session(server.url, member_key(world.db, b)) as session:
            proposal = structured(await session.call_tool("propose", {
                "subject": "bravo-ledger", "predicate": "runs on", "object": "cluster amber",
                "evidence": "bravo-ledger is on amber", "scope": b.workspace}))  # fmt: skip
        assert pack["items"]
        return pack["pack_id"], entity["entity_id"], proposal["fact_id"]

    pack, entity, proposal = run(bravo_pack_and_proposal())
    random = str(uuid4())
    by_id = {
        "get_fact": ("fact_id", str(theirs["fact"])),
        "explain_fact": ("fact_id", str(theirs["fact"])),
        "get_evidence": ("fact_id", str(theirs["fact"])),
        "get_source": ("source_id", str(theirs["source"])),
        "get_context_pack": ("pack_id", pack),
        "retract_proposal": ("fact_id", proposal),
        "get_entity": ("name_or_id", entity),
        "explore": ("entity", entity),
    }

    async def as_a() -> dict[str, Any]:
        async with http_session(server.url, world.a.owner_key) as session:
            answers: dict[str, Any] = {}
            for tool, (argument, their_id) in by_id.items():
                answers[tool] = (await session.call_tool(tool, {argument: their_id}),
                                 await session.call_tool(tool, {argument: random}))  # fmt: skip
            answers["entity_name"] = (await session.call_tool("get_entity", {"name_or_id": "bravo-ledger"}),
                                      await session.call_tool("get_entity", {"name_or_id": "nobody-ledger"}))  # fmt: skip
            answers["pack_feedback"] = (
                await session.call_tool("pack_feedback", {"pack_id": pack, "position": 1, "vote": "down"}),
                await session.call_tool("pack_feedback", {"pack_id": random, "position": 1, "vote": "down"}),
            )
            answers["explore_name"] = (
                await session.call_tool("explore", {"entity": "bravo-ledger", "depth": 5}),
                await session.call_tool("explore", {"entity": "nobody-ledger", "depth": 5}),
            )
            answers["explore_shared"] = structured(
                await session.call_tool("explore", {"entity": "twin-ledger"})
            )
            answers["changes"] = structured(
                await session.call_tool("changes", {"since": LONG_AGO, "limit": 1000})
            )
            answers["conflicts"] = structured(await session.call_tool("conflicts", {"limit": 1000}))
            answers["proposals"] = structured(await session.call_tool("list_proposals", {"limit": 1000}))
            return answers

    answers = run(as_a())
    for tool, (_, their_id) in by_id.items():
        _same_refusal(answers[tool][0], their_id, answers[tool][1], random)
    _same_refusal(answers["entity_name"][0], "bravo-ledger", answers["entity_name"][1], "nobody-ledger")
    _same_refusal(answers["pack_feedback"][0], pack, answers["pack_feedback"][1], random)
    _same_refusal(answers["explore_name"][0], "bravo-ledger", answers["explore_name"][1], "nobody-ledger")
    shared = answers["explore_shared"]["facts"]
    assert shared and {f["group_id"] for f in shared} <= set(world.a.groups)
    b_groups = set(b.groups)
    assert not {c["group_id"] for c in answers["changes"]["changes"]} & b_groups
    assert not {str(theirs["fact"]), proposal} & {c["fact_id"] for c in answers["changes"]["changes"]}
    for conflict in answers["conflicts"]["conflicts"]:
        assert not {v["group_id"] for v in conflict["values"]} & b_groups
    assert proposal not in {p["fact_id"] for p in answers["proposals"]["proposals"]}
    # nothing of B's was touched: its pack has no vote of A's, its proposal still waits
    with world.db.admin() as conn:
        assert conn.execute(
            "select lifecycle::text from vera.facts where fact_id = %s", (proposal,)
        ).fetchone() == ("proposal",)
        assert conn.execute("select count(*) from vera.feedback where principal_id = %s and group_id = any(%s)",
                            (world.a.owner, list(b_groups))).fetchone() == (0,)  # fmt: skip


# --- the contamination guard, stored packs and erasure, token scopes ---------------------------------


def member_key(db: Database, tenant: SeededTenant) -> str:
    """A new API key of the tenant's service principal, a member of its workspace."""
    with db.admin() as conn:
        row = conn.execute(
            "select api_key from vera.issue_api_key(%s, 'agent', null)", (tenant.service,)
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_a_members_proposal_waits_in_its_personal_scope_for_the_target_scopes_review(
    world: World, server: HttpServer
) -> None:
    a = world.a

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], Any]:
        async with http_session(server.url, member_key(world.db, a)) as session:
            me = structured(await session.call_tool("whoami", {}))
            proposed = structured(await session.call_tool("propose", {
                "subject": "payments-api", "predicate": "runs on", "object": "cluster orange",
                "evidence": "payments-api was moved to cluster orange", "scope": "Engineering"}))  # fmt: skip
            mine = structured(await session.call_tool("list_proposals", {}))
        async with http_session(server.url, a.owner_key) as session:
            waiting = structured(await session.call_tool("pending_reviews", {"scope": "Engineering"}))
        async with http_session(server.url, a.viewer_key) as session:  # a viewer proposes nothing
            refused = await session.call_tool("propose", {
                "subject": "payments-api", "predicate": "runs on", "object": "cluster orange",
                "evidence": "a viewer says so", "scope": "Acme"})  # fmt: skip
        return me, proposed, mine, waiting, refused

    me, proposed, mine, waiting, refused = run(scenario())
    personal = [s["group_id"] for s in me["scopes"] if s["kind"] == "personal"]
    assert proposed["group_id"] in personal and proposed["proposed_for"] == a.workspace
    assert proposed["lifecycle"] == "proposal"
    assert (proposed["fact_id"], "proposal", a.workspace) in {
        (p["fact_id"], p["lifecycle"], p["proposed_for"]) for p in mine["proposals"]}  # fmt: skip
    assert proposed["fact_id"] in {i["item_id"] for i in waiting["items"] if i["kind"] == "fact"}
    assert refused.is_error and "member role required" in text_of(refused), text_of(refused)
    with world.db.admin() as conn:  # nothing reached the shared scopes themselves
        assert conn.execute("select count(*) from vera.facts where group_id = any(%s) and object_value = 'cluster orange'",
                            (a.groups[:2],)).fetchone() == (0,)  # fmt: skip


def test_erasing_a_packed_source_removes_its_text_from_the_stored_pack(
    world: World, server: HttpServer
) -> None:
    a = world.a
    erasable = _publish_only_in(world.db, a.owner_key, a.organisation, "erasable-svc")

    async def pack() -> dict[str, Any]:
        async with http_session(server.url, a.owner_key) as session:
            return structured(await session.call_tool("get_context", {"query": "erasable-svc cluster"}))

    async def read_again(pack_id: str) -> dict[str, Any]:
        async with http_session(server.url, a.owner_key) as session:
            return structured(await session.call_tool("get_context_pack", {"pack_id": pack_id}))

    made = run(pack())
    quoted = [i for i in made["items"] if "erasable-svc-home" in i["text"]]
    assert quoted, made["items"]
    with client_for(world, a.owner_key) as owner:
        assert owner.erase_source(a.organisation, erasable["source"], "asked to forget").job > 0
    after = run(read_again(made["pack_id"]))
    assert [i["position"] for i in after["items"]] == [i["position"] for i in made["items"]]
    assert not any("erasable-svc-home" in i["text"] + str(i["citation"]) for i in after["items"])
    gone = {i["position"] for i in after["items"] if i["erased"]}
    assert gone == {i["position"] for i in quoted} and all(
        i["text"] == "" for i in after["items"] if i["erased"])  # fmt: skip


def test_a_read_only_token_reads_but_is_refused_for_proposals_and_pack_votes(
    world: World, server: HttpServer
) -> None:
    async def scenario() -> dict[str, Any]:
        async with http_session(server.url, NARROW + world.a.owner_key) as session:
            pack = await session.call_tool("get_context", {"query": "payments-api cluster"})
            return {
                "pack": pack,
                "propose": await session.call_tool(
                    "propose",
                    {
                        "subject": "payments-api",
                        "predicate": "runs on",
                        "object": "cluster grey",
                        "evidence": "grey, says the read-only token",
                        "scope": "Acme",
                    },
                ),
                "list_proposals": await session.call_tool("list_proposals", {}),
                "retract_proposal": await session.call_tool("retract_proposal", {"fact_id": str(uuid4())}),
                "pack_feedback": await session.call_tool(
                    "pack_feedback", {"pack_id": structured(pack)["pack_id"], "position": 1, "vote": "up"}
                ),
            }

    results = run(scenario())
    assert structured(results.pop("pack"))["items"]
    needs = {"propose": "propose", "list_proposals": "propose", "retract_proposal": "propose",
             "pack_feedback": "feedback"}  # fmt: skip
    for tool, result in results.items():
        message = text_of(result)
        assert result.is_error and message.endswith(
            f"this token lacks the scope '{needs[tool]}', which {tool} needs"
        ), message
    with world.db.admin() as conn:
        assert conn.execute(
            "select count(*) from vera.facts where object_value = 'cluster grey'"
        ).fetchone() == (0,)
