"""History is knowledge too (issue 28): facts of the 1700s and of antiquity are stored with
their own validity (vera.is_world_time: any finite time PostgreSQL stores, before the year
10000), and the reads at an instant, the search at an instant and the timelines work over them;
the Python client reads a time before the year 1 as ancient_times.EARLIEST instead of failing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg
import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.searching import search
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, project_with_source, publish, record_episode
from vera_client.adapters.postgres.ancient_times import EARLIEST
from vera_client.domain.errors import InvalidArgumentError

HISTORY = [
    claim("Cascadia subduction zone", "last great earthquake", "magnitude 9 earthquake of 26 January 1700",
          valid_from="1700-01-26"),
    claim("Royal Cabinet of Curiosities", "housed in", "the old palace", valid_from="1797-05-01", functional=True),
    claim("Royal Cabinet of Curiosities", "housed in", "the glass hall", valid_from="1850-01-01"),
    claim("Julius Caesar", "died in", "Rome, at the Theatre of Pompey", valid_from="0044-03-15 BC"),
]  # fmt: skip


@pytest.fixture(scope="module")
def history(world: World) -> dict[str, Any]:
    with caller(world.db, world.a.owner_key) as conn:
        group, source = project_with_source(conn, world.a.organisation, "history")
        episode, _, _ = record_episode(conn, group, source, "annals", "Annals.", observed_at="1851-01-01")
        facts = {row["claim"]: row["fact_id"] for row in publish(conn, group, episode, HISTORY)}
        conn.commit()
    return {"group": group, "facts": facts}


def _at(conn: psycopg.Connection, subject: str, as_of: str, group: str) -> list[tuple[str, str, str | None]]:
    """(object, valid_from, valid_to) of the subject's facts valid at as_of, times as text (BC)."""
    rows = conn.execute(
        "select object, valid_from::text, valid_to::text from vera.read_facts(%s, groups => %s, as_of => %s)",
        (subject, [group], as_of),
    ).fetchall()
    return [(row[0], row[1], row[2]) for row in rows]


def test_facts_of_the_1700s_and_of_antiquity_hold_at_their_own_times(
    world: World, history: dict[str, Any]
) -> None:
    group = history["group"]
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("set timezone = 'UTC'")
        museum_1800 = _at(conn, "Royal Cabinet of Curiosities", "1800-01-01", group)
        museum_1900 = _at(conn, "Royal Cabinet of Curiosities", "1900-01-01", group)
        museum_1796 = _at(conn, "Royal Cabinet of Curiosities", "1796-12-31", group)
        caesar = _at(conn, "Julius Caesar", "0044-03-16 BC", group)
        before_caesar = _at(conn, "Julius Caesar", "0045-01-01 BC", group)
        cascadia = _at(conn, "Cascadia subduction zone", "1750-01-01", group)
    assert museum_1800 == [("the old palace", "1797-05-01 00:00:00+00", "1850-01-01 00:00:00+00")]
    assert museum_1900 == [("the glass hall", "1850-01-01 00:00:00+00", None)]
    assert museum_1796 == []
    assert caesar == [("Rome, at the Theatre of Pompey", "0044-03-15 00:00:00+00 BC", None)]
    assert before_caesar == []
    assert [row[1] for row in cascadia] == ["1700-01-26 00:00:00+00"]


def test_search_at_an_old_instant_answers_from_that_time(world: World, history: dict[str, Any]) -> None:
    group = history["group"]
    with caller(world.db, world.a.owner_key) as conn:
        in_1800 = search(
            conn, "where is the Royal Cabinet of Curiosities housed", groups=[group], as_of="1800-01-01"
        )
        in_1900 = search(
            conn, "where is the Royal Cabinet of Curiosities housed", groups=[group], as_of="1900-01-01"
        )
        ides = search(conn, "where did Julius Caesar die", groups=[group], as_of="0044-06-01 BC")
    # the first hit answers; facts not valid then are not among the hits at all
    assert in_1800[0]["object"] == "the old palace" and "the glass hall" not in _objects(in_1800)
    assert in_1900[0]["object"] == "the glass hall" and "the old palace" not in _objects(in_1900)
    assert _objects(ides) == ["Rome, at the Theatre of Pompey"]  # nothing else held in 44 BC


def _objects(hits: list[dict[str, Any]]) -> list[str]:
    return [hit["object"] for hit in hits if hit["kind"] == "fact"]


def test_the_client_reads_times_before_the_year_1_as_the_earliest_datetime(
    world: World, history: dict[str, Any]
) -> None:
    """psycopg alone fails on a BC timestamptz (text and binary); the client's loaders read it as
    EARLIEST, and its timeline and its hits hold the old facts with their order."""
    caesar: UUID = history["facts"][3]
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.DataError):
        conn.execute("select valid_from from vera.get_fact(%s)", (caesar,)).fetchone()
    with client_for(world, world.a.owner_key) as vera:
        fact = vera.get_fact(caesar)
        timeline = vera.explain_fact(history["facts"][1])
        hits = vera.search(
            "Julius Caesar died", groups=[history["group"]], as_of=datetime(1, 6, 1, tzinfo=UTC)
        )
        with vera.executor.pool.connection() as conn:
            binary = conn.cursor(binary=True).execute("select '0044-03-15 BC'::timestamptz").fetchone()
            text = conn.execute(
                "select '0044-03-15 BC'::timestamptz, '1700-01-26 00:00+00'::timestamptz"
            ).fetchone()
    assert fact.valid_from == EARLIEST and fact.object == "Rome, at the Theatre of Pompey"
    assert [(t.object, t.valid_from.year, t.valid_to.year if t.valid_to else None) for t in timeline] == [
        ("the old palace", 1797, 1850), ("the glass hall", 1850, None)]  # fmt: skip
    assert [hit.object for hit in hits if hit.kind == "fact"] == ["Rome, at the Theatre of Pompey"]
    assert binary == (EARLIEST,)
    assert text == (EARLIEST, datetime(1700, 1, 26, tzinfo=UTC))


@pytest.mark.parametrize(
    ("valid_from", "valid_to"),
    [
        ("infinity", None),
        (None, "-infinity"),
        ("10000-01-01 00:00+00", None),
        (None, "294276-12-31 23:59:59+00"),
    ],
)
def test_infinities_and_absurd_times_are_refused_naming_the_limit(
    world: World, history: dict[str, Any], valid_from: str | None, valid_to: str | None
) -> None:
    stated = {key: value for key, value in (("valid_from", valid_from), ("valid_to", valid_to)) if value}
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(InvalidArgumentError) as raised:
        publish(conn, history["group"], None, [claim("x", "is", "y", **stated)])
    cause = raised.value.__cause__
    assert isinstance(cause, psycopg.Error) and cause.sqlstate == "22023"
    assert "before the year 10000 (from 4714 BC" in str(raised.value)


def test_the_earliest_and_latest_world_times_are_accepted(world: World, history: dict[str, Any]) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        rows = publish(conn, history["group"], None, [
            claim("the first day PostgreSQL counts", "is", "a time", valid_from="4714-11-24 00:00+00 BC"),
            claim("the last second of 9999", "is", "a time", valid_from="9999-12-31 23:59:59+00"),
        ])  # fmt: skip
        conn.rollback()
    assert len(rows) == 2
