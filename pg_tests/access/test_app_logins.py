"""One login role per SQL application: vera_app is a group nobody logs in as,
and each application's login (provisioning.create_app_login) is a member of it
with limits of its own. Two applications, authenticated as principals of two
tenants, cannot read each other's statements in pg_stat_activity, signal each
other's backends, nor become each other or a trusted server role."""

from __future__ import annotations

import base64
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from click.testing import CliRunner, Result
from psycopg import conninfo, errors

from pg_tests.support.databases import Database
from pg_tests.support.seed import World
from vera_cli.main import main
from vera_client.adapters.postgres import logins, provisioning
from vera_client.domain.deployment import LoginLimits
from vera_client.domain.errors import AppLoginExistsError, AppLoginNotFoundError, InvalidAppLoginError

# roles belong to the cluster: names of this module's own, unlikely to meet another session's
SUFFIX = uuid.uuid4().hex[:8]
TIGHT = LoginLimits(connection_limit=2, statement_timeout="300ms", idle_in_transaction_timeout="500ms")


@dataclass(frozen=True)
class Logins:
    a: str
    b: str
    tight: str


@pytest.fixture(scope="module")
def app_logins(world: World) -> Iterator[Logins]:
    admin = world.db.admin_dsn
    made = Logins(
        a=provisioning.create_app_login(admin, f"t{SUFFIX}_a"),
        b=provisioning.create_app_login(admin, f"t{SUFFIX}_b"),
        tight=provisioning.create_app_login(admin, f"t{SUFFIX}_tight", TIGHT),
    )
    yield made
    for role in (made.a, made.b, made.tight):
        provisioning.drop_app_login(admin, role)


def _activity(conn: psycopg.Connection, key: str, pid: int) -> tuple[str | None, str | None]:
    """(query, state) of backend `pid` as `conn` sees it, in a transaction authenticated with `key`."""
    conn.execute("select vera.authenticate(%s)", (key,))
    row = conn.execute("select query, state from pg_stat_activity where pid = %s", (pid,)).fetchone()
    conn.commit()  # pg_stat_activity is read once per transaction
    assert row is not None
    return row


def test_vera_app_itself_cannot_log_in(world: World) -> None:
    with pytest.raises(psycopg.OperationalError, match='role "vera_app" is not permitted to log in'):
        psycopg.connect(world.db.dsn("vera_app"))


def test_an_application_does_not_see_another_tenants_statement(world: World, app_logins: Logins) -> None:
    key = world.b.owner_key
    inlined = f"select vera.authenticate('{key}'), pg_sleep(3)"  # what an application must never do
    with world.db.connect(app_logins.b) as b_conn, world.db.connect(app_logins.a) as a_conn:
        b_pid = b_conn.info.backend_pid
        running = threading.Thread(target=b_conn.execute, args=(inlined,))
        running.start()
        try:
            with world.db.admin() as admin:
                deadline = time.monotonic() + 10
                while admin.execute(
                    "select query from pg_stat_activity where pid = %s and state = 'active'", (b_pid,)
                ).fetchone() != (inlined,):
                    assert time.monotonic() < deadline, "B's statement never ran"
                    time.sleep(0.02)
            query, state = _activity(a_conn, world.a.owner_key, b_pid)
            assert query == "<insufficient privilege>" and state is None
            seen = a_conn.execute(
                "select string_agg(coalesce(query, ''), ' ') from pg_stat_activity"
            ).fetchone()
            assert seen is not None and key not in (seen[0] or "")
            own, _ = _activity(a_conn, world.a.owner_key, a_conn.info.backend_pid)
            assert own is not None and "pg_stat_activity" in own  # A's own statements stay visible to A
        finally:
            running.join()


@pytest.mark.parametrize("signal", ["pg_cancel_backend(%s)", "pg_terminate_backend(%s)"])
def test_an_application_cannot_signal_another_ones_backend(
    world: World, app_logins: Logins, signal: str
) -> None:
    with world.db.connect(app_logins.b) as b_conn, world.db.connect(app_logins.a) as a_conn:
        a_conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        with pytest.raises(errors.InsufficientPrivilege):
            a_conn.execute(f"select {signal}", (b_conn.info.backend_pid,))
        assert b_conn.execute("select 1").fetchone() == (1,)


@pytest.mark.parametrize(
    "target", ["b", "vera_app", "vera_worker", "vera_gateway", "vera_owner", "vera_operator", "postgres"]
)
def test_an_application_cannot_become_another_role(world: World, app_logins: Logins, target: str) -> None:
    role = app_logins.b if target == "b" else target
    with world.db.connect(app_logins.a) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute(psycopg.sql.SQL("set role {}").format(psycopg.sql.Identifier(role)))


def test_an_application_login_works_through_vera_app(world: World, app_logins: Logins) -> None:
    with world.db.connect(app_logins.a) as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        groups = conn.execute("select group_id from vera.whoami()").fetchall()
        assert (world.a.organisation,) in groups and (world.b.organisation,) not in groups


def test_the_limits_are_in_effect_in_a_new_session(world: World, app_logins: Logins) -> None:
    with world.db.connect(app_logins.a) as conn:
        assert conn.execute("show statement_timeout").fetchone() == ("30s",)
        assert conn.execute("show idle_in_transaction_session_timeout").fetchone() == ("1min",)
    with world.db.connect(app_logins.tight) as conn:
        assert conn.execute("show statement_timeout").fetchone() == ("300ms",)
        with pytest.raises(errors.QueryCanceled):
            conn.execute("select pg_sleep(2)")


def test_an_idle_transaction_is_ended(world: World, app_logins: Logins) -> None:
    with world.db.connect(app_logins.tight) as conn:
        conn.execute("select 1")  # a transaction is open, then left idle
        time.sleep(1.5)
        with pytest.raises(errors.IdleInTransactionSessionTimeout):
            conn.execute("select 1")


def _sessions_ended(world: World, role: str) -> None:
    """Wait until the role's earlier sessions are gone: a backend leaves a moment after its
    client closed, and counts against the role's connection limit until then."""
    deadline = time.monotonic() + 10
    with world.db.admin() as admin:
        while admin.execute(
            "select count(*) from pg_stat_activity where usename = %s", (role,)
        ).fetchone() != (0,):
            assert time.monotonic() < deadline, f"{role}'s earlier sessions did not end"
            time.sleep(0.02)


def test_the_connection_limit_refuses_one_more(world: World, app_logins: Logins) -> None:
    _sessions_ended(world, app_logins.tight)
    with (
        world.db.connect(app_logins.tight),
        world.db.connect(app_logins.tight),
        pytest.raises(psycopg.OperationalError, match="too many connections for role"),
    ):
        world.db.connect(app_logins.tight)


def test_listed_with_limits_and_sessions(world: World, app_logins: Logins) -> None:
    _sessions_ended(world, app_logins.tight)
    with world.db.connect(app_logins.tight):
        listed = {login.role: login for login in provisioning.list_app_logins(world.db.admin_dsn)}
    tight = listed[app_logins.tight]
    assert tight.limits == TIGHT and tight.can_login and tight.sessions == 1
    assert listed[app_logins.a].limits == LoginLimits()
    assert not any(role in listed for role in ("vera_app", "vera_worker", "vera_gateway"))


def test_a_second_create_is_refused_unless_asked_to_update(world: World) -> None:
    admin = world.db.admin_dsn
    role = provisioning.create_app_login(admin, f"t{SUFFIX}_twice")
    try:
        with pytest.raises(AppLoginExistsError, match="exists already"):
            provisioning.create_app_login(admin, role)
        roomier = LoginLimits(connection_limit=5, statement_timeout="2min", idle_in_transaction_timeout="0")
        assert provisioning.create_app_login(admin, role, roomier, exists_ok=True) == role
        listed = {login.role: login for login in provisioning.list_app_logins(admin)}
        assert listed[role].limits == roomier
    finally:
        provisioning.drop_app_login(admin, role)


def test_a_role_that_is_not_an_application_login_is_never_taken_over(world: World) -> None:
    role = f"vera_app_t{SUFFIX}_foreign"
    with world.db.admin() as admin:
        admin.execute(psycopg.sql.SQL("create role {}").format(psycopg.sql.Identifier(role)))
    try:
        with pytest.raises(AppLoginExistsError, match="not an application login"):
            provisioning.create_app_login(world.db.admin_dsn, role, exists_ok=True)
        with pytest.raises(AppLoginNotFoundError):
            provisioning.drop_app_login(world.db.admin_dsn, role)
        with world.db.admin() as admin:
            member = admin.execute("select pg_has_role(%s, 'vera_app', 'member')", (role,)).fetchone()
            assert member == (False,)
    finally:
        with world.db.admin() as admin:
            admin.execute(psycopg.sql.SQL("drop role {}").format(psycopg.sql.Identifier(role)))


def test_drop_ends_the_logins_sessions_first(world: World) -> None:
    admin = world.db.admin_dsn
    role = provisioning.create_app_login(admin, f"t{SUFFIX}_dropped")
    conn = world.db.connect(role)
    try:
        assert provisioning.drop_app_login(admin, role) == 1
        with pytest.raises(psycopg.OperationalError):
            conn.execute("select 1")
    finally:
        conn.close()
    with world.db.admin() as check:
        assert check.execute("select to_regrole(%s)", (role,)).fetchone() == (None,)
    with pytest.raises(AppLoginNotFoundError):
        provisioning.drop_app_login(admin, role)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "Billing",
        "bill-ing",
        "bill ing",
        'x"; drop role postgres; --',
        "_billing",
        "vera_app_",
        "x" * 55,
        "é",
    ],
)
def test_bad_names_are_refused_before_anything_runs(name: str) -> None:
    with pytest.raises(InvalidAppLoginError, match="invalid application login name"):
        provisioning.create_app_login("postgresql://nobody@/nowhere?host=/nonexistent", name)


@pytest.mark.parametrize(
    "limits",
    [
        LoginLimits(connection_limit=0),
        LoginLimits(connection_limit=-1),
        LoginLimits(connection_limit=100_000),
        LoginLimits(statement_timeout="30 seconds"),
        LoginLimits(statement_timeout="-1"),
        LoginLimits(statement_timeout="30s'; reset all; --"),
        LoginLimits(idle_in_transaction_timeout="1e3"),
        LoginLimits(idle_in_transaction_timeout=""),
    ],
)
def test_bad_limits_are_refused_before_anything_runs(limits: LoginLimits) -> None:
    with pytest.raises(InvalidAppLoginError, match="invalid"):
        provisioning.create_app_login("postgresql://nobody@/nowhere?host=/nonexistent", "fine", limits)


def test_names_take_the_prefix_once() -> None:
    assert provisioning.app_login_role("billing") == "vera_app_billing"
    assert provisioning.app_login_role("vera_app_billing") == "vera_app_billing"
    assert len(provisioning.app_login_role("x" * 54)) == 63


def test_the_password_is_stored_as_the_scram_verifier_postgres_computes(world: World) -> None:
    with world.db.admin() as admin:
        admin.execute("set password_encryption = 'scram-sha-256'")
        role = provisioning.create_app_login(world.db.admin_dsn, f"t{SUFFIX}_pw", password="s3cret")
        try:
            ours = admin.execute("select rolpassword from pg_authid where rolname = %s", (role,)).fetchone()
            admin.execute(
                psycopg.sql.SQL("alter role {} password 's3cret'").format(psycopg.sql.Identifier(role))
            )
            theirs = admin.execute("select rolpassword from pg_authid where rolname = %s", (role,)).fetchone()
        finally:
            provisioning.drop_app_login(world.db.admin_dsn, role)
    assert ours is not None and theirs is not None
    iterations, rest = theirs[0].removeprefix("SCRAM-SHA-256$").split(":", 1)
    salt = base64.b64decode(rest.split("$", 1)[0])
    assert logins.scram_verifier("s3cret", salt, int(iterations)) == theirs[0]
    assert ours[0].startswith(f"SCRAM-SHA-256${iterations}:") and ours[0] != theirs[0]  # a salt of its own


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        ("postgresql://admin:pw@db.internal:5433/vera?sslmode=require",
         "postgresql://vera_app_x:p%2Fw@db.internal:5433/vera?sslmode=require"),
        ("postgresql:///vera?host=/run/pg", "postgresql://vera_app_x:p%2Fw@/vera?host=/run/pg"),
        ("postgresql:///vera?user=admin&password=pw&host=/run/pg&port=5433",
         "postgresql://vera_app_x:p%2Fw@/vera?host=/run/pg&port=5433"),
    ],
)  # fmt: skip
def test_the_dsn_names_the_login(dsn: str, expected: str) -> None:
    assert provisioning.login_dsn(dsn, "vera_app_x", "p/w") == expected
    kv = provisioning.login_dsn("host=db.internal dbname=vera user=admin password=pw", "vera_app_x", None)
    assert conninfo.conninfo_to_dict(kv) == {"host": "db.internal", "dbname": "vera", "user": "vera_app_x"}


# -- the command line -----------------------------------------------------------------------------


def _cli(database: Database, *args: str) -> Result:
    env = {
        "VERA_DB__DATA_DIR": str(database.server.data_dir),
        "VERA_DB__PORT": str(database.server.port),
        "VERA_DB__DATABASE": database.name,
        "VERA_DB__DSN": "",
        "VERA_DB__ADMIN_DSN": "",
    }
    return CliRunner().invoke(main, ["tenant", "login", *args], env=env, catch_exceptions=False)


def test_the_cli_creates_lists_and_drops_a_login(world: World) -> None:
    name = f"t{SUFFIX}_cli"
    role = f"vera_app_{name}"
    created = _cli(world.db, "create", name, "--connection-limit", "3", "--statement-timeout", "5s")
    assert created.exit_code == 0, created.output
    try:
        assert f"login:    {role} (member of vera_app)" in created.output
        assert (
            "3 connections, statement_timeout 5s, idle_in_transaction_session_timeout 60s" in created.output
        )
        assert "no password is asked" in created.output and "password: " in created.output
        dsn = next(line.split()[1] for line in created.output.splitlines() if line.startswith("dsn:"))
        assert dsn == world.db.server.url(role, world.db.name)
        with psycopg.connect(dsn) as conn:
            assert conn.execute("select current_user, current_setting('statement_timeout')").fetchone() == (
                role,
                "5s",
            )
            listed = _cli(world.db, "list")
            line = next(line for line in listed.output.splitlines() if line.startswith(role))
            assert "3 connections" in line and "1 sessions now" in line
        again = _cli(world.db, "create", name)
        assert again.exit_code == 1 and again.stderr.strip().splitlines() == [
            f"vera: error: application login {role} exists already: drop it first (vera tenant login drop {role})"
        ]
    finally:
        dropped = _cli(world.db, "drop", name)
    assert dropped.exit_code == 0 and f"dropped {role} (0 sessions ended)" in dropped.output


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["create", "Bad-Name"], "vera: error: invalid application login name 'Bad-Name'"),
        (["create", "fine", "--connection-limit", "0"], "vera: error: invalid connection limit 0"),
        (["create", "fine", "--idle-timeout", "soon"], "vera: error: invalid idle timeout 'soon'"),
        (["drop", "nobody_here"], "vera: error: there is no application login vera_app_nobody_here"),
    ],
)
def test_cli_mistakes_are_one_line(world: World, args: list[str], error: str) -> None:
    result = _cli(world.db, *args)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(error), result.stderr
