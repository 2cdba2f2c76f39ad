"""Time scopes of passages (docs/time.md): what vera.store_chunks keeps of the periods a passage
states, and what an ingested folder's passages get: the times their words state, or the
validity their front matter states outright, which wins."""

from __future__ import annotations

import textwrap
from datetime import date
from pathlib import Path
from uuid import UUID

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.types.json import Jsonb

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.ingesting import run_worker
from pg_tests.support.seed import World, caller, create_project
from vera_cli.main import main
from vera_client.client import VeraClient
from vera_client.domain.errors import PermissionDeniedError
from vera_client.domain.time_scopes import EXTRACTION_VERSION, time_scope


def _scopes(world: World, group: str) -> dict[str, tuple[str | None, int | None]]:
    """Each passage's text: its time scope (as text, in UTC) and the reader's version."""
    with world.db.admin() as conn:
        conn.execute("set timezone = 'UTC'")
        rows = conn.execute(
            "select text, time_scope::text, time_scope_version from vera.chunks where group_id = %s", (group,)
        ).fetchall()
    return {text: (scope, version) for text, scope, version in rows}


@pytest.fixture
def episode(world: World) -> tuple[str, UUID]:
    group = create_project(world, "time-scopes-sql")
    with caller(world.db, world.a.owner_key) as conn:
        source = conn.execute("select vera.register_source(%s, 'wiki', 'history', 1)", (group,)).fetchone()[0]  # type: ignore[index]
        found = conn.execute(
            "select episode_id from vera.record_episode(%s, %s, 'house.md', sha256('v1'))", (group, source)
        ).fetchone()
        conn.commit()
    assert found is not None
    return group, found[0]


def test_store_chunks_keeps_the_stated_periods(world: World, episode: tuple[str, UUID]) -> None:
    group, episode_id = episode
    chunks = [
        # what VERA's reader read (version 1): two ranges, one of them open
        {"text": "owned from 1811 to 1827, and by the Smoots since 1890",
         "time_scope": [["1811-01-01", "1828-01-01"], ["1890-01-01", None]], "time_scope_version": 1},
        # stated by the caller: no version means 0, never read again by `vera reprocess`
        {"text": "rented to Baker", "time_scope": [["1916-01-01T00:00:00+00:00", "1921-01-01"]]},
        # overlapping ranges merge; read and found empty is not the same as not read
        {"text": "the 1990s, and 1995", "time_scope": [["1990-01-01", "2000-01-01"], ["1995-01-01", "1996-01-01"]],
         "time_scope_version": 1},
        {"text": "no time at all", "time_scope": [], "time_scope_version": 1},
        {"text": "not read"},
    ]  # fmt: skip
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select * from vera.store_chunks(%s, %s, %s)", (group, episode_id, Jsonb(chunks)))
        conn.commit()
    assert _scopes(world, group) == {
        "owned from 1811 to 1827, and by the Smoots since 1890": (
            '{["1811-01-01 00:00:00+00","1828-01-01 00:00:00+00"),["1890-01-01 00:00:00+00",)}', 1),
        "rented to Baker": ('{["1916-01-01 00:00:00+00","1921-01-01 00:00:00+00")}', 0),
        "the 1990s, and 1995": ('{["1990-01-01 00:00:00+00","2000-01-01 00:00:00+00")}', 1),
        "no time at all": ("{}", 1),
        "not read": (None, None),
    }  # fmt: skip

    # storing again replaces the scope with the new one
    chunks[0] = {
        "text": chunks[0]["text"],
        "time_scope": [["1811-01-01", "1812-01-01"]],
        "time_scope_version": 2,
    }
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select * from vera.store_chunks(%s, %s, %s)", (group, episode_id, Jsonb(chunks)))
        conn.commit()
    assert _scopes(world, group)["owned from 1811 to 1827, and by the Smoots since 1890"] == (
        '{["1811-01-01 00:00:00+00","1812-01-01 00:00:00+00")}',
        2,
    )


def test_a_bad_time_scope_names_its_chunk_and_range(world: World, episode: tuple[str, UUID]) -> None:
    group, episode_id = episode
    chunks = [
        {"text": "fine", "time_scope": []},
        {"text": "bad", "time_scope": [["1996-01-01", "1995-01-01"]]},
    ]
    with (
        caller(world.db, world.a.owner_key) as conn,
        pytest.raises(Exception, match="chunk 1: time_scope range 0 ends before it starts"),
    ):
        conn.execute("select * from vera.store_chunks(%s, %s, %s)", (group, episode_id, Jsonb(chunks)))
    assert _scopes(world, group) == {}


HOUSE = textwrap.dedent(
    """\
    # Newton D. Baker House

    ## Owners

    Maj. George Peter owned the house from 1811 to 1827.

    ## Tenants

    In March 1916 it was rented to Newton D. Baker.

    ## Garden

    The house has a large garden.
    """
)
STATED = textwrap.dedent(
    """\
    ---
    title: Rent roll
    valid_from: 1916-01-01
    valid_to: 1921-01-01
    ---
    # Rent roll

    The rent was paid in 1950 by somebody else.
    """
)


def test_ingested_passages_carry_the_times_they_state_or_their_stated_validity(
    world: World, owner_a: VeraClient, tmp_path: Path
) -> None:
    group = create_project(world, "time-scopes-ingest")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "house.md").write_text(HOUSE, encoding="utf-8")
    (folder / "rent.md").write_text(STATED, encoding="utf-8")
    source = owner_a.register_folder(group, "history", folder, tier=1)
    owner_a.request_ingest(group, source.source_id)
    [report] = run_worker(world.db, tmp_path / "objects")
    assert report.failed == []
    scopes = _scopes(world, group)
    v = EXTRACTION_VERSION
    assert scopes["Maj. George Peter owned the house from 1811 to 1827."] == (
        '{["1811-01-01 00:00:00+00","1828-01-01 00:00:00+00")}',
        v,
    )
    assert scopes["In March 1916 it was rented to Newton D. Baker."] == (
        '{["1916-03-01 00:00:00+00","1916-04-01 00:00:00+00")}',
        v,
    )
    assert scopes["The house has a large garden."] == ("{}", v)
    # the front matter's validity wins over the year the text names; 0: stated, not read
    assert scopes["The rent was paid in 1950 by somebody else."] == (
        '{["1916-01-01 00:00:00+00","1921-01-01 00:00:00+00")}',
        0,
    )


def test_reprocess_reads_what_was_not_read_and_leaves_stated_scopes(
    world: World, episode: tuple[str, UUID]
) -> None:
    group, episode_id = episode
    chunks = [
        {"text": "owned from 1811 to 1827"},  # not read (stored by an application that passed none)
        {"text": "the garden", "heading": "Garden (1990s)"},  # not read; its heading states a time
        {"text": "rented in 1916", "time_scope": [["2000-01-01", None]]},  # stated by the caller: stays
        {"text": "sold in 1934", "time_scope": [["1934-01-01", "1935-01-01"]],
         "time_scope_version": EXTRACTION_VERSION},  # read by this version: not read again
    ]  # fmt: skip
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select * from vera.store_chunks(%s, %s, %s)", (group, episode_id, Jsonb(chunks)))
        conn.commit()
    env = {"VERA_DB__DSN": world.db.dsn(APP_LOGIN), "VERA_API_KEY": world.a.owner_key}
    ran = CliRunner().invoke(
        main, ["reprocess", "--group", group, "--time-scopes"], env=env, catch_exceptions=False
    )
    assert ran.exit_code == 0, ran.output
    assert (
        ran.output.strip()
        == f"time scopes read again: 2 passages of {group} (reader version {EXTRACTION_VERSION})"
    )
    v = EXTRACTION_VERSION
    assert _scopes(world, group) == {
        "owned from 1811 to 1827": ('{["1811-01-01 00:00:00+00","1828-01-01 00:00:00+00")}', v),
        "the garden": ('{["1990-01-01 00:00:00+00","2000-01-01 00:00:00+00")}', v),
        "rented in 1916": ('{["2000-01-01 00:00:00+00",)}', 0),
        "sold in 1934": ('{["1934-01-01 00:00:00+00","1935-01-01 00:00:00+00")}', v),
    }  # fmt: skip
    again = CliRunner().invoke(
        main, ["reprocess", "--group", group, "--time-scopes"], env=env, catch_exceptions=False
    )
    assert "read again: 0 passages" in again.output
    refused = CliRunner().invoke(
        main, ["reprocess", "--group", group, "--time-scopes", "--no-wait"], env=env, catch_exceptions=False
    )
    assert refused.exit_code != 0
    assert refused.output.strip() == (
        "vera: error: --time-scopes reads here and now, with no job to queue: leave out --no-wait"
    )


def test_other_tenants_and_non_admins_cannot_read_or_set_a_groups_time_scopes(
    world: World, episode: tuple[str, UUID]
) -> None:
    group, episode_id = episode
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute(
            "select * from vera.store_chunks(%s, %s, %s)",
            (group, episode_id, Jsonb([{"text": "secret of 1999"}])),
        )
        conn.commit()
    with world.db.admin() as admin:
        [(chunk,)] = admin.execute(
            "select chunk_id from vera.chunks where group_id = %s", (group,)
        ).fetchall()
    item = [{"chunk_id": str(chunk), "time_scope": [], "time_scope_version": 1}]
    for key in (world.b.owner_key, world.a.viewer_key):  # another tenant's owner; a viewer of A
        with client_for(world, key) as vera, pytest.raises(PermissionDeniedError):
            vera.read_time_scopes(group)
        with caller(world.db, key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select vera.set_time_scopes(%s, %s)", (group, Jsonb(item)))
    # B's owner, in its own group, cannot reach A's passage by its id: nothing is written
    with caller(world.db, world.b.owner_key) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute("select vera.set_time_scopes(%s, %s)", (world.b.organisation, Jsonb(item)))
    assert refused.value.sqlstate == "VN001"
    assert _scopes(world, group) == {"secret of 1999": (None, None)}


def test_remembered_passages_carry_the_times_they_state(world: World, owner_a: VeraClient) -> None:
    done = owner_a.remember([
        {"role": "user", "content": "Who ran the plant from 1995 to 1999?"},
        {"role": "assistant", "content": "Mai Tran did; since 2001 it has been closed."},
    ])  # fmt: skip
    assert done.created and done.passages == 2
    group = done.group_id
    v = EXTRACTION_VERSION
    scopes = _scopes(world, group)  # the caller's own u: scope, which other tests write to as well
    assert {text: scopes[text] for text in scopes if "the plant" in text or "Mai Tran" in text} == {
        "Who ran the plant from 1995 to 1999?": ('{["1995-01-01 00:00:00+00","2000-01-01 00:00:00+00")}', v),
        "Mai Tran did; since 2001 it has been closed.": ('{["2001-01-01 00:00:00+00",)}', v),
    }
    # in SQL, one item per passage or nothing is recorded
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(
            "select * from vera.remember('one passage in 1995', time_scopes => %s)",
            (Jsonb([{"time_scope": []}, {"time_scope": []}]),),
        )
    assert refused.value.sqlstate == "22023"
    assert "one {" in str(refused.value) and "per passage (1 passages)" in str(refused.value)


def test_a_question_about_a_period_ranks_the_passage_of_that_period_first(
    world: World, owner_a: VeraClient, episode: tuple[str, UUID]
) -> None:
    group, episode_id = episode
    # the same words but the year; the question names neither year, so only the period tells them apart
    chunks = [
        {"text": "George Peter owned the house in 1840."},
        {"text": "George Peter owned the house in 1815."},
    ]
    owner_a.store_chunks(group, episode_id, [{**c, "time_scope": time_scope(c["text"]),
                                           "time_scope_version": EXTRACTION_VERSION} for c in chunks])  # fmt: skip
    asked = "Who owned the house from 1811 to 1820?"
    timeless = owner_a.search(asked, groups=[group], detect_time=False)
    assert [h.text for h in timeless] == [c["text"] for c in chunks]  # a tie, broken by position
    assert {h.signals.period for h in timeless} == {None} and timeless.during is None
    timed = owner_a.search(asked, groups=[group])
    assert timed.during is not None and (timed.during.start, timed.during.end) == (
        date(1811, 1, 1), date(1821, 1, 1))  # fmt: skip
    assert [h.text for h in timed] == [chunks[1]["text"], chunks[0]["text"]]
    assert [h.signals.period for h in timed] == [1.0, 0.0]
    # the other six signals are the same with and without the period
    assert [h.signals.relevance for h in timed] == [h.signals.relevance for h in reversed(timeless)]
    # in SQL, during is the period asked about; no during, no period signal, and the score of old
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select text, period, score from vera.search('George Peter owned the house', groups => array[%s],"
            " during => tstzrange('1811-01-01', '1821-01-01'))",
            (group,),
        ).fetchall()
        assert [(text, period) for text, period, _ in rows] == [
            (chunks[1]["text"], 1.0),
            (chunks[0]["text"], 0.0),
        ]
        plain = conn.execute(
            "select score, relevance * 0.40 + authority * 0.18 + verification * 0.12 + recency * 0.12"
            " + feedback * 0.08 + confidence * 0.10, period"
            " from vera.search('George Peter owned the house', groups => array[%s])",
            (group,),
        ).fetchall()
        assert all(period is None and score == pytest.approx(old, abs=1e-6) for score, old, period in plain)


def test_vera_search_asks_about_the_period_given_or_read_and_says_which(
    world: World, owner_a: VeraClient, episode: tuple[str, UUID]
) -> None:
    group, episode_id = episode
    chunks = [{"text": "Mary Lin ran the mill in 1840."}, {"text": "Mary Lin ran the mill in 1815."}]
    owner_a.store_chunks(group, episode_id, [{**c, "time_scope": time_scope(c["text"]),
                                           "time_scope_version": EXTRACTION_VERSION} for c in chunks])  # fmt: skip
    env = {"VERA_DB__DSN": world.db.dsn(APP_LOGIN), "VERA_API_KEY": world.a.owner_key}

    def search(*args: str) -> tuple[int, list[str]]:
        ran = CliRunner().invoke(main, ["search", *args, "--group", group], env=env, catch_exceptions=False)
        return ran.exit_code, [line.strip() for line in ran.output.strip().splitlines()]

    def first_hit(lines: list[str]) -> str:
        """The first hit's line (a "no good match" line may precede it)."""
        return next(line for line in lines if line.startswith("1. "))

    code, lines = search("Who ran the mill", "--during", "1811-01-01..1821-01-01")
    assert code == 0 and lines[0] == "asked about 1811-01-01 .. 1821-01-01"
    assert first_hit(lines).endswith(chunks[1]["text"])
    # words the query reader understands, and an explicit period wins over the query's own
    code, lines = search("Who ran the mill in the 1810s?", "--during", "from 1835 to 1845")
    assert code == 0 and lines[0] == "asked about 1835-01-01 .. 1846-01-01 (from 'from 1835 to 1845')"
    assert first_hit(lines).endswith(chunks[0]["text"])
    code, lines = search("Who ran the mill in the 1810s?")
    assert code == 0 and lines[0] == "asked about 1810-01-01 .. 1820-01-01 (from '1810s')"
    assert first_hit(lines).endswith(chunks[1]["text"])
    code, lines = search("Who ran the mill in the 1810s?", "--no-time-detection")
    assert code == 0 and not any("asked about" in line for line in lines)
    for bad, said in [
        ("2020-13-01..", "START..END takes ISO dates (YYYY-MM-DD), either may be empty"),
        ("2021-01-01..2020-01-01", "during must end after it starts: 2021-01-01 .. 2020-01-01"),
        ("soon", "no period in 'soon'"),
    ]:
        code, lines = search("mill", "--during", bad)
        assert code == 2 and said in lines[-1], lines


def test_an_as_of_before_anything_known_says_so(world: World, episode: tuple[str, UUID]) -> None:
    group, episode_id = episode
    empty = create_project(world, "time-scopes-empty")
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute(
            "select * from vera.store_chunks(%s, %s, %s)", (group, episode_id, Jsonb([{"text": "in 1995"}]))
        )
        notices: list[str] = []
        conn.add_notice_handler(lambda notice: notices.append(str(notice.message_primary)))
        found = conn.execute(
            "select * from vera.search('in 1995', groups => array[%s], as_of => '1996-01-01')", (group,)
        ).fetchall()
        assert found == []
        assert (
            len(notices) == 1 and "as_of is knowledge time; to ask about a period, pass during" in notices[0]
        )
        # the group existed before that as_of: its rows are read to see that none is that old
        with world.db.admin() as admin:
            admin.execute("update vera.groups set created_at = '1990-01-01' where group_id = %s", (group,))
        conn.execute(
            "select * from vera.search('in 1995', groups => array[%s], as_of => '1996-01-01')", (group,)
        )
        assert len(notices) == 2
        # an empty group is an empty memory, not an early as_of
        conn.execute(
            "select * from vera.search('in 1995', groups => array[%s], as_of => '1996-01-01')", (empty,)
        )
        assert len(notices) == 2
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "select * from vera.search('in 1995', groups => array[%s], during => 'empty')", (group,)
            )
        assert refused.value.sqlstate == "22023"


def test_passages_stored_through_the_client_carry_the_times_they_state(
    world: World, owner_a: VeraClient, episode: tuple[str, UUID]
) -> None:
    """Before, VeraClient.store_chunks stored no time scope: a period search found the passage
    without its period signal until `vera reprocess --time-scopes` ran."""
    group, episode_id = episode
    text = "The Hartley estate was held in trust from 1811 to 1827."
    stated = [["1900-01-01", "1901-01-01"]]
    owner_a.store_chunks(group, episode_id, [
        {"text": text},
        # a scope of the caller's own is kept as given (version 0: never read again)
        {"text": "The Hartley trust papers were filed in 1811.", "time_scope": stated},
    ])  # fmt: skip
    scopes = _scopes(world, group)
    assert scopes[text] == ('{["1811-01-01 00:00:00+00","1828-01-01 00:00:00+00")}', EXTRACTION_VERSION)
    assert scopes["The Hartley trust papers were filed in 1811."] == (
        '{["1900-01-01 00:00:00+00","1901-01-01 00:00:00+00")}', 0)  # fmt: skip
    found = owner_a.search(
        "Hartley estate trust", groups=[group], during=(date(1811, 1, 1), date(1828, 1, 1))
    )
    assert found[0].text == text
    assert found[0].signals.period == 1.0
