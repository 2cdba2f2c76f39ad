"""Provisioning functions (sql/functions/050_tenants.sql): roles are checked
in the target group, other tenants' groups and principals are out of reach,
and every change is audited."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from uuid import UUID

import psycopg
import pytest
from psycopg import errors

from pg_tests.support.seed import World, caller


def _audit_actions(world: World, group: str) -> list[str]:
    with world.db.admin() as conn:
        return [
            row[0] for row in conn.execute("select action from vera.audit_log where group_id = %s", (group,))
        ]


def test_owner_creates_workspace_and_project_with_audit(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        workspace = conn.execute(
            "select vera.create_group(%s, 'workspace', 'Platform')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        project = conn.execute(
            "select vera.create_group(%s, 'project', 'Payments')", (workspace,)
        ).fetchone()[0]  # type: ignore[index]
        assert workspace.startswith("w:") and project.startswith("p:")
        # usable at once: creating a group refreshes the caller's context
        groups = {row[0]: row[1] for row in conn.execute("select group_id, role from vera.whoami()")}
        assert groups[project] == "owner"  # inherited from the organisation
        audit = conn.execute(
            "select action, target_id from vera.audit_log where group_id = %s and action = 'group.create'",
            (world.a.organisation,),
        ).fetchall()
        assert (("group.create", workspace)) in audit


@pytest.mark.parametrize("key_of", ["a_viewer", "b_owner"])
def test_create_group_needs_admin_in_the_parent(world: World, key_of: str) -> None:
    key = world.a.viewer_key if key_of == "a_viewer" else world.b.owner_key
    with caller(world.db, key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select vera.create_group(%s, 'workspace', 'Intrusion')", (world.a.organisation,))


@pytest.mark.parametrize(
    ("kind", "parent"),
    [("organisation", "organisation"), ("personal", "organisation"), ("workspace", "workspace")],
)
def test_create_group_refuses_impossible_nesting(world: World, kind: str, parent: str) -> None:
    parent_id = world.a.organisation if parent == "organisation" else world.a.workspace
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(errors.InvalidParameterValue):
        conn.execute("select vera.create_group(%s, %s, 'x')", (parent_id, kind))


def test_create_group_refuses_blank_name(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(errors.InvalidParameterValue):
        conn.execute("select vera.create_group(%s, 'workspace', '   ')", (world.a.organisation,))


def test_unauthenticated_calls_are_refused(world: World) -> None:
    for statement in (
        "select vera.create_group('o:0000000000000000', 'workspace', 'x')",
        "select * from vera.whoami()",
        "select * from vera.list_api_keys()",
        "select * from vera.create_api_key('x')",
    ):
        with caller(world.db, None) as conn, pytest.raises(psycopg.Error) as raised:
            conn.execute(statement)  # type: ignore[arg-type]
        assert raised.value.sqlstate in {"VA005", "42501"}, statement


def test_whoami_lists_only_the_callers_groups(world: World) -> None:
    with caller(world.db, world.b.viewer_key) as conn:
        rows = conn.execute("select principal_id, group_id, role from vera.whoami()").fetchall()
    assert {row[0] for row in rows} == {world.b.viewer}
    groups = {row[1]: row[2] for row in rows}
    assert groups[world.b.organisation] == "viewer"
    assert groups[world.b.workspace] == "viewer"
    assert not set(groups) & set(world.a.groups)


def test_role_in_is_null_outside_the_callers_groups(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        assert conn.execute("select vera.role_in(%s)", (world.a.workspace,)).fetchone() == ("owner",)
        assert conn.execute("select vera.role_in(%s)", (world.b.organisation,)).fetchone() == (None,)


def test_require_role_raises_for_other_tenants(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.require_role(%s, 'owner')", (world.a.organisation,))
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("select vera.require_role(%s, 'viewer')", (world.b.organisation,))


def test_create_principal_as_admin(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        new = conn.execute(
            "select vera.create_principal(%s, 'service', 'crawler', 'member')", (world.a.workspace,)
        ).fetchone()[0]  # type: ignore[index]
        members = {row[0] for row in conn.execute("select principal_id from vera.memberships")}
        assert new in members


def test_create_principal_cannot_escalate_above_own_role(world: World) -> None:
    with world.db.admin() as admin:
        admin_id = admin.execute("select vera.insert_principal('user', 'Ada Admin', null)").fetchone()[0]  # type: ignore[index]
        admin.execute(
            "insert into vera.memberships (group_id, principal_id, role) values (%s, %s, 'admin')",
            (world.a.workspace, admin_id),
        )
        key = admin.execute("select api_key from vera.issue_api_key(%s, 'k', null)", (admin_id,)).fetchone()[
            0
        ]  # type: ignore[index]
    with caller(world.db, key) as conn:
        conn.execute("select vera.create_principal(%s, 'user', 'Bob', 'admin')", (world.a.workspace,))
        with pytest.raises(errors.InsufficientPrivilege, match="cannot grant owner"):
            conn.execute("select vera.create_principal(%s, 'user', 'Eve', 'owner')", (world.a.workspace,))


def test_create_principal_in_another_tenant_is_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select vera.create_principal(%s, 'user', 'Spy')", (world.b.workspace,))


def test_set_member_role_grants_and_audits(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.set_member_role(%s, %s, 'member')", (world.a.workspace, world.a.viewer))
        role = conn.execute(
            "select role from vera.memberships where group_id = %s and principal_id = %s",
            (world.a.workspace, world.a.viewer),
        ).fetchone()
        assert role == ("member",)
        actions = [row[0] for row in conn.execute("select action from vera.audit_log")]
        assert "membership.set" in actions


def test_set_member_role_cannot_pull_in_another_tenants_principal(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.set_member_role(%s, %s, 'viewer')", (world.a.workspace, world.b.owner))
    assert raised.value.sqlstate == "VN001"


def test_set_member_role_in_another_tenant_is_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select vera.set_member_role(%s, %s, 'owner')", (world.b.workspace, world.a.owner))


def test_remove_member(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        assert conn.execute(
            "select vera.remove_member(%s, %s)", (world.a.workspace, world.a.service)
        ).fetchone() == (True,)
        assert conn.execute(
            "select vera.remove_member(%s, %s)", (world.a.workspace, world.a.service)
        ).fetchone() == (False,)


def test_remove_member_keeps_the_last_owner(world: World) -> None:
    with (
        caller(world.db, world.a.owner_key) as conn,
        pytest.raises(errors.InsufficientPrivilege, match="last owner"),
    ):
        conn.execute("select vera.remove_member(%s, %s)", (world.a.organisation, world.a.owner))


def test_remove_member_in_another_tenant_is_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select vera.remove_member(%s, %s)", (world.b.workspace, world.b.service))


def test_create_tenant_as_operator_is_audited(world: World) -> None:
    with world.db.admin() as conn:
        org, _owner, key = conn.execute(
            "select * from vera.create_tenant('Charlie', 'Carol', 'carol@example.org')"
        ).fetchone()  # type: ignore[misc]
        assert org.startswith("o:") and key.startswith("vera_")
    assert _audit_actions(world, org) == ["tenant.create"]
    with caller(world.db, key) as conn:
        assert {row[0] for row in conn.execute("select group_id from vera.whoami()")} >= {org}


@pytest.mark.parametrize(("organisation", "owner"), [("", "x"), ("x", "  "), (None, "x")])
def test_create_tenant_refuses_blank_names(world: World, organisation: str | None, owner: str) -> None:
    with world.db.admin() as conn, pytest.raises(errors.InvalidParameterValue):
        conn.execute("select * from vera.create_tenant(%s, %s)", (organisation, owner))


# -- escalation inside a tenant (issue 11) -------------------------------------------


@dataclass
class _Tenant:
    organisation: str
    project: str
    owner: UUID
    owner_key: str
    project_admin: UUID
    project_admin_key: str
    org_bot: UUID  # a service account that owns the organisation


def _tenant_with_a_project_admin(world: World) -> _Tenant:
    """A fresh organisation (so the module's shared world keeps its owners):
    its owner, a project, an admin of that project only, and an owning bot."""
    with world.db.admin() as admin:
        org, owner, owner_key = admin.execute(
            "select * from vera.create_tenant('Escalation ' || gen_random_uuid(), 'Olga Owner')"
        ).fetchone()  # type: ignore[misc]
    with caller(world.db, owner_key) as conn:
        project = conn.execute("select vera.create_group(%s, 'project', 'payments')", (org,)).fetchone()[0]  # type: ignore[index]
        project_admin = conn.execute(
            "select vera.create_principal(%s, 'user', 'Pat Project-Admin', 'admin')", (project,)
        ).fetchone()[0]  # type: ignore[index]
        org_bot = conn.execute(
            "select vera.create_principal(%s, 'service', 'org bot', 'owner')", (org,)
        ).fetchone()[0]  # type: ignore[index]
        # the bot also works in the project, so the project admin can see it
        conn.execute("select vera.set_member_role(%s, %s, 'member')", (project, org_bot))
        conn.commit()
    with world.db.admin() as admin:
        project_admin_key = admin.execute(
            "select api_key from vera.issue_api_key(%s, 'k', null)", (project_admin,)
        ).fetchone()[0]  # type: ignore[index]
    return _Tenant(org, project, owner, owner_key, project_admin, project_admin_key, org_bot)


def _direct_role(world: World, group: str, principal: UUID) -> str | None:
    with world.db.admin() as admin:
        row = admin.execute(
            "select role::text from vera.memberships where group_id = %s and principal_id = %s",
            (group, principal),
        ).fetchone()
    return None if row is None else str(row[0])


def test_admin_cannot_demote_the_only_owner(world: World) -> None:
    t = _tenant_with_a_project_admin(world)
    with world.db.admin() as admin:
        admin.execute(
            "insert into vera.memberships (group_id, principal_id, role) values (%s, %s, 'owner')",
            (t.project, t.owner),
        )
    with caller(world.db, t.project_admin_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select vera.set_member_role(%s, %s, 'viewer')", (t.project, t.owner))
    assert _direct_role(world, t.project, t.owner) == "owner"


def test_the_last_owner_cannot_demote_itself(world: World) -> None:
    t = _tenant_with_a_project_admin(world)
    with caller(world.db, t.owner_key) as conn:
        conn.execute("select vera.set_member_role(%s, %s, 'member')", (t.organisation, t.org_bot))
        with pytest.raises(errors.InsufficientPrivilege, match="last owner"):
            conn.execute("select vera.set_member_role(%s, %s, 'admin')", (t.organisation, t.owner))
    assert _direct_role(world, t.organisation, t.owner) == "owner"


def test_an_owner_demotes_another_owner(world: World) -> None:
    t = _tenant_with_a_project_admin(world)
    with caller(world.db, t.owner_key) as conn:
        conn.execute("select vera.set_member_role(%s, %s, 'member')", (t.organisation, t.org_bot))
        conn.commit()
    assert _direct_role(world, t.organisation, t.org_bot) == "member"


def test_two_owners_demoting_each_other_at_once_leave_one_owner(world: World) -> None:
    t = _tenant_with_a_project_admin(world)
    with world.db.admin() as admin:
        bot_key = admin.execute(
            "select api_key from vera.issue_api_key(%s, 'k', null)", (t.org_bot,)
        ).fetchone()[0]  # type: ignore[index]
    first = world.db.connect()
    second = world.db.connect()
    try:
        first.execute("select vera.authenticate(%s)", (t.owner_key,))
        second.execute("select vera.authenticate(%s)", (bot_key,))
        first.execute("select vera.set_member_role(%s, %s, 'admin')", (t.organisation, t.org_bot))
        outcome: list[BaseException | None] = []

        def demote_the_other() -> None:
            try:
                second.execute("select vera.remove_member(%s, %s)", (t.organisation, t.owner))
                second.commit()
                outcome.append(None)
            except psycopg.Error as error:
                second.rollback()
                outcome.append(error)

        racer = threading.Thread(target=demote_the_other)
        racer.start()
        # until the other removal either finished (it did not wait) or waits for our locks
        second_pid = second.info.backend_pid
        deadline = time.monotonic() + 10
        with world.db.admin() as admin:
            while racer.is_alive() and time.monotonic() < deadline:
                waiting = admin.execute(
                    "select wait_event_type = 'Lock' from pg_stat_activity where pid = %s", (second_pid,)
                ).fetchone()
                if waiting == (True,):
                    break
                time.sleep(0.05)
        first.commit()
        racer.join(10)
        assert not racer.is_alive()
    finally:
        first.close()
        second.close()
    assert isinstance(outcome[0], psycopg.Error)
    owners = [p for p in (t.owner, t.org_bot) if _direct_role(world, t.organisation, p) == "owner"]
    assert owners == [t.owner]


def test_project_admin_cannot_mint_keys_for_an_owner_of_the_organisation(world: World) -> None:
    """As found: the key let a project admin act as organisation owner."""
    t = _tenant_with_a_project_admin(world)
    with caller(world.db, t.project_admin_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select * from vera.create_api_key('mine now', null, %s)", (t.org_bot,))


def test_project_admin_cannot_change_roles_of_an_owner_of_the_organisation(world: World) -> None:
    t = _tenant_with_a_project_admin(world)
    with caller(world.db, t.project_admin_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select vera.set_member_role(%s, %s, 'admin')", (t.project, t.org_bot))
    assert _direct_role(world, t.project, t.org_bot) == "member"


def test_project_admin_still_manages_its_own_service_accounts(world: World) -> None:
    t = _tenant_with_a_project_admin(world)
    with caller(world.db, t.project_admin_key) as conn:
        bot = conn.execute(
            "select vera.create_principal(%s, 'service', 'project bot', 'member')", (t.project,)
        ).fetchone()[0]  # type: ignore[index]
        _, prefix, key = conn.execute("select * from vera.create_api_key('bot', null, %s)", (bot,)).fetchone()  # type: ignore[misc]
        conn.execute("select vera.set_member_role(%s, %s, 'admin')", (t.project, bot))
        conn.commit()
    with caller(world.db, key) as conn:
        assert conn.execute("select vera.role_in(%s)::text", (t.project,)).fetchone() == ("admin",)
        assert conn.execute("select vera.role_in(%s)", (t.organisation,)).fetchone() == (None,)
    with caller(world.db, t.project_admin_key) as conn:
        assert conn.execute("select vera.revoke_api_key(%s)", (prefix,)).fetchone() == (True,)


def test_organisation_owner_still_manages_the_bot_it_made(world: World) -> None:
    t = _tenant_with_a_project_admin(world)
    with caller(world.db, t.owner_key) as conn:
        conn.execute("select * from vera.create_api_key('bot', null, %s)", (t.org_bot,))
        conn.execute("select vera.set_member_role(%s, %s, 'admin')", (t.project, t.project_admin))


def test_organisation_admin_cannot_mint_or_revoke_keys_of_an_owning_bot(world: World) -> None:
    """Administering every group is not enough: the caller must hold the bot's role there too."""
    t = _tenant_with_a_project_admin(world)
    with caller(world.db, t.owner_key) as conn:
        org_admin = conn.execute(
            "select vera.create_principal(%s, 'user', 'Ada Org-Admin', 'admin')", (t.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        _, bot_prefix, _ = conn.execute(
            "select * from vera.create_api_key('bot', null, %s)", (t.org_bot,)
        ).fetchone()  # type: ignore[misc]
        conn.commit()
    with world.db.admin() as admin:
        org_admin_key = admin.execute(
            "select api_key from vera.issue_api_key(%s, 'k', null)", (org_admin,)
        ).fetchone()[0]  # type: ignore[index]
    with caller(world.db, org_admin_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select * from vera.create_api_key('mine now', null, %s)", (t.org_bot,))
    for key in (org_admin_key, t.project_admin_key):
        with caller(world.db, key) as conn, pytest.raises(psycopg.Error) as raised:
            conn.execute("select vera.revoke_api_key(%s)", (bot_prefix,))
        assert raised.value.sqlstate == "VN001"
    with caller(world.db, org_admin_key) as conn:  # a bot below its role stays manageable
        bot = conn.execute(
            "select vera.create_principal(%s, 'service', 'org helper', 'admin')", (t.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        conn.execute("select * from vera.create_api_key('helper', null, %s)", (bot,))


def test_roles_in_other_organisations_do_not_bind_this_organisations_owner(world: World) -> None:
    """Identity spans tenants: what a member holds elsewhere neither blocks nor
    widens what an organisation's owner may do with its role here."""
    t = _tenant_with_a_project_admin(world)
    with world.db.admin() as admin:
        admin.execute(
            "insert into vera.memberships (group_id, principal_id, role) values (%s, %s, 'owner')",
            (world.b.workspace, t.project_admin),
        )
    try:
        with caller(world.db, t.owner_key) as conn:
            conn.execute("select vera.set_member_role(%s, %s, 'member')", (t.project, t.project_admin))
            conn.commit()
        assert _direct_role(world, t.project, t.project_admin) == "member"
    finally:
        with world.db.admin() as admin:
            admin.execute(
                "delete from vera.memberships where group_id = %s and principal_id = %s",
                (world.b.workspace, t.project_admin),
            )
