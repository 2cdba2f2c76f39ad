"""Review (sql/functions/140_review.sql): admins approve or reject pending
claims and proposals made for their scope; every decision is audited."""

from __future__ import annotations

import psycopg
import pytest

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, facts_of, publish, record_episode, register_source


def _audit(conn: psycopg.Connection, group: str, action: str) -> list[dict[str, object]]:
    return [row[0] for row in conn.execute(
        "select detail from vera.audit_log where group_id = %s and action = %s", (group, action))]  # fmt: skip


def test_approving_a_pending_claim_publishes_it_human_verified(world: World) -> None:
    org = world.a.organisation
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, org, "forum", 3)
        episode, _, _ = record_episode(conn, org, source, "thread-1", "t")
        [row] = publish(conn, org, episode, [claim("billing", "owned by", "team green")])
        waiting = conn.execute("select fact_id, lifecycle from vera.pending_reviews(%s)", (org,)).fetchall()
        assert (row["fact_id"], "pending_review") in waiting
        [result] = conn.execute("select * from vera.review_claim(%s, %s, 'approve', 'checked with the team')",
                                (org, row["fact_id"])).fetchall()  # fmt: skip
        assert result == (row["fact_id"], org, "published")
        [fact] = facts_of(conn, "f.fact_id = %s", (row["fact_id"],))
        assert (fact["verification"], fact["reviewed_by"]) == ("human_verified", world.a.owner)
        assert fact["authority"] == pytest.approx(0.70)
        [detail] = _audit(conn, org, "claim.approve")
        assert detail["note"] == "checked with the team"


def test_approving_a_proposal_copies_it_into_the_shared_scope(world: World) -> None:
    org = world.a.organisation
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, org, "slack", 4, kind="slack")
        episode, _, _ = record_episode(conn, org, source, "msg-1", "m")
        [row] = publish(conn, org, episode, [claim("search-api", "runs on", "cluster pink")])
        assert row["fact_group_id"] == world.a.owner_personal
        [result] = conn.execute(
            "select * from vera.review_claim(%s, %s, 'approve')", (org, row["fact_id"])
        ).fetchall()
        published_id, group, lifecycle = result
        assert (group, lifecycle) == (org, "published")
        [copy] = facts_of(conn, "f.group_id = %s and f.fact_id = %s", (org, published_id))
        assert (copy["subject"], copy["object_value"], copy["verification"]) == (
            "search-api", "cluster pink", "human_verified")  # fmt: skip
        assert (copy["source_id"], copy["episode_id"]) == (source, episode)
        [proposal] = facts_of(conn, "f.fact_id = %s", (row["fact_id"],))
        assert proposal["lifecycle"] == "accepted"


def test_rejecting_a_proposal(world: World) -> None:
    org = world.a.organisation
    with caller(world.db, world.a.owner_key) as conn:
        [row] = publish(conn, org, None, [claim("search-api", "runs on", "a toaster")])
        conn.execute("select * from vera.review_claim(%s, %s, 'reject', 'no')", (org, row["fact_id"]))
        [proposal] = facts_of(conn, "f.fact_id = %s", (row["fact_id"],))
        assert proposal["lifecycle"] == "rejected"
        assert _audit(conn, org, "claim.reject")[0]["note"] == "no"
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("select * from vera.review_claim(%s, %s, 'approve')", (org, row["fact_id"]))
        assert raised.value.sqlstate == "VN001"


def test_an_admin_sees_proposals_made_for_the_scope_from_others(world: World) -> None:
    """The service account proposes; the owner of the scope reviews."""
    workspace = world.a.workspace
    with world.db.connect("vera_gateway") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.service,))
        [row] = publish(conn, workspace, None, [claim("ingest-bot", "saw", "an outage")])
        conn.commit()
    with caller(world.db, world.a.owner_key) as conn:
        waiting = {r[0] for r in conn.execute("select fact_id from vera.pending_reviews(%s)", (workspace,))}
        assert row["fact_id"] in waiting
        conn.execute("select * from vera.review_claim(%s, %s, 'reject')", (workspace, row["fact_id"]))
        conn.commit()
    with caller(world.db, world.a.viewer_key) as conn:
        # a viewer of the organisation does not see the service account's proposals
        assert facts_of(conn, "f.fact_id = %s", (row["fact_id"],)) == []


@pytest.mark.parametrize("who", ["viewer", "other tenant"])
def test_review_by_a_non_admin_is_refused(world: World, who: str) -> None:
    org = world.a.organisation
    with caller(world.db, world.a.owner_key) as conn:
        [row] = publish(conn, org, None, [claim("x", "is", "y")])
        conn.commit()
    key = world.a.viewer_key if who == "viewer" else world.b.owner_key
    with caller(world.db, key) as conn:
        for statement in ("select * from vera.review_claim(%s, %s, 'approve')",):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(statement, (org, row["fact_id"]))  # type: ignore[arg-type]
            assert raised.value.sqlstate == "42501"
            conn.rollback()
            conn.execute("select vera.authenticate(%s)", (key,))
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("select * from vera.pending_reviews(%s)", (org,))
        assert raised.value.sqlstate == "42501"


def test_unknown_decision_is_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(
            "select * from vera.review_claim(%s, gen_random_uuid(), 'maybe')", (world.a.organisation,)
        )
    assert raised.value.sqlstate == "22023"
