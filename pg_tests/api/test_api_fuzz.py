"""The HTTP API fuzzed from its own OpenAPI document (schemathesis) against a live server on
the demo data (the Lumen corpus ingested as `vera demo` does) and a second tenant: every
operation, requests generated from its schema, sent as each tenant's owner. No answer is a
5xx, every answer matches the document (status, content type, body schema), and no answer
to one tenant holds an id, a scope or a text of the other's."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from pg_tests.support.api_servers import api_client, api_server
from pg_tests.support.clients import client_for
from pg_tests.support.databases import Database
from pg_tests.support.lumen import load_lumen
from pg_tests.support.mcp_servers import HttpServer

pytestmark = pytest.mark.pg
# a bounded run: every operation gets this many generated requests per tenant
EXAMPLES_PER_OPERATION = 6
# what marks a tenant's data in an answer: its ids (of groups, sources, episodes, chunks, facts,
# entities) and a word only its corpus holds
_TENANT_IDS = """
with recursive tree(group_id) as (
    select %(org)s::text
    union select g.group_id from vera.groups g join tree t on g.parent_group_id = t.group_id
), reach as (
    select group_id from tree
    union select p.personal_group_id from vera.memberships m join vera.principals p using (principal_id)
     where m.group_id in (select group_id from tree)
)
select group_id from reach
union all select source_id::text from vera.sources where group_id in (select group_id from reach)
union all select episode_id::text from vera.episodes where group_id in (select group_id from reach)
union all select chunk_id::text from vera.chunks where group_id in (select group_id from reach)
union all select fact_id::text from vera.facts where group_id in (select group_id from reach)
union all select entity_id::text from vera.entities where group_id in (select group_id from reach)
"""


@dataclass(frozen=True)
class Tenant:
    name: str
    key: str
    marks: frozenset[str]
    organisation: str
    sources: frozenset[str]  # its sources when the demo was loaded (the fuzzer may add more)


@dataclass(frozen=True)
class Demo:
    lumen: Tenant
    harbor: Tenant


@pytest.fixture(scope="module")
def demo(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Demo:
    lumen = load_lumen(db, Path(tmp_path_factory.mktemp("objects")))
    with db.admin() as admin:
        harbor_org, _, harbor_key = admin.execute(
            "select * from vera.create_tenant('Harbor Pilots', 'Harbor Owner')"
        ).fetchone()  # type: ignore[misc]
    with client_for(db, harbor_key) as harbor:
        harbor.remember(
            "The tugboat roster lives in the harbourmaster wiki. Quayside crane Q7 is out of order."
        )
    marks = {org: _reach(db, org) for org in (lumen.organisation, harbor_org)}
    sources = {org: _sources(db, marks[org]) for org in marks}
    return Demo(
        lumen=Tenant(
            "lumen", lumen.key, marks[lumen.organisation] | {"Lumen Freight"}, lumen.organisation,
            sources[lumen.organisation],
        ),
        harbor=Tenant(
            "harbor", str(harbor_key), marks[harbor_org] | {"Harbor Pilots", "tugboat"}, str(harbor_org),
            sources[harbor_org],
        ),
    )  # fmt: skip


def _reach(db: Database, organisation: str) -> frozenset[str]:
    """The ids of an organisation's groups and rows now (_TENANT_IDS)."""
    with db.admin() as admin:
        return frozenset(row[0] for row in admin.execute(_TENANT_IDS, {"org": organisation}))


def _sources(db: Database, groups: Iterable[str]) -> frozenset[str]:
    """The ids of the sources of these groups now, read past row-level security."""
    with db.admin() as admin:
        rows = admin.execute(
            "select source_id::text from vera.sources where group_id = any(%s)", (list(groups),)
        )
        return frozenset(row[0] for row in rows)


@pytest.fixture(scope="module")
def live(db: Database, demo: Demo) -> Iterator[HttpServer]:
    with api_server(db) as server:
        yield server


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def _answered_by_schema_and_apart(case: schemathesis.Case, live: HttpServer, demo: Demo) -> None:
    for tenant, other in ((demo.lumen, demo.harbor), (demo.harbor, demo.lumen)):
        response = case.call(base_url=live.base, headers={"Authorization": f"Bearer {tenant.key}"})
        case.validate_response(response, checks=CHECKS)
        sent = f"{case.path_parameters} {case.query} {case.body}"
        leaked = {mark for mark in other.marks if mark in response.text and mark not in sent}
        assert not leaked, f"{tenant.name} was answered {other.name}'s {sorted(leaked)[:3]}"


def test_every_operation_answers_by_its_schema_and_keeps_tenants_apart(live: HttpServer, demo: Demo) -> None:
    """Each operation of the document in turn (schemathesis's strategies under hypothesis: its
    pytest plugin does not run under this pytest)."""
    schema = schemathesis.openapi.from_url(live.base + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 35
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def fuzz(case: schemathesis.Case) -> None:
            _answered_by_schema_and_apart(case, live, demo)

        fuzz()


def test_the_demo_tenants_see_their_own_data(live: HttpServer, demo: Demo, db: Database) -> None:
    """The fuzzer's tenant check has something to find: each reads its own corpus. The sources
    each lists are exactly those of the scopes it reaches, read from the database at the same
    moment (the fuzzer, run before, may have added some: POST /v1/episodes makes a memory
    source), all of them its own and none the other's, the demo's among them."""
    with api_client(live, demo.lumen.key) as lumen:
        assert lumen.get("/v1/search", params={"q": "Which cluster does billing-api run on?"}).json()["hits"]
    with api_client(live, demo.harbor.key) as harbor:
        hits = harbor.get("/v1/search", params={"q": "tugboat roster"}).json()["hits"]
        assert hits and all("Lumen" not in hit["text"] for hit in hits)
    for tenant, other in ((demo.lumen, demo.harbor), (demo.harbor, demo.lumen)):
        with api_client(live, tenant.key) as client:
            scopes = {s["group_id"] for s in client.get("/v1/whoami").json()["scopes"]}
            listed = {
                s["source_id"] for s in client.get("/v1/sources", params={"limit": 1000}).json()["sources"]
            }
        own, theirs = _reach(db, tenant.organisation), _reach(db, other.organisation)
        assert tenant.organisation in scopes and scopes <= own and not scopes & theirs
        assert listed == _sources(db, scopes)
        assert listed <= own and not listed & theirs
        assert tenant.sources <= listed
    assert len(demo.lumen.sources) == 5 and demo.harbor.sources
