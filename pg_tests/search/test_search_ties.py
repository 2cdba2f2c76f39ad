"""The order of equal scores (sql/functions/170_ranking.sql order keys,
177_lexical_candidates.sql, 178_blend.sql, 179_search_candidates.sql,
200_snapshots.sql): decided by the data, never by random ids,
so that two databases holding the same data rank it the same, and a snapshot
answers as live search did."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.databases import Database
from pg_tests.support.searching import MODEL, search, vector_literal
from pg_tests.support.writes import claim, publish, record_episode, register_source

# every passage and fact carries the same word once, and the same vector: equal in both halves
SHARED = [0.25] * 16
OBSERVED = "2026-03-01T00:00:00Z"
SOURCES = ("beta wiki", "alpha wiki")
RECORDS = [f"page-{n:02d}.md" for n in range(6)]
SERVICES = [f"svc-{n}" for n in range(4)]


def _item(kind: str, match: float, lexical: float | None, similarity: float | None, key: str) -> str:
    """A stage-2 input with every signal equal but the ones named (as SQL)."""
    return (
        f"row('{kind}', gen_random_uuid(), 'o:ties', '{key}', null, null, null, 0.85, 'auto', 1.0,"
        f" '{OBSERVED}', null, 0, 0, null, null, convert_to('{key}', 'UTF8'), null,"
        f" {'null' if lexical is None else lexical}, {'null' if similarity is None else similarity},"
        f" {match})::vera.search_item"
    )


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        # the relevance weight is 0, so every score is equal: the higher match confidence first
        ([("passage", 0.6, 1.0, 0.5, "a"), ("passage", 0.7, 0.2, 0.1, "z")], ["z", "a"]),
        # then the higher lexical match
        ([("passage", 0.6, 0.5, 0.9, "a"), ("passage", 0.6, 0.8, 0.1, "z")], ["z", "a"]),
        # then the higher similarity
        ([("passage", 0.6, 0.5, 0.2, "a"), ("passage", 0.6, 0.5, 0.7, "z")], ["z", "a"]),
        # a measure taken before one not taken (the half did not measure it)
        ([("passage", 0.6, None, 0.5, "a"), ("passage", 0.6, 0.0, 0.5, "z")], ["z", "a"]),
        ([("passage", 0.6, 0.5, None, "a"), ("passage", 0.6, 0.5, 0.0, "z")], ["z", "a"]),
        # then facts before passages
        ([("passage", 0.6, 0.5, 0.5, "a"), ("fact", 0.6, 0.5, 0.5, "z")], ["z", "a"]),
        # then the order key, whatever the item ids
        ([("passage", 0.5, 0.5, 0.5, "b"), ("passage", 0.5, 0.5, 0.5, "a"), ("passage", 0.5, 0.5, 0.5, "c")],
         ["a", "b", "c"]),
    ],
)  # fmt: skip
def test_equal_scores_follow_the_documented_order(
    db: Database, items: list[tuple[str, float, float | None, float | None, str]], expected: list[str]
) -> None:
    with db.admin() as admin:
        ranked = admin.execute(
            f"select rank, text, score from vera.blend(array[{', '.join(_item(*i) for i in items)}],"
            f" jsonb_build_object('*', vera.default_weights() || '{{\"relevance\": 0}}'), '{OBSERVED}', 10, null)"
        ).fetchall()
    assert [text for _, text, _ in ranked] == expected
    assert len({score for _, _, score in ranked}) == 1  # the blend scored them all alike


def _load(database: Database, seed: int) -> tuple[str, str]:
    """One tenant with the same passages and facts, written in an order of the seed's choosing."""
    with database.admin() as admin:
        row = admin.execute(
            "select group_id, api_key from vera.create_tenant('Ties', 'Ties Owner')"
        ).fetchone()
    assert row is not None
    org, key = row
    writes: list[Callable[[psycopg.Connection], None]] = []
    with database.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        sources = {name: register_source(conn, org, name, 2) for name in SOURCES}

        def passage(source: str, record: str) -> Callable[[psycopg.Connection], None]:
            def write(conn: psycopg.Connection) -> None:
                episode, _, _ = record_episode(
                    conn, org, sources[source], record, record, observed_at=OBSERVED
                )
                chunks = [{"text": f"tied note {source} {record} {n}", "embedding": SHARED} for n in range(2)]
                conn.execute("select vera.store_chunks(%s, %s, %s, %s)", (org, episode, Jsonb(chunks), MODEL))

            return write

        def fact(service: str) -> Callable[[psycopg.Connection], None]:
            def write(conn: psycopg.Connection) -> None:
                episode, _, _ = record_episode(conn, org, sources["alpha wiki"], f"{service}.md", service,
                                               observed_at=OBSERVED)  # fmt: skip
                publish(conn, org, episode, [claim(service, "runs on", "tied", fact_text=f"{service} tied",
                                                   embedding=SHARED, valid_from=OBSERVED)], MODEL)  # fmt: skip

            return write

        writes = [passage(s, r) for s in SOURCES for r in RECORDS] + [fact(s) for s in SERVICES]
        random.Random(seed).shuffle(writes)  # noqa: S311 (an order, not a secret)
        for write in writes:
            write(conn)
        conn.commit()
    return org, key


def _ranked(hits: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """What a hit is, in terms that do not depend on the database: kind and text."""
    return [(hit["kind"], hit["text"]) for hit in hits]


QUERIES = {
    "full text": {"query": "tied"},
    "vector": {"embedding": SHARED},
    "hybrid": {"query": "tied", "embedding": SHARED},
}


def test_two_databases_with_the_same_data_rank_ties_alike(make_database: Callable[[], Database]) -> None:
    """Item ids are random UUIDs and rows sit in a different physical order in each
    database; 24 passages and 4 facts tie in both halves, and only 5 candidates per
    half are taken, so the cut goes through the ties as well."""
    results = []
    for seed in (1, 2):
        database = make_database()
        org, key = _load(database, seed)
        with database.connect(autocommit=True) as conn:
            conn.execute("begin isolation level repeatable read")
            conn.execute("select vera.authenticate(%s)", (key,))
            conn.execute("select * from vera.create_snapshot(%s, 'ties')", (org,))
            ranked = {}
            for name, arguments in QUERIES.items():
                live = search(conn, groups=[org], k=10, candidates=5, **arguments)
                embedding = arguments.get("embedding")
                cursor = conn.execute(
                    "select * from vera.search_snapshot(%s, 'ties', %s, %s::vector, k => 10, candidates => 5)",
                    (org, arguments.get("query"), vector_literal(embedding) if embedding else None),
                )
                columns = [column.name for column in cursor.description or []]
                frozen = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
                assert frozen == live, name  # the snapshot orders its ties as live search does
                ranked[name] = _ranked(live)
            conn.execute("commit")
        results.append(ranked)
    assert results[0] == results[1]
    # and the order is the documented one: facts by text, then passages by source name, record, position
    facts = [("fact", f"{s} tied") for s in SERVICES]
    passages = [
        ("passage", f"tied note {s} {r} {n}") for s in sorted(SOURCES) for r in RECORDS for n in range(2)
    ]
    assert results[0]["vector"] == (facts + passages)[:5]
    assert results[0]["full text"] == sorted(results[0]["full text"], key=(facts + passages).index)
