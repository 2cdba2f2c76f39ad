"""Offboarding a person (sql/functions/065_offboarding.sql): an admin of every group of a
principal disables it, and from the next transaction none of its API keys and none of its OIDC
logins works (VA006); the last owner of a group who can sign in is kept (VP001); an admin lists
and revokes a member's keys but never issues one; another tenant's principals read as unknown."""

from __future__ import annotations

from uuid import UUID, uuid4

import psycopg
import pytest

from pg_tests.support.seed import World, caller

ISSUER = "https://idp.offboarding.test"
PROVISION = "select vera.provision_identity(%s, %s, %s, null, %s, %s::vera.member_role)"


def _person(world: World, group: str, name: str, role: str = "member") -> tuple[UUID, str, str]:
    """A person provisioned from an OIDC login into group, with an API key of its own: its id,
    its subject and its key."""
    subject = f"{name}-{uuid4()}"
    with world.db.connect("vera_gateway") as gateway:
        principal = gateway.execute(PROVISION, (ISSUER, subject, name, group, role)).fetchone()[0]  # type: ignore[index]
        gateway.commit()
    with world.db.admin() as admin:
        key = admin.execute(
            "select api_key from vera.issue_api_key(%s, 'laptop', null)", (principal,)
        ).fetchone()[0]  # type: ignore[index]
    return principal, subject, key


def _refused(world: World, key: str, statement: str, params: tuple[object, ...]) -> str:
    with caller(world.db, key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(statement, params)
    return str(raised.value.sqlstate)


def _gateway_sqlstate(world: World, statement: str, params: tuple[object, ...]) -> str | None:
    with world.db.connect("vera_gateway") as gateway:
        try:
            gateway.execute(statement, params)
        except psycopg.Error as error:
            return error.sqlstate
        finally:
            gateway.rollback()
    return None


def test_disabling_stops_every_key_and_oidc_login_in_the_next_transaction(world: World) -> None:
    person, subject, key = _person(world, world.a.organisation, "Dana")
    with caller(world.db, key) as conn:  # works before
        assert conn.execute("select vera.current_principal()").fetchone() == (person,)
    with caller(world.db, world.a.owner_key) as conn:
        assert conn.execute(
            "select vera.disable_principal(%s, 'left the company')", (person,)
        ).fetchone() == (True,)
        assert conn.execute("select vera.disable_principal(%s)", (person,)).fetchone() == (False,)
        conn.commit()
    with world.db.connect() as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.authenticate(%s)", (key,))
    assert raised.value.sqlstate == "VA006"
    identity = "select vera.principal_for_identity(%s, %s)"
    assert _gateway_sqlstate(world, identity, (ISSUER, subject)) == "VA006"
    assert _gateway_sqlstate(world, "select vera.authenticate_principal(%s)", (person,)) == "VA006"
    with world.db.admin() as admin:
        audited = admin.execute(
            "select group_id, principal_id, detail ->> 'reason' from vera.audit_log"
            " where action = 'principal.disable' and target_id = %s",
            (str(person),),
        ).fetchall()
    assert audited == [(world.a.organisation, world.a.owner, "left the company")]
    # and back: its key works again
    with caller(world.db, world.a.owner_key) as conn:
        assert conn.execute("select vera.enable_principal(%s)", (person,)).fetchone() == (True,)
        conn.commit()
    with caller(world.db, key) as conn:
        assert conn.execute("select vera.current_principal()").fetchone() == (person,)


def test_a_non_admin_or_an_admin_of_only_one_group_is_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        project = conn.execute(
            "select vera.create_group(%s, 'project', 'offboarding-one-group')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
    person, _, person_key = _person(world, world.a.organisation, "Erin")
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.set_member_role(%s, %s, 'member')", (project, person))
        conn.commit()
    project_admin, _, admin_key = _person(world, project, "Pat", "admin")
    disable = "select vera.disable_principal(%s)"
    assert _refused(world, admin_key, disable, (person,)) == "42501"  # admin of the project only
    assert _refused(world, person_key, disable, (project_admin,)) == "42501"  # a plain member
    assert _refused(world, world.a.viewer_key, disable, (person,)) == "42501"
    assert _refused(world, admin_key, "select vera.enable_principal(%s)", (person,)) == "42501"


def test_the_last_owner_who_can_sign_in_is_kept(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        project = conn.execute(
            "select vera.create_group(%s, 'project', 'offboarding-owner')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
    owner, _, _ = _person(world, project, "Olga", "admin")
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.set_member_role(%s, %s, 'owner')", (project, owner))
        conn.commit()
    assert _refused(world, world.a.owner_key, "select vera.disable_principal(%s)", (owner,)) == "VP001"
    with caller(world.db, world.a.owner_key) as conn:  # a second owner: now she may go
        conn.execute("select vera.set_member_role(%s, %s, 'owner')", (project, world.a.owner))
        assert conn.execute("select vera.disable_principal(%s)", (owner,)).fetchone() == (True,)
    # and nobody disables themselves
    assert (
        _refused(world, world.a.owner_key, "select vera.disable_principal(%s)", (world.a.owner,)) == "22023"
    )


def test_an_admin_lists_and_revokes_a_members_key_but_cannot_issue_one(world: World) -> None:
    person, _, key = _person(world, world.a.organisation, "Kim")
    prefix = key.split("_")[1]
    with caller(world.db, world.a.owner_key) as conn:
        listed = conn.execute(
            "select prefix, revoked_at from vera.list_member_keys(%s, %s)", (world.a.organisation, person)
        ).fetchall()
        assert listed == [(prefix, None)]
        assert conn.execute(
            "select vera.revoke_member_key(%s, %s)", (world.a.organisation, prefix)
        ).fetchone() == (True,)
        conn.commit()
    with world.db.connect() as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.authenticate(%s)", (key,))
    assert raised.value.sqlstate == "VA003"
    issue = "select * from vera.create_api_key('for them', null, %s)"
    assert _refused(world, world.a.owner_key, issue, (person,)) == "42501"
    with world.db.admin() as admin:
        actions = admin.execute(
            "select action from vera.audit_log where group_id = %s and action like 'member_key.%%'"
            " and (target_id = %s or target_id = %s) order by audit_id",
            (world.a.organisation, str(person), prefix),
        ).fetchall()
    assert actions == [("member_key.list",), ("member_key.revoke",)]


def test_another_tenants_principals_and_keys_read_as_unknown(world: World) -> None:
    person, _, key = _person(world, world.a.organisation, "Lee")
    prefix = key.split("_")[1]
    b_org = world.b.organisation
    for statement, params in [
        ("select vera.disable_principal(%s)", (person,)),
        ("select vera.enable_principal(%s)", (person,)),
        ("select * from vera.list_member_keys(%s, %s)", (b_org, person)),
        ("select vera.revoke_member_key(%s, %s)", (b_org, prefix)),
    ]:
        assert _refused(world, world.b.owner_key, statement, params) == "VN001", statement
    with caller(world.db, key) as conn:  # untouched
        assert conn.execute("select vera.current_principal()").fetchone() == (person,)
