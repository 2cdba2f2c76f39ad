"""Ingestion (sql/functions/110_sources.sql): sources, idempotent episodes,
chunks with Unicode, full-text vectors and embeddings."""

from __future__ import annotations

import hashlib

import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import SQL_ERRORS, record_episode, register_source


def test_register_source_is_an_upsert_by_name_and_audited(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        first = register_source(conn, world.a.organisation, "confluence", 2, kind="confluence")
        second = register_source(conn, world.a.organisation, "confluence", 3, kind="confluence")
        assert first == second
        tier = conn.execute("select trust_tier from vera.sources where source_id = %s", (first,)).fetchone()
        assert tier == (3,)
        actions = conn.execute(
            "select count(*) from vera.audit_log where action = 'source.register' and target_id = %s",
            (str(first),),
        ).fetchone()
        assert actions == (2,)


@pytest.mark.parametrize(
    ("kind", "tier", "token_env", "config", "message"),
    [
        ("markdown", 5, None, {}, "trust_tier must be 1"),
        ("markdown", 0, None, {}, "trust_tier must be 1"),
        ("Mark Down", 1, None, {}, "lower-case identifier"),
        ("markdown", 1, "ghp_secret123", {}, "token_env names an environment variable"),
        ("markdown", 1, None, [], "config must be a JSON object"),
    ],
)
def test_register_source_refuses_bad_input(world: World, kind, tier, token_env, config, message) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(SQL_ERRORS, match=message) as raised:
        conn.execute("select vera.register_source(%s, %s, 'x', %s, %s, %s)",
                     (world.a.organisation, kind, tier, token_env, Jsonb(config)))  # fmt: skip
    assert raised.value.sqlstate == "22023"


@pytest.mark.parametrize("key", ["viewer", "other tenant"])
def test_only_admins_register_sources(world: World, key: str) -> None:
    api_key = world.a.viewer_key if key == "viewer" else world.b.owner_key
    with caller(world.db, api_key) as conn, pytest.raises(SQL_ERRORS) as raised:
        register_source(conn, world.a.organisation, "sneaky", 1)
    assert raised.value.sqlstate == "42501"


def test_unchanged_record_is_a_no_op_and_a_changed_one_a_new_version(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "handbook", 1)
        first = record_episode(conn, world.a.organisation, source, "onboarding.md", "v1 text")
        again = record_episode(conn, world.a.organisation, source, "onboarding.md", "v1 text")
        changed = record_episode(conn, world.a.organisation, source, "onboarding.md", "v2 text")
        assert (first[1:], again, changed[1:]) == ((1, True), (first[0], 1, False), (2, True))


def test_record_episode_refuses_bad_input(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "handbook", 1)
        for args, sqlstate in [
            ((world.a.organisation, source, "", hashlib.sha256(b"x").digest()), "22023"),
            ((world.a.organisation, source, "a", b"short"), "22023"),
            ((world.a.organisation, world.a.owner, "a", hashlib.sha256(b"x").digest()), "VN001"),
        ]:
            conn.execute("savepoint s")
            with pytest.raises(SQL_ERRORS) as raised:
                conn.execute("select * from vera.record_episode(%s, %s, %s, %s)", args)
            assert raised.value.sqlstate == sqlstate
            conn.execute("rollback to savepoint s")


def test_chunks_keep_unicode_and_match_by_exact_form(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "vi-docs", 1)
        episode, _, _ = record_episode(conn, world.a.organisation, source, "huong-dan.md", "vi")
        text = "Dịch vụ thanh toán chạy trên cụm máy chủ xanh"
        rows = conn.execute(
            "select * from vera.store_chunks(%s, %s, %s)",
            (
                world.a.organisation,
                episode,
                Jsonb([{"text": "Giới thiệu", "heading": "Mở đầu"}, {"text": text}]),
            ),
        ).fetchall()
        assert [r[0] for r in rows] == [0, 1]
        stored = conn.execute("select text from vera.chunks where chunk_id = %s", (rows[1][1],)).fetchone()
        assert stored == (text,)
        hits = conn.execute(
            "select ordinal from vera.chunks where episode_id = %s and tsv @@ plainto_tsquery('simple', %s)",
            (episode, "thanh toán"),
        ).fetchall()
        assert hits == [(1,)]
        ascii_hits = conn.execute(
            "select count(*) from vera.chunks where episode_id = %s and tsv @@ plainto_tsquery('simple', 'thanh toan')",
            (episode,),
        ).fetchone()
        assert ascii_hits == (0,)


def test_storing_chunks_again_updates_in_place(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "redo", 1)
        episode, _, _ = record_episode(conn, world.a.organisation, source, "a.md", "a")
        first = conn.execute("select * from vera.store_chunks(%s, %s, %s)",
                             (world.a.organisation, episode, Jsonb([{"text": "one"}]))).fetchall()  # fmt: skip
        second = conn.execute(
            "select * from vera.store_chunks(%s, %s, %s, 'toy-2')",
            (world.a.organisation, episode, Jsonb([{"text": "one!", "embedding": [0.6, 0.8]}])),
        )
        assert second.fetchall() == first


@pytest.mark.parametrize(
    ("chunks", "model", "sqlstate"),
    [
        ([{"text": ""}], None, "22023"),
        ([{"text": "x" * 20001}], None, "22001"),
        (["just a string"], None, "22023"),
        ([{"text": "a", "char_start": "ten"}], None, "22023"),
        ([{"text": "a", "char_end": 1.5}], None, "22023"),
        ([{"text": "a", "embedding": [1, 2]}], None, "22023"),
        ([{"text": "a", "embedding": [1, "NaN"]}], "m", "VE002"),
        ([{"text": "a", "embedding": [1, 2]}, {"text": "b", "embedding": [1, 2, 3]}], "m", "VE001"),
    ],
)
def test_store_chunks_refuses_bad_input(world: World, chunks, model, sqlstate: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "bad-chunks", 1)
        episode, _, _ = record_episode(conn, world.a.organisation, source, "a.md", "a")
        with pytest.raises(SQL_ERRORS) as raised:
            conn.execute("select * from vera.store_chunks(%s, %s, %s, %s)",
                         (world.a.organisation, episode, Jsonb(chunks), model))  # fmt: skip
        assert raised.value.sqlstate == sqlstate


def test_store_chunks_is_refused_to_viewers_and_other_tenants(world: World) -> None:
    with world.db.admin() as admin:
        episode = admin.execute("select episode_id from vera.episodes where group_id = %s limit 1",
                                (world.a.organisation,)).fetchone()[0]  # type: ignore[index]  # fmt: skip
    for key in (world.a.viewer_key, world.b.owner_key):
        with caller(world.db, key) as conn, pytest.raises(SQL_ERRORS) as raised:
            conn.execute("select * from vera.store_chunks(%s, %s, %s)",
                         (world.a.organisation, episode, Jsonb([{"text": "x"}])))  # fmt: skip
        assert raised.value.sqlstate == "42501"
