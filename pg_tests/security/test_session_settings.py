"""Session settings a tenant controls (issue 27, item 8).

A caller may `set` any planner or pgvector setting before it calls the SQL
API. A definer function that searches a structure shared by all tenants (the
entity-name HNSW index) with the caller's settings lets the caller choose the
plan: with `hnsw.ef_search = 1` and the other scans off, entity resolution
read the one nearest name of any tenant through the shared index and dropped
it by the group filter afterwards, so whether a new name resolved to the
caller's own look-alike or to nothing told whether another tenant held that
name. The functions that search pin the settings they depend on and keep the
shared index out of tenant queries; these tests set the worst values they
can and check that every answer is the one the defaults give.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pg_tests.support.searching import DIM, MODEL, vector_literal
from pg_tests.support.seed import World, caller, seed_world
from pg_tests.support.writes import claim, publish

# What a tenant sets in its session to steer a definer function's plan.
HOSTILE = {
    "hnsw.ef_search": "1",
    "hnsw.iterative_scan": "off",
    "enable_seqscan": "off",
    "enable_bitmapscan": "off",
    "enable_sort": "off",
    "enable_incremental_sort": "off",
    "enable_hashjoin": "off",
    "enable_mergejoin": "off",
    "enable_material": "off",
    "jit": "off",
    "pg_trgm.similarity_threshold": "1",
    "random_page_cost": "0.0001",
    "cpu_operator_cost": "1000",
}
# Names the victim (tenant B) holds and names it does not; the attacker
# (tenant A) asks about all six.
HELD = ("orion ledger", "quartz relay", "saffron vault")
NOT_HELD = ("juniper beacon", "cobalt harbor", "marigold switch")


def _unit(values: list[float]) -> list[float]:
    norm = sum(x * x for x in values) ** 0.5
    return [x / norm for x in values]


def _vectors() -> dict[str, list[float]]:
    """A random direction per name (hashed words would collide in 16 dimensions)."""
    chance = random.Random(27)  # noqa: S311 - test data
    return {name: _unit([chance.gauss(0, 1) for _ in range(DIM)]) for name in HELD + NOT_HELD}


def _near(vector: list[float], seed: int) -> list[float]:
    """A look-alike: within cosine distance ~0.005 of `vector`."""
    chance = random.Random(seed)  # noqa: S311 - test data
    return _unit([x + chance.gauss(0, 0.02) for x in vector])


@pytest.fixture(scope="module")
def oracle_world(clones: Any) -> Iterator[tuple[World, dict[str, list[float]]]]:
    """Tenant B holds HELD with name embeddings; tenant A holds a look-alike
    (another name, a nearby embedding) of each of the six names."""
    database = clones.make()
    world = seed_world(database)
    vectors = _vectors()
    with caller(database, world.b.owner_key) as conn:
        publish(
            conn,
            world.b.owner_personal,
            None,
            [claim(name, "is a", "service", subject_embedding=vectors[name]) for name in HELD],
            MODEL,
        )
        conn.commit()
    with caller(database, world.a.owner_key) as conn:
        publish(
            conn,
            world.a.owner_personal,
            None,
            [
                claim(
                    f"lookalike {'xyz'[n % 3]}{'qrs'[n // 3]}",
                    "is a",
                    "service",
                    subject_embedding=_near(vectors[name], n),
                )
                for n, name in enumerate(HELD + NOT_HELD)
            ],
            MODEL,
        )
        conn.commit()
    with database.admin() as conn:
        conn.execute("analyze")
    yield world, vectors
    clones.drop(database)


def _probe(world: World, vectors: dict[str, list[float]], name: str, settings: dict[str, str]) -> Any:
    """Tenant A publishes `name` with its embedding in its own scope (rolled back): how it resolved."""
    with world.db.connect() as conn:
        for setting, value in settings.items():
            conn.execute("select set_config(%s, %s, false)", (setting, value))
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        rows = conn.execute(
            "select resolution from vera.publish_claims(%s, null, %s::jsonb, %s)",
            (
                world.a.owner_personal,
                psycopg.types.json.Jsonb([claim(name, "is a", "service", subject_embedding=vectors[name])]),
                MODEL,
            ),
        ).fetchall()
        conn.rollback()
    return rows[0][0]


def _assert_no_oracle(world: World, vectors: dict[str, list[float]]) -> None:
    baseline = {name: _probe(world, vectors, name, {}) for name in HELD + NOT_HELD}
    # each name finds tenant A's own look-alike under the defaults
    assert set(baseline.values()) <= {"semantic", "provisional"}, baseline
    steered = {name: _probe(world, vectors, name, HOSTILE) for name in HELD + NOT_HELD}
    assert steered == baseline


def test_entity_resolution_does_not_tell_other_tenants_names(
    oracle_world: tuple[World, dict[str, list[float]]],
) -> None:
    world, vectors = oracle_world
    _assert_no_oracle(world, vectors)


def test_no_vector_index_is_shared_by_groups(oracle_world: tuple[World, dict[str, list[float]]]) -> None:
    """Every HNSW index on tenant data has one group as its predicate."""
    world, _ = oracle_world
    with world.db.admin() as conn:
        shared = conn.execute(
            "select i.indexrelid::regclass::text from pg_index i "
            "join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam "
            "where c.relnamespace = 'vera'::regnamespace and a.amname in ('hnsw', 'ivfflat') "
            "and coalesce(pg_get_expr(i.indpred, i.indrelid), '') !~ 'group_id = '"
        ).fetchall()
    assert shared == []


def test_a_group_with_its_own_name_index_is_no_oracle_either(
    oracle_world: tuple[World, dict[str, list[float]]],
) -> None:
    """A large group's names get an HNSW index of their own (vera db maintain), read under pinned settings."""
    world, vectors = oracle_world
    with world.db.admin() as conn:
        due = conn.execute(
            "select index_name, statements from vera.missing_vector_indexes(1) "
            "where table_name = 'entities' and group_id = any (%s)",
            ([world.a.owner_personal, world.b.owner_personal],),
        ).fetchall()
        assert len(due) == 2
        for _, statements in due:
            for statement in statements:
                conn.execute(statement)
        assert conn.execute(
            "select bool_and(vera.group_vector_index_ready('entities', g, %s)) from unnest(%s::text[]) g",
            (DIM, [world.a.owner_personal, world.b.owner_personal]),
        ).fetchone() == (True,)
    _assert_no_oracle(world, vectors)


def test_search_answers_alike_under_any_session_settings(
    oracle_world: tuple[World, dict[str, list[float]]],
) -> None:
    world, vectors = oracle_world

    def hits(settings: dict[str, str]) -> list[tuple[Any, ...]]:
        with world.db.connect() as conn:
            for setting, value in settings.items():
                conn.execute("select set_config(%s, %s, false)", (setting, value))
            conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
            rows = conn.execute(
                "select rank, kind, item_id from vera.search('payments-api lookalike service', "
                "query_embedding => %s::vector, embedding_model => %s, k => 10)",
                (vector_literal(vectors[NOT_HELD[0]]), MODEL),
            ).fetchall()
            conn.rollback()
        return rows

    baseline = hits({})
    assert baseline
    assert hits(HOSTILE) == baseline
