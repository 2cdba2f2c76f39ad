"""Publishing claims (sql/functions/130_publish.sql): grading by trust tier,
the contamination guard, the ontology, evidence, re-extraction, bad input."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import SQL_ERRORS, claim, facts_of, publish, record_episode, register_source


@pytest.mark.parametrize(
    ("tier", "lifecycle", "authority", "verification"),
    [
        (1, "published", 1.00, "auto"),
        (2, "published", 0.85, "auto"),
        (3, "pending_review", 0.70, "pending"),
        (4, "proposal", 0.40, "pending"),
    ],
)
def test_trust_tier_decides_lifecycle_and_authority(
    world: World, tier: int, lifecycle: str, authority: float, verification: str
) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, f"tier {tier}", tier)
        episode, _, _ = record_episode(conn, world.a.organisation, source, "doc.md", "content")
        [row] = publish(
            conn, world.a.organisation, episode, [claim("payments-api", "runs on", "cluster blue")]
        )
        assert row["lifecycle"] == lifecycle
        [fact] = facts_of(conn, "f.fact_id = %s", (row["fact_id"],))
        assert fact["authority"] == pytest.approx(authority)
        assert fact["verification"] == verification
        assert fact["predicate"] == "RUNS_ON"
        assert fact["fact_text"] == "payments-api runs on cluster blue"
        if lifecycle == "proposal":
            # the contamination guard: not in the shared scope, but in the proposer's u: scope
            assert row["fact_group_id"] == world.a.owner_personal
            assert fact["proposed_for"] == world.a.organisation
            assert fact["source_id"] is None
            assert fact["origin"]["episode_id"] == str(episode)
        else:
            assert row["fact_group_id"] == world.a.organisation
            assert (fact["source_id"], fact["episode_id"]) == (source, episode)


def test_unverified_claim_from_a_trusted_source_becomes_a_proposal(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "cmdb", 1, kind="cmdb")
        episode, _, _ = record_episode(conn, world.a.organisation, source, "row-1", "x")
        rows = publish(
            conn,
            world.a.organisation,
            episode,
            [
                claim("db-1", "owned by", "team red"),
                claim("db-1", "owned by", "team blue", verification="pending"),
            ],
        )
        assert [(r["lifecycle"], r["fact_group_id"]) for r in rows] == [
            ("published", world.a.organisation),
            ("proposal", world.a.owner_personal),
        ]


def test_agents_own_claim_without_episode_is_a_proposal(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        [row] = publish(conn, world.a.workspace, None, [claim("payments-api", "runs on", "cluster pink")])
        assert row["lifecycle"] == "proposal"
        assert row["fact_group_id"] == world.a.owner_personal


def test_claims_in_ones_own_personal_scope_are_published(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        [row] = publish(conn, world.a.owner_personal, None, [claim("my laptop", "runs", "linux")])
        assert (row["lifecycle"], row["fact_group_id"]) == ("published", world.a.owner_personal)


def test_predicates_are_normalised_and_join_the_ontology(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "docs-2", 1)
        episode, _, _ = record_episode(conn, world.a.organisation, source, "a.md", "a")
        publish(
            conn,
            world.a.organisation,
            episode,
            [
                claim("svc", "deployedVia", "argo"),
                claim("svc", "Hosted-In", "eu-west", functional=True),
                claim("svc", "  team  owner ", "red"),
            ],
        )
        ontology = dict(
            conn.execute(
                "select name, cardinality from vera.predicates where group_id = %s and name <> 'RUNS_ON'",
                (world.a.organisation,),
            ).fetchall()
        )
        assert ontology == {"DEPLOYED_VIA": "multi", "HOSTED_IN": "functional", "TEAM_OWNER": "multi"}


def test_duplicates_in_a_batch_become_one_fact(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "dups", 1)
        episode, _, _ = record_episode(conn, world.a.organisation, source, "a.md", "a")
        rows = publish(
            conn,
            world.a.organisation,
            episode,
            [claim("Svc A", "uses", "kafka"), claim("svc a", "USES", "kafka")],
        )
        assert rows[0]["fact_id"] == rows[1]["fact_id"]


def test_evidence_chunk_is_linked(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        source = register_source(conn, world.a.organisation, "runbooks", 1)
        episode, _, _ = record_episode(conn, world.a.organisation, source, "rb.md", "rb")
        conn.execute(
            "select * from vera.store_chunks(%s, %s, %s)",
            (
                world.a.organisation,
                episode,
                Jsonb([{"text": "intro"}, {"text": "payments-api runs on blue"}]),
            ),
        )
        [row] = publish(
            conn,
            world.a.organisation,
            episode,
            [claim("payments-api", "runs on", "blue", chunk=1, evidence_start=0, evidence_end=25)],
        )
        [fact] = facts_of(conn, "f.fact_id = %s", (row["fact_id"],))
        chunk_text = conn.execute(
            "select text from vera.chunks where chunk_id = %s", (fact["chunk_id"],)
        ).fetchone()
        assert chunk_text == ("payments-api runs on blue",)
        with pytest.raises(SQL_ERRORS, match="chunk 7 is not a chunk") as raised:
            publish(conn, world.a.organisation, episode, [claim("x", "y", "z", chunk=7)])
        assert raised.value.sqlstate == "22023"


def test_a_new_version_of_a_record_supersedes_what_the_old_one_said(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        org = world.a.organisation
        source = register_source(conn, org, "wiki", 2)
        v1, version1, _ = record_episode(conn, org, source, "page", "one", observed_at="2026-01-01")
        publish(conn, org, v1, [claim("api", "language", "go"), claim("api", "owner", "team red")])
        v2, version2, created = record_episode(conn, org, source, "page", "two", observed_at="2026-02-01")
        assert (version1, version2, created) == (1, 2, True)
        publish(conn, org, v2, [claim("api", "language", "go")])
        current = facts_of(
            conn, "f.group_id = %s and f.lifecycle = 'published' and e.canonical_name = 'api'", (org,)
        )
        assert [(f["predicate"], f["object_value"], f["episode_id"]) for f in current] == [
            ("LANGUAGE", "go", v2)
        ]
        # an unchanged restatement keeps the time it was first observed
        assert str(current[0]["valid_from"].date()) == "2026-01-01"
        retired = facts_of(conn, "f.group_id = %s and f.episode_id = %s", (org, v1))
        assert {(f["lifecycle"], f["retired_at"] is not None) for f in retired} == {("superseded", True)}


BAD_CLAIMS = [
    ([{"subject": " ", "predicate": "p", "object": "o"}], "22023", "claim 0: subject is empty"),
    ([claim("s", "p", "o"), {"subject": "s", "object": "o"}], "22023", "claim 1: predicate is empty"),
    ([claim("s", "!!!", "o")], "22023", "has no UPPER_SNAKE form"),
    ([claim("s", "p", "")], "22023", "object is empty"),
    ([claim("s" * 501, "p", "o")], "22001", "subject is over 500 characters"),
    ([claim("s", "p", "o" * 2001)], "22001", "object is over 2000 characters"),
    ([claim("s", "p", "o", confidence=1.5)], "22023", "confidence must be a number from 0 to 1"),
    ([claim("s", "p", "o", verification="trust me")], "22023", "verification must be"),
    ([claim("s", "p", "o", valid_from="yesterday-ish")], "22023", "fields of the right types"),
    ([claim("s", "p", "o", valid_from="2026-02-01", valid_to="2026-01-01")], "22023", "valid_to is before"),
    ([claim("s", "p", "o", embedding=[1, 2])], "22023", "embedding_model is required"),
    ([claim("s", "p", "o", embedding=[1, "x"])], "VE002", "invalid fact embedding"),
    ([claim("s", "p", "o", embedding=[1e39, 1])], "VE002", "invalid fact embedding"),
    (
        [claim("s", "p", "o", embedding=[1, 2]), claim("t", "p", "o", embedding=[1, 2, 3])],
        "VE001",
        "different dimensions",
    ),
    ("not an array", "22023", "claims must be a JSON array"),
]


@pytest.mark.parametrize(("claims", "sqlstate", "message"), BAD_CLAIMS)
def test_bad_claims_are_refused_and_nothing_is_written(
    world: World, claims, sqlstate: str, message: str
) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        before = conn.execute("select count(*) from vera.facts").fetchone()
        conn.execute("savepoint before_publish")
        # the SQL function itself, so that even what no Python caller would send is refused
        with pytest.raises(psycopg.Error, match=message) as raised:
            conn.execute(
                "select * from vera.publish_claims(%s, null, %s)", (world.a.organisation, Jsonb(claims))
            )
        assert raised.value.sqlstate == sqlstate
        assert "\n" not in raised.value.diag.message_primary
        conn.execute("rollback to savepoint before_publish")
        assert conn.execute("select count(*) from vera.facts").fetchone() == before


def test_too_many_claims_are_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(SQL_ERRORS) as raised:
        publish(conn, world.a.organisation, None, [claim("s", "p", str(i)) for i in range(10001)])
    assert raised.value.sqlstate == "54000"


def test_dimension_differing_from_the_pin_is_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        publish(
            conn, world.a.owner_personal, None, [claim("s", "p", "o", embedding=[0.1, 0.2, 0.3])], "toy-3"
        )
        pinned = conn.execute("select embedding_model, embedding_dim from vera.groups where group_id = %s",
                              (world.a.owner_personal,)).fetchone()  # fmt: skip
        assert pinned == ("toy-3", 3)
        with pytest.raises(SQL_ERRORS, match="pinned to embedding model toy-3") as raised:
            publish(
                conn, world.a.owner_personal, None, [claim("s", "p", "o2", embedding=[0.1, 0.2])], "toy-3"
            )
        assert raised.value.sqlstate == "VE001"


@pytest.mark.parametrize("who", ["viewer", "other tenant", "unauthenticated"])
def test_claims_into_a_group_the_caller_cannot_write_are_refused(world: World, who: str) -> None:
    key = {"viewer": world.a.viewer_key, "other tenant": world.b.owner_key, "unauthenticated": None}[who]
    with caller(world.db, key) as conn, pytest.raises(SQL_ERRORS) as raised:
        publish(conn, world.a.organisation, None, [claim("s", "p", "o")])
    assert raised.value.sqlstate in {"42501", "VA005"}


def test_unknown_episode_is_refused(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(SQL_ERRORS) as raised:
        publish(conn, world.a.organisation, world.a.owner, [claim("s", "p", "o")])
    assert raised.value.sqlstate == "VN001"


def test_episode_of_another_tenant_is_unknown(world: World) -> None:
    with world.db.admin() as admin:
        b_episode = admin.execute("select episode_id from vera.episodes where group_id = %s limit 1",
                                  (world.b.organisation,)).fetchone()[0]  # type: ignore[index]  # fmt: skip
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(SQL_ERRORS) as raised:
        publish(conn, world.a.organisation, b_episode, [claim("s", "p", "o")])
    assert raised.value.sqlstate == "VN001"
