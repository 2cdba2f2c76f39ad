"""Settings (sql/functions/070_settings.sql)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.seed import World, caller


def test_defaults_overrides_and_reset(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        org = world.a.organisation
        assert conn.execute("select vera.setting(%s, 'er.semantic_link')", (org,)).fetchone() == (0.86,)
        assert conn.execute(
            "select vera.set_setting(%s, 'er.semantic_link', %s)", (org, Jsonb(0.9))
        ).fetchone() == (0.9,)
        assert conn.execute("select vera.setting(%s, 'er.semantic_link')", (org,)).fetchone() == (0.9,)
        assert conn.execute("select vera.set_setting(%s, 'er.semantic_link', null)", (org,)).fetchone() == (
            0.86,
        )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("no.such.setting", 1),
        ("er.semantic_link", 1.5),
        ("er.semantic_link", "high"),
        ("judge.contradiction", 1),
    ],
)
def test_bad_settings_are_refused(world: World, name: str, value: object) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.set_setting(%s, %s, %s)", (world.a.organisation, name, Jsonb(value)))
    assert raised.value.sqlstate == "22023"


@pytest.mark.parametrize("who", ["viewer", "other tenant"])
def test_only_admins_change_settings(world: World, who: str) -> None:
    key = world.a.viewer_key if who == "viewer" else world.b.owner_key
    with caller(world.db, key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.set_setting(%s, 'judge.contradiction', 'true')", (world.a.organisation,))
    assert raised.value.sqlstate == "42501"


def test_settings_of_other_tenants_are_invisible(world: World) -> None:
    with caller(world.db, world.b.owner_key) as conn:
        conn.execute("select vera.set_setting(%s, 'er.candidate_limit', '9')", (world.b.organisation,))
        conn.commit()
    with caller(world.db, world.a.owner_key) as conn:
        assert conn.execute("select count(*) from vera.group_settings").fetchone() == (0,)
        # reading another group's setting yields the default, never the override
        assert conn.execute(
            "select vera.setting(%s, 'er.candidate_limit')", (world.b.organisation,)
        ).fetchone() == (5,)
