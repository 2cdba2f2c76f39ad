"""OIDC subjects provisioned just in time, against the real PostgreSQL: the
verifier (tokens from the test IdP's live JWKS) over the gateway's pool, and
the SQL functions it calls (sql/functions/220_identities.sql), which only the
gateway and operators may run."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from psycopg import errors
from tests.oidc_idp import AUDIENCE, TestIdp, running_idp

from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World
from vera_client.adapters.postgres.executor import AsyncExecutor
from vera_client.bootstrap import Providers, build_providers
from vera_client.client import AsyncVeraClient
from vera_client.config import EmbedderSettings, ObjectStoreSettings, PoolSettings, VeraSettings
from vera_client.domain.callers import Principal
from vera_client.domain.errors import PermissionDeniedError
from vera_mcp.adapters.oidc import OidcVerifier, oidc_verifier
from vera_mcp.domain.access import Scope, VerifiedCaller
from vera_mcp.domain.oidc import ClaimRule, OidcSettings

T = TypeVar("T")
PROVISION = "select vera.provision_identity(%s, %s, %s, %s, %s, %s::vera.member_role)"


@pytest.fixture(scope="module")
def idp() -> Iterator[TestIdp]:
    with running_idp() as server:
        server.add_key("rsa-1", "RS256")
        yield server


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Providers:
    root: Path = tmp_path_factory.mktemp("oidc")
    return build_providers(
        VeraSettings(
            embedder=EmbedderSettings(provider="deterministic", dim=64),
            objects=ObjectStoreSettings(root=root / "objects"),
        )
    )


def _settings(idp: TestIdp, world: World) -> OidcSettings:
    return OidcSettings(
        issuer=idp.issuer,
        audience=AUDIENCE,
        jwks_url=idp.jwks_url,
        scope_prefix="vera:",
        claim_mapping=(
            ClaimRule(claim="groups", value="acme-admins", group_id=world.a.organisation, role="admin"),
            ClaimRule(claim="groups", value="lumen-engineers", group_id=world.a.workspace, role="viewer"),
        ),
    )


def _with_gateway(world: World, body: Callable[[AsyncExecutor], Awaitable[T]], *, size: int = 4) -> T:
    """Run body with an executor on a pool of the gateway's login, as the MCP server holds one."""

    async def run() -> T:
        executor = await AsyncExecutor.connect(
            world.db.dsn("vera_gateway"), pool=PoolSettings(min_size=1, max_size=size)
        )
        try:
            return await body(executor)
        finally:
            await executor.close()

    return asyncio.run(run())


def _verify(world: World, idp: TestIdp, *tokens: str) -> list[VerifiedCaller | None]:
    async def body(executor: AsyncExecutor) -> list[VerifiedCaller | None]:
        verifier = oidc_verifier(_settings(idp, world), executor)
        try:
            return list(await asyncio.gather(*(verifier.verify(token) for token in tokens)))
        finally:
            await verifier.aclose()

    return _with_gateway(world, body, size=max(2, len(tokens)))


def _subject() -> str:
    return f"user-{uuid.uuid4().hex[:10]}"


def _identity_rows(world: World, idp: TestIdp, subject: str) -> dict[str, Any]:
    """As the superuser: what provisioning wrote for the subject."""
    with world.db.admin() as conn:
        identities = conn.execute(
            "select principal_id from vera.external_identities where issuer = %s and subject = %s",
            (idp.issuer, subject),
        ).fetchall()
        principals = conn.execute(
            "select principal_id, display_name, email, kind::text from vera.principals where display_name = %s",
            (subject.title(),),
        ).fetchall()
        memberships = conn.execute(
            "select m.group_id, m.role::text from vera.memberships m join vera.external_identities i using (principal_id)"
            " where i.issuer = %s and i.subject = %s order by m.group_id",
            (idp.issuer, subject),
        ).fetchall()
        audits = conn.execute(
            "select group_id, detail from vera.audit_log where action = 'identity.provision' and detail->>'subject' = %s",
            (subject,),
        ).fetchall()
    return {"identities": identities, "principals": principals, "memberships": memberships, "audits": audits}


def test_a_first_seen_subject_is_provisioned_once_with_its_mapped_membership(
    world: World, idp: TestIdp
) -> None:
    subject = _subject()
    [first] = _verify(world, idp, idp.token("rsa-1", subject))
    assert first is not None and isinstance(first.caller, Principal)
    assert first.scopes == {Scope.READ, Scope.FEEDBACK} and first.via == "oidc"
    rows = _identity_rows(world, idp, subject)
    assert rows["identities"] == [(first.caller.principal_id,)]
    [(principal, name, email, kind)] = rows["principals"]
    assert (principal, name, email, kind) == (
        first.caller.principal_id,
        subject.title(),
        f"{subject}@example.com",
        "user",
    )
    personal = [g for g, _ in rows["memberships"] if g.startswith("u:")]
    assert sorted(rows["memberships"]) == sorted([(world.a.workspace, "viewer"), (personal[0], "owner")])
    [(audit_group, detail)] = rows["audits"]
    assert audit_group == world.a.workspace
    assert detail == {"issuer": idp.issuer, "subject": subject, "role": "viewer", "gateway": "vera_gateway"}

    # later requests map to the same principal and write nothing
    [again, third] = _verify(
        world, idp, idp.token("rsa-1", subject), idp.token("rsa-1", subject, groups=None)
    )
    assert again is not None and third is not None
    assert again.caller == third.caller == first.caller
    assert _identity_rows(world, idp, subject) == rows


def test_the_first_matching_rule_wins(world: World, idp: TestIdp) -> None:
    subject = _subject()
    [verified] = _verify(world, idp, idp.token("rsa-1", subject, groups=["lumen-engineers", "acme-admins"]))
    assert verified is not None
    assert (world.a.organisation, "admin") in _identity_rows(world, idp, subject)["memberships"]


def test_a_known_subject_is_looked_up_in_a_read_only_transaction(world: World, idp: TestIdp) -> None:
    subject = _subject()
    [verified] = _verify(world, idp, idp.token("rsa-1", subject))
    assert verified is not None
    with world.db.connect("vera_gateway") as conn:
        conn.execute("begin transaction read only")
        found = conn.execute("select vera.principal_for_identity(%s, %s)", (idp.issuer, subject)).fetchone()
        assert found == (verified.caller.principal_id,)  # type: ignore[union-attr]
        unknown = conn.execute("select vera.principal_for_identity(%s, 'nobody')", (idp.issuer,)).fetchone()
        assert unknown == (None,)


def test_concurrent_first_requests_provision_exactly_once(world: World, idp: TestIdp) -> None:
    subject = _subject()
    verified = _verify(world, idp, *(idp.token("rsa-1", subject) for _ in range(8)))
    assert all(v is not None for v in verified)
    assert len({v.principal_id for v in verified if v is not None}) == 1
    rows = _identity_rows(world, idp, subject)
    assert len(rows["identities"]) == len(rows["principals"]) == len(rows["audits"]) == 1
    assert len(rows["memberships"]) == 2  # the mapped group and its personal scope


def test_two_first_requests_interleaved_step_by_step(world: World, idp: TestIdp) -> None:
    """The second waits on the identity's key until the first commits, then gets
    the first's principal; its own principal and personal scope are rolled back."""
    subject = _subject()
    args = (idp.issuer, subject, subject.title(), None, world.a.workspace, "viewer")
    with world.db.connect("vera_gateway") as first, world.db.connect("vera_gateway") as second:
        winner = first.execute(PROVISION, args).fetchone()
        result: dict[str, Any] = {}

        def provision_second() -> None:
            result["row"] = second.execute(PROVISION, args).fetchone()
            second.commit()

        racer = threading.Thread(target=provision_second)
        racer.start()
        deadline = time.monotonic() + 10
        with world.db.admin() as admin:  # the second is blocked on the first's row lock
            while not admin.execute(
                "select exists (select from pg_stat_activity where wait_event_type = 'Lock' and usename = 'vera_gateway')"
            ).fetchone()[0]:  # type: ignore[index]
                assert time.monotonic() < deadline, "the second provisioning never waited for the first"
                time.sleep(0.02)
        assert racer.is_alive()
        first.commit()
        racer.join(timeout=10)
        assert result["row"] == winner
    rows = _identity_rows(world, idp, subject)
    assert len(rows["identities"]) == len(rows["principals"]) == len(rows["audits"]) == 1
    with world.db.admin() as admin:
        personal_scopes = admin.execute(
            "select count(*) from vera.groups where name = %s", (f"personal: {subject.title()}",)
        ).fetchone()
    assert personal_scopes == (1,)


def test_a_subject_no_rule_matches_is_refused_and_not_provisioned(world: World, idp: TestIdp) -> None:
    subject = _subject()
    assert _verify(world, idp, idp.token("rsa-1", subject, groups=["contractors"])) == [None]
    rows = _identity_rows(world, idp, subject)
    assert rows["identities"] == rows["principals"] == rows["audits"] == []


def test_a_disabled_principal_is_refused(world: World, idp: TestIdp) -> None:
    subject = _subject()
    [verified] = _verify(world, idp, idp.token("rsa-1", subject))
    assert verified is not None
    with world.db.admin() as admin:
        admin.execute("update vera.principals set disabled_at = now() where principal_id = %s",
                      (verified.principal_id,))  # fmt: skip
    assert _verify(world, idp, idp.token("rsa-1", subject)) == [None]
    with world.db.connect("vera_gateway") as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(PROVISION, (idp.issuer, subject, "Again", None, world.a.workspace, "viewer"))
    assert raised.value.sqlstate == "VA006"
    assert len(_identity_rows(world, idp, subject)["identities"]) == 1


def test_an_invalid_token_writes_nothing(world: World, idp: TestIdp) -> None:
    subject = _subject()
    tokens = [idp.token("rsa-1", subject, aud="https://other.test"), idp.unsigned_token(subject),
              idp.hs256_with_public_key("rsa-1", subject), idp.token("rsa-1", subject, exp=int(time.time()) - 60)]  # fmt: skip
    assert _verify(world, idp, *tokens) == [None] * len(tokens)
    assert _identity_rows(world, idp, subject)["identities"] == []


# -- who may call the functions ---------------------------------------------------------------------

CALLS = {
    "principal_for_identity": ("select vera.principal_for_identity(%s, %s)", ("https://idp.test", "s")),
    "provision_identity": (PROVISION, ("https://idp.test", "s", "S", None, "o:0000000000000000", "viewer")),
}


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("role", [APP_LOGIN, "vera_worker"])
def test_only_the_gateway_and_operators_may_map_identities(world: World, role: str, call: str) -> None:
    statement, args = CALLS[call]
    with world.db.connect(role) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute(statement, args)  # type: ignore[arg-type]


@pytest.mark.parametrize("call", list(CALLS))
def test_an_application_authenticated_as_an_owner_still_may_not(world: World, call: str) -> None:
    statement, args = CALLS[call]
    with world.db.connect(APP_LOGIN) as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(statement, args)  # type: ignore[arg-type]


def test_privileges_on_the_functions_and_the_table(world: World) -> None:
    with world.db.admin() as conn:
        rows = conn.execute(
            """select r.rolname, f.name,
                      has_function_privilege(r.rolname, ('vera.' || f.name)::regprocedure, 'execute')
                 from unnest(array['vera_app', 'vera_worker', 'vera_gateway', 'vera_operator', %s]) r(rolname),
                      unnest(array['principal_for_identity(text,text)',
                                   'provision_identity(text,text,text,text,text,vera.member_role)']) f(name)""",
            (APP_LOGIN,),
        ).fetchall()
        granted = {(role, name) for role, name, may in rows if may}
        assert {role for role, _ in granted} == {"vera_gateway", "vera_operator"}
        assert len(granted) == 4
        table_access = conn.execute(
            """select r from unnest(array['vera_app', 'vera_worker', 'vera_gateway', %s]) r
                where has_table_privilege(r, 'vera.external_identities', 'select, insert, update, delete')""",
            (APP_LOGIN,),
        ).fetchall()
        assert table_access == []
    with world.db.connect("vera_gateway") as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select * from vera.external_identities")


@pytest.mark.parametrize(
    ("args", "sqlstate"),
    [
        ((None, "s", "S", None, "{org}", "viewer"), "22004"),
        (("https://idp.test", None, "S", None, "{org}", "viewer"), "22004"),
        (("", "s", "S", None, "{org}", "viewer"), "22023"),
        (("https://idp.test", "", "S", None, "{org}", "viewer"), "22023"),
        (("https://idp.test", "s" * 256, "S", None, "{org}", "viewer"), "22001"),
        (("https://idp.test/" + "i" * 2048, "s", "S", None, "{org}", "viewer"), "22001"),
        (("https://idp.test", "s\n", "S", None, "{org}", "viewer"), "22023"),
        (("https://idp.test", "s", "S", None, None, "viewer"), "22004"),
        (("https://idp.test", "s", "S", None, "{org}", None), "22004"),
        (("https://idp.test", "s", "S", None, "{org}", "owner"), "22023"),
        (("https://idp.test", "s", "S", None, "o:ffffffffffffffff", "viewer"), "VN001"),
        (("https://idp.test", "s", "S", None, "not a group", "viewer"), "VN001"),
        (("https://idp.test", "s", "S", None, "{personal}", "viewer"), "22023"),
        (("https://idp.test", "s", "", None, "{org}", "viewer"), "22023"),
        (("https://idp.test", "s", "S" * 201, None, "{org}", "viewer"), "22001"),
        (("https://idp.test", "s", "S", "not an address", "{org}", "viewer"), "22023"),
        (("https://idp.test", "s", "S", None, "{org}", "superuser"), "22P02"),
    ],
    ids=[
        "null issuer",
        "null subject",
        "empty issuer",
        "empty subject",
        "long subject",
        "long issuer",
        "subject with a newline",
        "null group",
        "null role",
        "owner",
        "unknown group",
        "malformed group",
        "personal scope",
        "empty name",
        "long name",
        "bad email",
        "unknown role",
    ],
)
def test_provisioning_checks_its_input(world: World, args: tuple[Any, ...], sqlstate: str) -> None:
    groups = {"{org}": world.a.organisation, "{personal}": world.a.owner_personal}
    bound = tuple(groups.get(a, a) if isinstance(a, str) else a for a in args)
    with world.db.connect("vera_gateway") as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(PROVISION, bound)
    assert raised.value.sqlstate == sqlstate


def test_provisioning_an_identity_again_returns_its_principal_unchanged(world: World) -> None:
    with world.db.connect("vera_gateway") as conn:
        first = conn.execute(
            PROVISION, ("https://idp.test", "twice", "Twice", None, world.a.workspace, "viewer")
        )
        principal = first.fetchone()
        again = conn.execute(
            PROVISION, ("https://idp.test", "twice", "Other", None, world.b.organisation, "admin")
        )
        assert again.fetchone() == principal
        conn.commit()
    with world.db.admin() as admin:
        held = admin.execute(
            "select group_id, role::text from vera.memberships where principal_id = %s and group_id not like 'u:%%'",
            (principal[0],),  # type: ignore[index]
        ).fetchall()
    assert held == [(world.a.workspace, "viewer")]  # not moved to the other tenant


def test_an_identity_is_per_issuer(world: World) -> None:
    with world.db.connect("vera_gateway") as conn:
        one = conn.execute(
            PROVISION, ("https://one.test", "same-sub", "One", None, world.a.workspace, "viewer")
        )
        two = conn.execute(
            PROVISION, ("https://two.test", "same-sub", "Two", None, world.b.workspace, "viewer")
        )
        assert one.fetchone() != two.fetchone()
        conn.rollback()


# -- what a provisioned principal sees --------------------------------------------------------------


def test_a_provisioned_principal_reads_only_its_mapped_group(
    world: World, idp: TestIdp, providers: Providers
) -> None:
    subject = _subject()

    async def body(executor: AsyncExecutor) -> None:
        verifier = oidc_verifier(_settings(idp, world), executor)
        assert isinstance(verifier, OidcVerifier)
        verified = await verifier.verify(idp.token("rsa-1", subject))
        assert verified is not None and isinstance(verified.caller, Principal)
        server = AsyncVeraClient(executor, None, providers)
        agent = server.as_caller(verified.caller)
        reached = {m.group_id for m in await agent.whoami()}
        assert world.a.workspace in reached
        assert not reached & {
            world.a.organisation,
            world.b.organisation,
            world.b.workspace,
            world.a.owner_personal,
        }
        hits = await agent.search("payments-api runs on cluster blue", k=20)
        assert hits and {hit.group_id for hit in hits} == {world.a.workspace}
        for foreign in (world.a.organisation, world.b.organisation, world.b.workspace):
            with pytest.raises(PermissionDeniedError):
                await agent.search("payments-api", groups=[foreign])
        # the same text lives in the other tenant: an owner there finds it, our subject never does
        other = await server.as_caller(Principal(world.b.owner)).search(
            "payments-api runs on cluster blue", k=20
        )
        assert {hit.group_id for hit in other} >= {world.b.organisation, world.b.workspace}
        assert not {hit.item_id for hit in hits} & {hit.item_id for hit in other}
        await verifier.aclose()

    _with_gateway(world, body)
