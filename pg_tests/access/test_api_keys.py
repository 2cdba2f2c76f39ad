"""API keys (sql/functions/060_api_keys.sql): shown once, stored as SHA-256,
managed only by their principal or an admin of a service account."""

from __future__ import annotations

import hashlib
import re
import time

import psycopg
import pytest
from psycopg import errors

from pg_tests.support.seed import World, caller

KEY_FORMAT = re.compile(r"^vera_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$")


def test_create_api_key_returns_the_key_once_and_stores_only_its_hash(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        key_id, prefix, key = conn.execute("select * from vera.create_api_key('ci')").fetchone()  # type: ignore[misc]
        assert KEY_FORMAT.match(key) and key.split("_")[1] == prefix
        conn.commit()
    with world.db.admin() as admin:
        stored = admin.execute("select key_sha256 from vera.api_keys where key_id = %s", (key_id,)).fetchone()
        assert stored == (hashlib.sha256(key.encode()).digest(),)
        columns = {
            row[0]
            for row in admin.execute(
                "select attname from pg_attribute where attrelid = 'vera.api_keys'::regclass and attnum > 0"
            )
        }
        assert not {"key", "secret", "api_key"} & columns
    with caller(world.db, key) as conn:
        assert conn.execute("select vera.current_principal()").fetchone() == (world.a.owner,)


def test_secrets_are_unique_and_carry_256_bits(world: World) -> None:
    with world.db.admin() as conn:
        secrets = [row[0] for row in conn.execute("select vera.new_secret() from generate_series(1, 200)")]
    assert len(set(secrets)) == 200
    assert all(len(secret) == 43 for secret in secrets)  # 43 base64url characters = 256 bits


def test_list_api_keys_shows_only_own_keys_without_secrets(world: World) -> None:
    with caller(world.db, world.b.owner_key) as conn:
        cursor = conn.execute("select * from vera.list_api_keys()")
        rows = cursor.fetchall()
        names = [column.name for column in cursor.description or []]
    assert rows and "key_sha256" not in names and "api_key" not in names
    with world.db.admin() as admin:
        b_prefixes = {
            row[0]
            for row in admin.execute(
                "select prefix from vera.api_keys where principal_id = %s", (world.b.owner,)
            )
        }
    assert {row[names.index("prefix")] for row in rows} == b_prefixes


def test_revoke_api_key_takes_effect_at_once(world: World) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        _, prefix, key = conn.execute("select * from vera.create_api_key('short-lived')").fetchone()  # type: ignore[misc]
        conn.commit()
    with caller(world.db, world.a.viewer_key) as conn:
        assert conn.execute("select vera.revoke_api_key(%s)", (prefix,)).fetchone() == (True,)
        assert conn.execute("select vera.revoke_api_key(%s)", (prefix,)).fetchone() == (False,)
        conn.commit()
    with world.db.connect() as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.authenticate(%s)", (key,))
    assert raised.value.sqlstate == "VA003"


def test_cannot_revoke_another_tenants_key(world: World) -> None:
    with world.db.admin() as admin:
        b_prefix = admin.execute(
            "select prefix from vera.api_keys where principal_id = %s limit 1", (world.b.owner,)
        ).fetchone()[0]  # type: ignore[index]
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.revoke_api_key(%s)", (b_prefix,))
    assert raised.value.sqlstate == "VN001"


def test_admin_issues_keys_for_its_service_account_only(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        _, _, key = conn.execute(
            "select * from vera.create_api_key('bot', null, %s)", (world.a.service,)
        ).fetchone()  # type: ignore[misc]
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("select * from vera.create_api_key('bot', null, %s)", (world.b.service,))
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        # a human user's keys are theirs alone, even for an owner
        conn.execute("select * from vera.create_api_key('mine now', null, %s)", (world.a.viewer,))
    assert KEY_FORMAT.match(key)


@pytest.mark.parametrize(("name", "expires"), [("", None), ("   ", None), ("past", "2001-01-01T00:00:00Z")])
def test_create_api_key_refuses_bad_arguments(world: World, name: str, expires: str | None) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(errors.InvalidParameterValue):
        conn.execute("select * from vera.create_api_key(%s, %s::timestamptz)", (name, expires))


def test_concurrent_requests_with_one_key_never_wait_for_each_other(world: World) -> None:
    """The first use stamps last_used_at; a second transaction authenticating
    with the same key meanwhile must not queue behind that row lock."""
    with caller(world.db, world.a.viewer_key) as conn:
        conn.execute("select vera.create_api_key('busy')")
        key = conn.execute("select * from vera.create_api_key('busy-2')").fetchone()[2]  # type: ignore[index]
        conn.commit()
    with caller(world.db, key) as first, world.db.connect() as second:
        # `first` holds the stamped row until it ends
        assert first.execute("select vera.whoami()").fetchone() is not None
        second.execute("set lock_timeout = '2s'")
        assert second.execute("select vera.authenticate(%s)", (key,)).fetchone() is not None
        second.rollback()


def test_revocation_never_waits_for_the_keys_users(world: World) -> None:
    """As found: authenticating stamps the key's use under a row lock, and a
    holder keeping its transaction open stalled the revocation behind it."""
    with caller(world.db, world.a.viewer_key) as conn:
        _, prefix, key = conn.execute("select * from vera.create_api_key('held open')").fetchone()  # type: ignore[misc]
        conn.commit()
    with caller(world.db, key) as holder:  # first use: stamps, and stays in its transaction
        assert holder.execute("select vera.current_principal()").fetchone() == (world.a.viewer,)
        with caller(world.db, world.a.viewer_key) as revoker:
            revoker.execute("set local lock_timeout = '5s'")
            started = time.monotonic()
            assert revoker.execute("select vera.revoke_api_key(%s)", (prefix,)).fetchone() == (True,)
            revoker.commit()
            assert time.monotonic() - started < 1.0
        # the holder may finish what it authenticated for; the key is refused from now on
        assert holder.execute("select vera.current_principal()").fetchone() == (world.a.viewer,)
        holder.commit()  # and its stamp of the key's use stands
    with world.db.connect() as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.authenticate(%s)", (key,))
    assert raised.value.sqlstate == "VA003"
    with caller(world.db, world.a.viewer_key) as conn:
        listed = conn.execute(
            "select revoked_at is not null, last_used_at is not null from vera.list_api_keys() where prefix = %s",
            (prefix,),
        ).fetchone()
    assert listed == (True, True)
