"""Stage 2 of search, the blend (sql/functions/178_blend.sql): what it reads of each
candidate (vera.candidate_signals: authority, verification, validity, the last
confirmation) and how it weighs them (vera.blend: recency's half-life, authority between
contradicting values). The order of equal scores: test_search_ties.py."""

from __future__ import annotations

import math

import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.search_corpus import Corpus, build_corpus
from pg_tests.support.searching import search
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source


@pytest.fixture(scope="module")
def corpus(world: World) -> Corpus:
    return build_corpus(world)


def test_a_tier_one_fact_outranks_a_contradicting_tier_four_proposal(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        hits = [h for h in search(conn, "where does billing-api run", k=20, groups=[corpus.group, corpus.personal])
                if h["predicate"] == "RUNS_ON"]  # fmt: skip
    assert [h["object"] for h in hits] == ["k8s-new", "heroku"]


def test_recency_decays_with_the_half_life(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        hit = next(h for h in search(conn, "billing-api runs on", groups=[corpus.group], as_of="2026-10-01")
                   if h["object"] == "k8s-new")  # fmt: skip
        slow = next(h for h in search(conn, "billing-api runs on", groups=[corpus.group], as_of="2026-10-01",
                                      weights=Jsonb({"relevance": 0.4, "recency": 0.6, "half_life": "60 days"}))
                    if h["object"] == "k8s-new")  # fmt: skip
    age_days = 30  # valid from 2026-09-01, seen as of 2026-10-01
    assert hit["recency"] == pytest.approx(math.exp(-math.log(2) * age_days / 30), abs=1e-4)
    assert slow["recency"] == pytest.approx(math.exp(-math.log(2) * age_days / 60), abs=1e-4)


def test_recency_counts_from_the_last_confirmation_by_the_source(world: World) -> None:
    """A long-standing value that a fresh export states again has not aged;
    one last stated long ago has (the ranking rule of search version 2)."""
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', 'confirmation')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        cmdb = register_source(conn, group, "cmdb", 1)
        fresh, _, _ = record_episode(conn, group, cmdb, "today.csv", "fresh")  # observed now
        stale, _, _ = record_episode(conn, group, cmdb, "old.csv", "stale", observed_at="2025-02-01")
        publish(conn, group, fresh, [claim("ledger-db", "runs on", "db-cluster-a", valid_from="2025-01-01")])
        publish(conn, group, stale, [claim("queue-db", "runs on", "db-cluster-b", valid_from="2025-01-01")])
        now = {h["subject"]: h["recency"] for h in search(conn, "runs on", groups=[group])}
        then = {
            h["subject"]: h["recency"] for h in search(conn, "runs on", groups=[group], as_of="2025-01-31")
        }
    assert now["ledger-db"] == pytest.approx(1.0, abs=1e-3)
    assert now["queue-db"] < 1e-5
    # as of an instant before either confirmation, both count from the instant: the latest word on it
    assert then == {"ledger-db": pytest.approx(1.0), "queue-db": pytest.approx(1.0)}


def test_text_of_informational_and_unverified_sources_awaits_verification(world: World) -> None:
    """Graded as claims are: text of tier 1-2 sources is verified automatically
    (0.8); in the proposer's own u: scope tier 3-4 text answers, awaiting
    verification (0.5). (Who sees tier 3-4 text in a shared scope:
    test_passage_guard.py.)"""
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', 'passage grading')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        graded = {}
        for scope in (group, world.a.owner_personal):
            for tier in (1, 2, 3, 4):
                source = register_source(conn, scope, f"tier {tier}", tier)
                episode, _, _ = record_episode(conn, scope, source, "page.md", f"tier {tier}")
                conn.execute("select vera.store_chunks(%s, %s, %s)",
                             (scope, episode, Jsonb([{"text": f"walrus note of tier {tier}"}])))  # fmt: skip
            graded[scope] = {
                h["citation"]["tier"]: (h["verification"], h["citation"]["verification"])
                for h in search(conn, "walrus", groups=[scope])
            }
    # in the shared scope the owner, who stored them, sees its own tier-4 proposal; tier 3 awaits review
    assert graded[group] == {
        1: (pytest.approx(0.8), "auto"),
        2: (pytest.approx(0.8), "auto"),
        4: (pytest.approx(0.5), "pending"),
    }
    assert graded[world.a.owner_personal] == {
        1: (pytest.approx(0.8), "auto"),
        2: (pytest.approx(0.8), "auto"),
        3: (pytest.approx(0.5), "pending"),
        4: (pytest.approx(0.5), "pending"),
    }
