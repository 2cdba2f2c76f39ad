"""Feedback and calibration (sql/functions/190_feedback.sql): votes carry the
hit's signals computed by the database, one vote per principal, hit and
query; calibration derives weights by the mean-difference rule (held by the guards of
test_calibration_guards.py) and activates them only above the minimum sample count."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from pg_tests.support.searching import MODEL, embed, search
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source


@pytest.fixture(scope="module")
def group(world: World) -> str:
    """A project with a tier-1 and a tier-4-like (tier 3, reviewed) source about the same things."""
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        project = conn.execute(
            "select vera.create_group(%s, 'project', 'feedback')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        cmdb = register_source(conn, project, "cmdb", 1)
        wiki = register_source(conn, project, "wiki", 2)
        for source, name in ((cmdb, "export"), (wiki, "page")):
            episode, _, _ = record_episode(conn, project, source, name, name)
            publish(conn, project, episode, [
                claim(f"service-{i}", "owned by", f"team {name} {i}", fact_text=f"service-{i} owned by team {name} {i}",
                      embedding=embed(f"service-{i} owned by team {name} {i}"))
                for i in range(6)
            ], MODEL)  # fmt: skip
        conn.commit()
    return project


def _vote(conn: psycopg.Connection, hit: dict[str, Any], query: str, vote: str) -> dict[str, Any]:
    cursor = conn.execute(
        "select * from vera.record_feedback(%s, %s, %s, %s)", (hit["kind"], hit["item_id"], query, vote)
    )
    columns = [column.name for column in cursor.description or []]
    row = cursor.fetchone()
    assert row is not None
    return dict(zip(columns, row, strict=True))


def test_a_vote_stores_the_hits_signals_and_a_second_vote_replaces_it(world: World, group: str) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        hit = search(conn, "service-1 owned by", groups=[group])[0]
        first = _vote(conn, hit, "service-1 owned by", "up")
        assert first["created"] is True
        assert first["group_id"] == group
        assert first["signals"]["authority"] == pytest.approx(hit["authority"])
        assert first["signals"]["relevance"] == pytest.approx(hit["relevance"])
        again = _vote(conn, hit, "  Service-1   OWNED by ", "down")
        assert again["created"] is False
        assert again["feedback_id"] == first["feedback_id"]
        rows = conn.execute(
            "select vote, cardinality(signals) from vera.feedback where item_id = %s", (hit["item_id"],)
        ).fetchall()
        assert rows == [(-1, 7)]  # the seven signals (period null: the query asked about no period)


def test_votes_move_the_feedback_signal(world: World, group: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        hit = search(conn, "service-2 owned by", groups=[group])[0]
        _vote(conn, hit, "service-2 owned by", "up")
        again = next(
            h for h in search(conn, "service-2 owned by", groups=[group]) if h["item_id"] == hit["item_id"]
        )
        assert again["feedback"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("vote", "query", "sqlstate", "message"),
    [
        ("sideways", "service-3", "22023", "vote must be 'up' or 'down'"),
        ("up", "  ", "22023", "needs the query"),
        ("up", "something else entirely", "VN001", "not among the first 100 hits"),
    ],
)
def test_bad_votes_are_refused(
    world: World, group: str, vote: str, query: str, sqlstate: str, message: str
) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        hit = search(conn, "service-3 owned by", groups=[group])[0]
        with pytest.raises(psycopg.Error, match=message) as error:
            _vote(conn, hit, query, vote)
        assert error.value.sqlstate == sqlstate


def test_another_tenant_cannot_vote_on_a_hit_it_cannot_see(world: World, group: str) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        hit = search(conn, "service-4 owned by", groups=[group])[0]
    with caller(world.db, world.b.owner_key) as conn, pytest.raises(psycopg.Error) as error:
        _vote(conn, hit, "service-4 owned by", "up")
    assert error.value.sqlstate == "VN001"


def _forget_votes(world: World, group: str) -> None:
    with world.db.admin() as admin:
        admin.execute("delete from vera.feedback where group_id = %s", (group,))


def _calibrate(conn: psycopg.Connection, group: str, min_samples: int | None = None) -> dict[str, Any]:
    cursor = conn.execute("select * from vera.calibrate_weights(%s, %s)", (group, min_samples))
    columns = [column.name for column in cursor.description or []]
    row = cursor.fetchone()
    assert row is not None
    return dict(zip(columns, row, strict=True))


def _vote_for_authority(conn: psycopg.Connection, group: str) -> None:
    """Helpful hits are the tier-1 ones, unhelpful the tier-2 ones."""
    for i in range(6):
        query = f"service-{i} owned by team"
        for hit in search(conn, query, groups=[group], k=20):
            if hit["subject"] == f"service-{i}":
                _vote(conn, hit, query, "up" if hit["citation"]["tier"] == 1 else "down")


def test_calibration_follows_the_mean_difference_rule_and_waits_for_enough_samples(
    world: World, group: str
) -> None:
    _forget_votes(world, group)
    with caller(world.db, world.a.owner_key) as conn:
        _vote_for_authority(conn, group)
        # the bare rule: no floor, no bound on a step (the guards: test_calibration_guards.py)
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_floor', '0')", (group,))
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_max_step', '1')", (group,))
        few = _calibrate(conn, group)  # default minimum: 50 votes
        assert few["persisted"] is False
        assert few["weight_set_id"] is None
        assert few["sample_count"] == 12
        assert (few["helpful"], few["unhelpful"]) == (6, 6)
        # authority alone separates helpful (1.00) from unhelpful (0.85) hits
        assert few["separation"]["authority"] == pytest.approx(0.15, abs=1e-4)
        assert few["weights"]["authority"] > 0
        assert sum(few["weights"][name] for name in few["separation"]) == pytest.approx(1.0, abs=1e-4)
        assert all(few["weights"][name] >= 0 for name in few["separation"])
        for name, gap in few["separation"].items():
            if gap is not None and gap <= 0:
                assert few["weights"][name] == 0
        # no vote was on a search that asked about a period: the period keeps its default share
        assert few["separation"]["period"] is None
        assert few["weights"]["period"] == pytest.approx(0.2)
        assert conn.execute("select vera.active_weights(%s) ->> 'relevance'", (group,)).fetchone() == (
            "0.32",
        )

        kept = _calibrate(conn, group, 10)
        assert kept["persisted"] is True
        active = conn.execute("select vera.active_weights(%s)", (group,)).fetchone()[0]  # type: ignore[index]
        assert active["weight_set_id"] == str(kept["weight_set_id"])
        assert active["authority"] == pytest.approx(kept["weights"]["authority"], abs=1e-5)
        # the next search ranks with the new set, no restart
        hit = search(conn, "service-1 owned by team", groups=[group])[0]
        # no period asked: the six share the period's weight in proportion
        six = [name for name in few["separation"] if name != "period"]
        expected = sum(hit[name] * active[name] for name in six) / (1 - active["period"])
        assert hit["period"] is None and hit["score"] == pytest.approx(expected, abs=1e-4)
        assert hit["citation"]["tier"] == 1

        conn.execute("select vera.reset_weights(%s)", (group,))
        assert conn.execute("select vera.active_weights(%s) ->> 'relevance'", (group,)).fetchone() == (
            "0.32",
        )


def test_the_minimum_is_a_group_setting(world: World, group: str) -> None:
    _forget_votes(world, group)
    with caller(world.db, world.a.owner_key) as conn:
        _vote_for_authority(conn, group)
        conn.execute("select vera.set_setting(%s, 'ranking.calibration_min_samples', '12')", (group,))
        assert _calibrate(conn, group)["persisted"] is True
        with pytest.raises(psycopg.Error, match="invalid value"):
            conn.execute("select vera.set_setting(%s, 'ranking.calibration_min_samples', '0.5')", (group,))


def test_one_sided_feedback_persists_nothing(world: World, group: str) -> None:
    _forget_votes(world, group)
    with caller(world.db, world.a.owner_key) as conn:
        hit = search(conn, "service-5 owned by", groups=[group])[0]
        _vote(conn, hit, "service-5 owned by", "up")
        result = _calibrate(conn, group, 1)
        assert result["persisted"] is False
        assert result["weights"] is None


def test_only_admins_calibrate(world: World, group: str) -> None:
    with caller(world.db, world.a.viewer_key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        _calibrate(conn, group, 1)
    with caller(world.db, world.b.owner_key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        _calibrate(conn, group, 1)


def test_another_tenant_never_sees_a_groups_weights(world: World, group: str) -> None:
    _forget_votes(world, group)
    with caller(world.db, world.a.owner_key) as conn:
        _vote_for_authority(conn, group)
        assert _calibrate(conn, group, 1)["persisted"] is True
        conn.commit()
    try:
        with caller(world.db, world.b.owner_key) as conn:
            # RLS hides the active set: tenant B reads the defaults
            assert conn.execute(
                "select vera.active_weights(%s) ->> 'weight_set_id'", (group,)
            ).fetchone() == (None,)
        with caller(world.db, world.a.viewer_key) as conn:
            assert conn.execute(
                "select vera.active_weights(%s) ->> 'weight_set_id'", (group,)
            ).fetchone() != (None,)
    finally:
        with caller(world.db, world.a.owner_key) as conn:
            conn.execute("select vera.reset_weights(%s)", (group,))
            conn.commit()


@pytest.mark.parametrize(
    ("up", "down"),
    [
        # one signal separates, by a gap whose 6-digit rounding goes up (the reported 1.000008); the
        # votes were on searches that asked about no period (its signal null)
        ([0.5, 0.5, 0.5, 0.5, 0.6234567, 0.5, None], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, None]),
        ([0.5, 0.5, 0.5, 0.5, 0.5000045, 0.5, None], [0.5, 0.5, 0.5, 0.5, 0.4999999, 0.5, None]),
        # several separate by gaps that all round up
        ([0.1234567, 0.2345678, 0.3456789, 0.5, 0.5, 0.5, None], [0.0, 0.0, 0.0, 0.6, 0.6, 0.6, None]),
        ([0.3333337, 0.3333337, 0.3333337, 0.1, 0.1, 0.1, None], [0.0, 0.0, 0.0, 0.1, 0.1, 0.1, None]),
        # the period separates too, when the votes were on searches that asked about one
        ([0.5, 0.5, 0.5, 0.5, 0.6, 0.5, 1.0], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.0]),
    ],
)
def test_calibrated_weights_stay_in_range_and_sum_to_one(
    world: World, group: str, up: list[float | None], down: list[float | None]
) -> None:
    _forget_votes(world, group)
    try:
        with world.db.admin() as admin:
            for vote, signals in ((1, up), (-1, down)):
                admin.execute(
                    "insert into vera.feedback (group_id, principal_id, item_kind, item_id, query_text, "
                    "query_sha256, vote, signals) values (%s, %s, 'fact', gen_random_uuid(), 'q', "
                    "sha256(gen_random_uuid()::text::bytea), %s, %s::real[])",
                    (group, world.a.owner, vote, signals),
                )
        with caller(world.db, world.a.owner_key) as conn:
            kept = _calibrate(conn, group, 1)
            assert kept["persisted"] is True
            names = list(kept["separation"])
            assert all(0 <= kept["weights"][name] <= 1 for name in names)
            assert sum(kept["weights"][name] for name in names) == pytest.approx(1.0, abs=1e-5)
            if up[-1] is None:  # nothing told about the period: it keeps the active set's share
                assert kept["weights"]["period"] == pytest.approx(0.2)
            else:
                assert kept["weights"]["period"] > 0.2
            active = conn.execute("select vera.active_weights(%s)", (group,)).fetchone()[0]  # type: ignore[index]
            assert all(0 <= active[name] <= 1 for name in names)
    finally:
        _forget_votes(world, group)
