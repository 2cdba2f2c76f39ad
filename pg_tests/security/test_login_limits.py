"""A login's own reach over its limits and its database (issue 27, items 9 and 10).

PostgreSQL lets every role change its own defaults for good (`alter role
current_user [in database ...] set ...`), so an application login could
replace the operator's timeouts for all its future sessions. The operator's
limits are a setting of the database, which only its owner may write, and
vera.authenticate sets them in every transaction. Logins belong to the whole
cluster, so CONNECT is granted per database to the login made for it, and
PUBLIC holds neither CONNECT nor TEMPORARY on VERA's databases.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import errors, sql

from pg_tests.support.databases import Database
from pg_tests.support.seed import World
from vera_client.adapters.postgres import provisioning
from vera_client.domain.deployment import LoginLimits

LIMITS = LoginLimits(connection_limit=5, statement_timeout="300ms", idle_in_transaction_timeout="20s")


@pytest.fixture(scope="module")
def login(world: World) -> Iterator[str]:
    """An application login made for this module's database by the operator, dropped afterwards."""
    role = provisioning.create_app_login(world.db.admin_dsn, f"limits_{uuid.uuid4().hex[:8]}", LIMITS)
    yield role
    provisioning.drop_app_login(world.db.admin_dsn, role)


def _operator_work_mem(world: World) -> str:
    with world.db.admin() as conn:
        return str(conn.execute("show work_mem").fetchone()[0])  # type: ignore[index]


LOOSENINGS = {
    "statement_timeout": "alter role current_user set statement_timeout = 0",
    "statement_timeout in database": "alter role current_user in database {db} set statement_timeout = 0",
    "idle timeout": "alter role current_user set idle_in_transaction_session_timeout = 0",
    "idle timeout in database": "alter role current_user in database {db} set idle_in_transaction_session_timeout = 0",
    "work_mem": "alter role current_user set work_mem = '1GB'",
    "row_security": "alter role current_user in database {db} set row_security = off",
}


def test_a_login_does_not_loosen_its_limits_for_its_next_sessions(world: World, login: str) -> None:
    with world.db.connect(login, autocommit=True) as conn:
        for statement in LOOSENINGS.values():
            # PostgreSQL lets a role do this to itself: what matters is that it binds nothing
            conn.execute(sql.SQL(statement).format(db=sql.Identifier(world.db.name)))  # type: ignore[arg-type]
    with world.db.connect(login) as conn:
        # its own default, before it authenticates
        assert conn.execute("show statement_timeout").fetchone() == ("0",)
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        shown = {
            name: conn.execute(sql.SQL("show {}").format(sql.Identifier(name))).fetchone()[0]  # type: ignore[index]
            for name in (
                "statement_timeout",
                "idle_in_transaction_session_timeout",
                "work_mem",
                "row_security",
            )
        }
        assert shown == {
            "statement_timeout": "300ms",
            "idle_in_transaction_session_timeout": "20s",
            "work_mem": _operator_work_mem(world),
            "row_security": "on",
        }
        assert conn.execute("select count(*) from vera.list_sources(null)").fetchone()[0] > 0  # type: ignore[index]
        with pytest.raises(errors.QueryCanceled):
            conn.execute("select pg_sleep(3)")
        conn.rollback()
        # every transaction, not only the first
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        assert conn.execute("show statement_timeout").fetchone() == ("300ms",)
        conn.rollback()


def test_the_operator_lists_its_limits_not_the_logins_own(world: World, login: str) -> None:
    with world.db.connect(login, autocommit=True) as conn:
        conn.execute("alter role current_user set statement_timeout = 0")
    listed = {found.role: found.limits for found in provisioning.list_app_logins(world.db.admin_dsn)}
    assert listed[login].statement_timeout == "300ms"
    assert listed[login].idle_in_transaction_timeout == "20s"


@pytest.mark.parametrize(
    "statement",
    [
        "create temp table mine (x integer)",
        "create function pg_temp.mine() returns integer language sql as 'select 1'",
    ],
)
def test_a_login_creates_no_temporary_objects(world: World, login: str, statement: str) -> None:
    with world.db.connect(login) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute(statement)  # type: ignore[arg-type]


def test_public_holds_neither_connect_nor_temporary(world: World) -> None:
    with world.db.admin() as conn:
        public = conn.execute(
            "select a.privilege_type from pg_database d, aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a "
            "where d.datname = current_database() and a.grantee = 0"
        ).fetchall()
        may = conn.execute(
            "select r, has_database_privilege(r, current_database(), 'CONNECT'), "
            "has_database_privilege(r, current_database(), 'TEMPORARY') "
            "from unnest(array['vera_worker', 'vera_gateway', 'vera_app']) r"
        ).fetchall()
    assert public == []
    assert may == [("vera_worker", True, False), ("vera_gateway", True, False), ("vera_app", False, False)]


def test_a_login_made_for_one_database_cannot_connect_to_another(
    make_database: Callable[..., Database],
) -> None:
    first, second = make_database(), make_database()
    role = provisioning.create_app_login(first.admin_dsn, f"only_{uuid.uuid4().hex[:8]}", LIMITS)
    try:
        with first.connect(role) as conn:
            assert conn.execute("select current_database()").fetchone() == (first.name,)
        with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
            second.connect(role).close()
    finally:
        provisioning.drop_app_login(first.admin_dsn, role)
