"""The HTTP API's rules, route by route, against a live server on the seeded two tenants:
problem details, scopes, review rights and the tier guard, as_of, another tenant's ids,
idempotency keys, ETags, cursors, body limits, Host and Origin, quotas, CORS, and the API
mounted in the MCP server's app."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from pg_tests.support.api_servers import api_client, api_server, without_request_id
from pg_tests.support.mcp_servers import NARROW, HttpServer, http_server, with_read_only_tokens
from pg_tests.support.seed import World
from vera_client.config import VeraSettings
from vera_mcp.config import McpSettings
from vera_mcp.entrypoints.wiring import quota_ledger

pytestmark = pytest.mark.pg
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[HttpServer]:
    with api_server(world.db, with_read_only_tokens) as running:
        yield running


@pytest.fixture
def owner(server: HttpServer, world: World) -> Iterator[httpx.Client]:
    with api_client(server, world.a.owner_key) as client:
        yield client


def _ids_of(world: World, group: str) -> dict[str, str]:
    with world.db.admin() as admin:
        fact, source = admin.execute(
            "select f.fact_id::text, f.source_id::text from vera.facts f where f.group_id = %s limit 1",
            (group,),
        ).fetchone()  # type: ignore[misc]
    return {"fact": fact, "source": source}


def _assert_problem(response: httpx.Response, status: int, code: str | None = None) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert {"type", "title", "status", "detail", "request_id"} <= set(body)
    assert body["status"] == status and str(body["type"]).startswith("urn:vera:problem:")
    assert body["request_id"] == response.headers["x-request-id"]
    if code is not None:
        assert body["code"] == code
    return body


def _hits_saying(client: httpx.Client, query: str, text: str) -> list[dict[str, object]]:
    hits = client.get("/v1/search", params={"q": query}).json()["hits"]
    return [hit for hit in hits if text in str(hit["text"])]


def test_no_token_is_a_problem_with_a_challenge(server: HttpServer) -> None:
    with api_client(server, None) as anonymous:
        response = anonymous.get("/v1/whoami")
    _assert_problem(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer")
    with api_client(server, "vera_nope_nothing") as bad:
        response = bad.get("/v1/whoami")
    _assert_problem(response, 401)
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_an_unknown_fact_is_404_with_its_sqlstate(owner: httpx.Client) -> None:
    body = _assert_problem(owner.get(f"/v1/facts/{uuid.uuid4()}"), 404, "VN001")
    assert body["type"] == "urn:vera:problem:not-found"


def test_invalid_parameters_are_422_naming_each(owner: httpx.Client) -> None:
    body = _assert_problem(owner.get("/v1/search", params={"q": "x", "k": 0}), 422)
    assert any(error.startswith("query.k") for error in body["errors"])  # type: ignore[attr-defined]
    _assert_problem(owner.get("/v1/search", params={"q": "x", "bogus": 1}), 422)
    _assert_problem(owner.get("/v1/facts/not-a-uuid"), 422)


@pytest.mark.parametrize("route", ["fact", "explanation", "evidence", "history", "source"])
def test_another_tenants_id_answers_as_an_id_that_exists_nowhere(
    server: HttpServer, world: World, route: str
) -> None:
    theirs = _ids_of(world, world.a.organisation)
    path = {
        "fact": "/v1/facts/{fact}", "explanation": "/v1/facts/{fact}/explanation",
        "evidence": "/v1/facts/{fact}/evidence", "history": "/v1/facts/{fact}/history",
        "source": "/v1/sources/{source}",
    }[route]  # fmt: skip
    nowhere = {"fact": str(uuid.uuid4()), "source": str(uuid.uuid4())}
    with api_client(server, world.a.owner_key) as a:
        assert a.get(path.format(**theirs)).status_code == 200, "tenant A reads its own"
    with api_client(server, world.b.owner_key) as b:
        stolen, missing = b.get(path.format(**theirs)), b.get(path.format(**nowhere))
    assert stolen.status_code == missing.status_code == 404
    same = without_request_id(stolen.json())
    assert same | {"detail": ""} == without_request_id(missing.json()) | {"detail": ""}
    assert str(same["detail"]).replace(theirs["fact"], "ID").replace(theirs["source"], "ID") == str(
        without_request_id(missing.json())["detail"]
    ).replace(nowhere["fact"], "ID").replace(nowhere["source"], "ID")


def test_a_read_only_token_may_not_write(server: HttpServer, world: World) -> None:
    with api_client(server, NARROW + world.a.owner_key) as narrow:
        assert narrow.get("/v1/whoami").status_code == 200
        response = narrow.post("/v1/proposals", json={
            "subject": "x", "predicate": "RUNS_ON", "object": "y", "evidence": "z", "scope": world.a.workspace,
        })  # fmt: skip
        body = _assert_problem(response, 403)
        assert body["type"] == "urn:vera:problem:insufficient-scope"
        assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
        _assert_problem(narrow.get("/v1/keys"), 403)


def test_only_admins_review_and_an_approved_proposal_becomes_searchable(
    server: HttpServer, world: World
) -> None:
    """The tier guard: a proposal waits in its proposer's scope (a viewer of the workspace does
    not find it) until an admin approves it; a viewer may not see or decide the review queue."""
    words = "ferry-scheduler runs on cluster amber"
    with api_client(server, world.a.owner_key) as owner, api_client(server, world.a.viewer_key) as viewer:
        made = owner.post("/v1/proposals", json={
            "subject": "ferry-scheduler", "predicate": "RUNS_ON", "object": "cluster amber",
            "evidence": words, "scope": world.a.workspace,
        })  # fmt: skip
        assert made.status_code == 201, made.text
        fact_id = made.json()["fact_id"]
        assert not _hits_saying(viewer, words, "ferry-scheduler")
        _assert_problem(viewer.get("/v1/reviews", params={"scope": world.a.workspace}), 403, "42501")
        decision = {"scope": world.a.workspace, "item_id": fact_id, "decision": "approve", "note": "ok"}
        _assert_problem(viewer.post("/v1/reviews", json=decision), 403, "42501")
        pending = owner.get("/v1/reviews", params={"scope": world.a.workspace}).json()
        assert fact_id in {item["item_id"] for item in pending["items"]}
        approved = owner.post("/v1/reviews", json=decision)
        assert approved.status_code == 200, approved.text
        assert approved.json()["lifecycle"] == "published"
        published = approved.json()["item_id"]  # the approved copy, in the workspace
        hits = viewer.get("/v1/search", params={"q": words}).json()["hits"]
        assert any(hit["item_id"] == published and hit["group_id"] == world.a.workspace for hit in hits)
    with api_client(server, world.b.owner_key) as other:
        assert not _hits_saying(other, words, "ferry-scheduler")


def test_a_search_during_a_period_answers_with_it(owner: httpx.Client) -> None:
    answer = owner.get(
        "/v1/search",
        params={"q": "payments-api cluster blue", "during_start": "2020-01-01", "during_end": "2031-01-01"},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["during"]["start"] == "2020-01-01" and answer.json()["hits"]
    assert answer.json()["hits"][0]["signals"]["period"] is not None


def test_as_of_answers_as_vera_knew_it_then(owner: httpx.Client) -> None:
    now = owner.get("/v1/search", params={"q": "payments-api cluster blue"}).json()
    assert now["hits"]
    then = owner.get("/v1/search", params={"q": "payments-api cluster blue", "as_of": "2001-01-01T00:00:00Z"})
    assert then.status_code == 200 and then.json()["hits"] == [] and then.json()["as_of"].startswith("2001")


def test_a_retried_write_with_its_idempotency_key_is_done_once(owner: httpx.Client, world: World) -> None:
    proposal = {"subject": "tide-api", "predicate": "RUNS_ON", "object": "cluster teal", "evidence": "tide-api "
                "runs on cluster teal", "scope": world.a.workspace}  # fmt: skip
    before = len(owner.get("/v1/proposals", params={"limit": 1000}).json()["proposals"])
    headers = {"Idempotency-Key": f"retry-{uuid.uuid4()}"}
    first = owner.post("/v1/proposals", json=proposal, headers=headers)
    second = owner.post("/v1/proposals", json=proposal, headers=headers)
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json() and second.headers["idempotent-replayed"] == "true"
    after = owner.get("/v1/proposals", params={"limit": 1000}).json()["proposals"]
    assert len(after) == before + 1, "the retry did nothing"
    other = owner.post("/v1/proposals", json=proposal | {"object": "cluster red"}, headers=headers)
    _assert_problem(other, 409, "VI001")
    refused = owner.post(
        "/v1/proposals", json=proposal | {"scope": "u:nowhere"}, headers={"Idempotency-Key": "r1"}
    )
    again = owner.post(
        "/v1/proposals", json=proposal | {"scope": "u:nowhere"}, headers={"Idempotency-Key": "r1"}
    )
    assert refused.status_code == again.status_code == 404 and again.headers["idempotent-replayed"] == "true"


def test_a_cheap_read_answers_304_to_its_etag(owner: httpx.Client, world: World) -> None:
    fact = _ids_of(world, world.a.organisation)["fact"]
    first = owner.get(f"/v1/facts/{fact}")
    tag = first.headers["etag"]
    again = owner.get(f"/v1/facts/{fact}", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    assert owner.get(f"/v1/facts/{fact}", headers={"If-None-Match": '"other"'}).status_code == 200


def test_a_listing_pages_by_an_opaque_cursor(owner: httpx.Client) -> None:
    everything = owner.get("/v1/sources").json()["sources"]
    assert len(everything) >= 2
    seen, cursor = [], None
    while True:
        page = owner.get("/v1/sources", params={"limit": 1, **({"cursor": cursor} if cursor else {})}).json()
        seen += page["sources"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == everything
    first = owner.get("/v1/sources", params={"limit": 1}).json()["next_cursor"]
    _assert_problem(owner.get("/v1/sources", params={"limit": 2, "cursor": first}), 422)
    _assert_problem(owner.get("/v1/sources", params={"limit": 1, "cursor": "garbage"}), 422)


def test_bodies_are_bounded_and_json(owner: httpx.Client, world: World) -> None:
    huge = "x" * (1 << 20)
    _assert_problem(owner.post("/v1/proposals", json={"subject": huge}), 413)
    _assert_problem(
        owner.post("/v1/feedback", content=b"vote=up", headers={"content-type": "text/plain"}), 415
    )


def test_a_foreign_host_or_origin_is_refused(owner: httpx.Client) -> None:
    assert owner.get("/v1/whoami", headers={"Host": "evil.example"}).status_code == 421
    assert owner.get("/v1/whoami", headers={"Origin": "https://evil.example"}).status_code == 403
    assert owner.get("/openapi.json", headers={"Host": "evil.example"}).status_code == 421


def test_cors_is_off_unless_configured(world: World, owner: httpx.Client) -> None:
    preflight = {"Origin": "http://127.0.0.1:9", "Access-Control-Request-Method": "GET"}
    assert "access-control-allow-origin" not in owner.options("/v1/whoami", headers=preflight).headers
    origin = "https://app.example"
    with api_server(world.db, cors_origins=[origin]) as cors, api_client(cors, world.a.owner_key) as client:
        answer = client.get("/v1/whoami", headers={"Origin": origin})
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == origin
        assert "etag" in answer.headers["access-control-expose-headers"].lower()


def test_quotas_count_per_principal_and_route_class(world: World) -> None:
    settings_quota = {"quotas": {"read": "2/min"}}
    ledger = quota_ledger(McpSettings(**settings_quota), VeraSettings())
    with api_server(world.db, ledger=ledger, **settings_quota) as limited:
        with api_client(limited, world.a.owner_key) as a:
            assert [a.get("/v1/whoami").status_code for _ in range(2)] == [200, 200]
            refused = a.get("/v1/whoami")
            body = _assert_problem(refused, 429)
            assert (
                body["type"] == "urn:vera:problem:quota-exceeded" and int(refused.headers["retry-after"]) >= 1
            )
            assert a.get("/v1/proposals").status_code == 200, "another route class counts apart"
            assert a.get("/v1/usage").status_code == 429
        with api_client(limited, world.b.owner_key) as b:
            assert b.get("/v1/whoami").status_code == 200, "another principal counts apart"


def test_the_api_mounted_in_the_mcp_servers_app(world: World) -> None:
    with http_server(world.db, api=True) as both, api_client(both, world.a.owner_key) as client:
        assert client.get("/v1/whoami").json()["via"] == "api_key"
        assert client.get("/openapi.json").json()["openapi"] == "3.1.0"
        assert client.get("/docs").status_code == 200
        assert client.post("/mcp", json={}).status_code != 404, "/mcp is still served"
    with http_server(world.db) as mcp_only, api_client(mcp_only, world.a.owner_key) as client:
        assert client.get("/v1/whoami").status_code == 404, "off unless VERA_MCP_API"


def test_the_docs_are_served_from_the_package(owner: httpx.Client) -> None:
    page = owner.get("/docs").text
    assert "/docs/static/swagger-ui-bundle.js" in page and "/openapi.json" in page
    assert "https://" not in page.replace("https://swagger.io", "")
    assert owner.get("/docs/static/swagger-ui-bundle.js").status_code == 200


def _job_counts(client: httpx.Client) -> dict[tuple[str, str, str], int]:
    answer = client.get("/v1/health")
    assert answer.status_code == 200, answer.text
    return {(j["group_id"], j["queue"], j["state"]): j["jobs"] for j in answer.json()["jobs"]}


def test_health_counts_the_callers_own_jobs_and_refuses_a_viewer(server: HttpServer, world: World) -> None:
    """GET /v1/health: an owner's jobs per queue and state (compared with its answer before the
    jobs were queued: other tests leave jobs too); another tenant's jobs never count; a viewer
    is refused (403, 42501); another tenant's scope answers as a scope that exists nowhere."""
    with api_client(server, world.a.owner_key) as owner, api_client(server, world.b.owner_key) as other:
        mine, theirs = _job_counts(owner), _job_counts(other)
        with world.db.admin() as admin:
            admin.execute(
                "set search_path = procrastinate, public"
            )  # its triggers name its tables unqualified
            ids = [
                admin.execute(
                    "insert into procrastinate.procrastinate_jobs (queue_name, task_name, args)"
                    " values ('health_probe', 'vera.health_probe', jsonb_build_object('group_id', %s::text))"
                    " returning id",
                    (group,),
                ).fetchone()[0]  # type: ignore[index]
                for group in (
                    world.a.workspace,
                    world.b.organisation,
                    world.b.organisation,
                    world.b.workspace,
                )
            ]
        try:
            assert _job_counts(owner) == mine | {(world.a.workspace, "health_probe", "todo"): 1}
            assert _job_counts(other) == theirs | {
                (world.b.organisation, "health_probe", "todo"): 2,
                (world.b.workspace, "health_probe", "todo"): 1,
            }
            body = owner.get("/v1/health", params={"scope": world.a.workspace, "stalled_after": 60}).json()
            probe = [j for j in body["jobs"] if j["queue"] == "health_probe"]
            assert [(j["jobs"], j["stalled"]) for j in probe] == [(1, 0)]
            assert {j["group_id"] for j in body["jobs"]} == {world.a.workspace}
            assert isinstance(body["graph_checks"], list)
            _assert_problem(owner.get("/v1/health", params={"stalled_after": 0}), 422)
            _assert_problem(owner.get("/v1/health", params={"scope": world.b.organisation}), 404)
            _assert_problem(owner.get("/v1/health", params={"scope": "g:exists-nowhere"}), 404)
            with api_client(server, world.a.viewer_key) as viewer:
                _assert_problem(
                    viewer.get("/v1/health", params={"scope": world.a.organisation}), 403, "42501"
                )
        finally:
            with world.db.admin() as admin:
                admin.execute("set search_path = procrastinate, public")
                admin.execute("delete from procrastinate.procrastinate_jobs where id = any(%s)", (ids,))
