"""BM25 term statistics (sql/functions/165_term_stats.sql, 170_ranking.sql,
177_lexical_candidates.sql, 200_snapshots.sql) against a recount from scratch: exact
after every kind of write, concurrent writers included; erasure leaves no
word behind, snapshots included; one tenant's writes never move another's
scores; and MaxScore's candidate generation returns the exact BM25 top n of
passages, and of facts unless a round is cut at the budget (then exact
scores from at most the budget of rows a round)."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.databases import Database
from pg_tests.support.searching import search
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import (
    claim,
    facts_of,
    functional_project,
    publish,
    record_episode,
    register_source,
)

# The documents the statistics count (165_term_stats.sql): facts that search
# may return at some instant, passages published or proposed of an episode
# not retracted.
COUNTED = {
    "fact": """select f.tsv from vera.facts f
                where f.group_id = any (%(groups)s) and f.lifecycle in ('published', 'superseded', 'proposal')""",
    "passage": """select c.tsv from vera.chunks c
                   join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                  where c.group_id = any (%(groups)s) and c.lifecycle in ('published', 'proposal')
                    and e.status <> 'retracted'""",
}

Stats = dict[str, tuple[int, int]]


def recount(admin: psycopg.Connection, groups: list[str], kind: str) -> Stats:
    """The statistics from scratch: per lexeme its documents and occurrences; '' the corpus,
    a document's length being its distinct words (length(tsv), as vera.bm25_score counts it)."""
    rows = admin.execute(
        f"""with docs as ({COUNTED[kind]})
            select u.lexeme, count(*), sum(cardinality(u.positions)) from docs d, unnest(d.tsv) u group by u.lexeme
            union all
            select '', count(*), coalesce(sum(length(d.tsv)), 0) from docs d""",
        {"groups": groups},
    ).fetchall()
    return {term: (int(documents), int(tokens)) for term, documents, tokens in rows}


def stored(admin: psycopg.Connection, groups: list[str], kind: str) -> Stats:
    """vera.term_statistics over every term the tables or the documents hold; terms that
    no document holds (net 0 documents and 0 tokens) are left out."""
    rows = admin.execute(
        f"""select t.term, t.documents, t.tokens
              from vera.term_statistics(%(groups)s, %(kind)s::vera.item_kind, array(
                   select s.term from vera.term_stats s where s.group_id = any (%(groups)s) and s.kind = %(kind)s
                   union select c.term from vera.term_stat_changes c
                          where c.group_id = any (%(groups)s) and c.kind = %(kind)s
                   union select u.lexeme from ({COUNTED[kind]}) d, unnest(d.tsv) u)) t""",
        {"groups": groups, "kind": kind},
    ).fetchall()
    return {term: (int(d), int(t)) for term, d, t in rows if term == "" or (d, t) != (0, 0)}


def assert_exact(database: Database, step: str, *groups: str) -> None:
    with database.admin() as admin:
        for group in groups:
            for kind in ("fact", "passage"):
                assert stored(admin, [group], kind) == recount(admin, [group], kind), (
                    f"{step}: {group} {kind}"
                )


def words_stored(admin: psycopg.Connection, word: str) -> dict[str, int]:
    """Rows holding `word` as a term, per statistics table."""
    return {
        table: admin.execute(f"select count(*) from vera.{table} where term = %s", (word,)).fetchone()[0]  # type: ignore[index]
        for table in ("term_stats", "term_stat_changes", "snapshot_term_stats")
    }


@contextmanager
def committed(world: World, key: str | None = None) -> Iterator[psycopg.Connection]:
    """A caller's transaction (the owner of tenant A unless told), committed when the block ends."""
    with caller(world.db, key or world.a.owner_key) as conn:
        yield conn
        conn.commit()


def store_chunks(
    conn: psycopg.Connection, group: str, episode: UUID, chunks: list[dict[str, Any]]
) -> list[UUID]:
    rows = conn.execute(
        "select * from vera.store_chunks(%s, %s, %s)", (group, episode, Jsonb(chunks))
    ).fetchall()
    return [chunk for _, chunk in sorted(rows)]


# ---------------------------------------------------------------- 1. exact under every write


def test_statistics_are_exact_after_every_write(world: World) -> None:
    personal = world.a.owner_personal
    with committed(world) as conn:
        group = functional_project(conn, world.a.organisation, "stats-exact")
        cmdb = register_source(conn, group, "cmdb", 1, kind="cmdb")
        wiki = register_source(conn, group, "wiki", 2)
        forum = register_source(conn, group, "forum", 3)
        chat = register_source(conn, group, "chat", 4, kind="slack")

    def check(step: str) -> None:
        assert_exact(world.db, step, group, personal)

    check("empty project")

    with committed(world) as conn:
        export, _, _ = record_episode(conn, group, cmdb, "export", "v1")
        publish(conn, group, export, [
            claim("billing-api", "runs on", "cluster blue", valid_from="2026-01-01"),
            claim("billing-api", "owned by", "team payments",
                  fact_text="billing-api is owned by team payments, team payments on call"),
        ])  # fmt: skip
    check("claims published")

    with committed(world) as conn:
        publish(
            conn, group, export, [claim("billing-api", "runs on", "cluster green", valid_from="2026-03-01")]
        )
        assert [f["object_value"] for f in facts_of(conn, "f.group_id = %s and f.lifecycle = 'superseded'",
                                                    (group,))] == ["cluster blue"]  # fmt: skip
    check("functional value superseded")

    with committed(world) as conn:
        publish(conn, group, export, [
            claim(f"service-{i}", "depends on", f"database {i % 7}",
                  fact_text=f"service-{i} depends on database {i % 7} and database replica {i % 3}")
            for i in range(200)
        ])  # fmt: skip
    check("a batch of 200 claims")

    with committed(world) as conn:
        store_chunks(conn, group, export, [{"text": "the export lists billing-api on cluster blue"}])
        page, _, _ = record_episode(conn, group, wiki, "runbook.md", "r1")
        publish(conn, group, page, [claim("billing-api", "documented in", "the runbook")])
        store_chunks(conn, group, page, [
            {"heading": "Restart", "text": "restart the billing pods, then restart the billing workers"},
            {"heading": "Escalation", "text": "page team payments"},
            {"text": "nothing to see"},
        ])  # fmt: skip
    check("passages stored")

    with committed(world) as conn:  # the same record again: one text changed, one unchanged
        store_chunks(conn, group, page, [
            {"heading": "Restart", "text": "restart the billing pods, then restart the billing workers"},
            {"heading": "Escalation", "text": "page team payments, then the head of payments"},
            {"text": "nothing to see"},
        ])  # fmt: skip
    check("passages stored again with one text changed")

    with committed(world) as conn:  # tier 4: proposals in the proposer's u: scope, a proposed passage
        message, _, _ = record_episode(conn, group, chat, "msg-1", "m1")
        proposals = publish(conn, group, message, [
            claim("billing-api", "runs on", "a raspberry pi", valid_from="2026-04-01"),
            claim("billing-api", "owned by", "nobody at all"),
        ])  # fmt: skip
        assert {p["fact_group_id"] for p in proposals} == {personal}
        [proposed_passage] = store_chunks(
            conn, group, message, [{"text": "billing-api lives on a raspberry pi"}]
        )
    check("tier-4 proposals")

    with committed(world) as conn:  # tier 3: claims and passages wait for review (not counted yet)
        thread, _, _ = record_episode(conn, group, forum, "thread-1", "t1")
        pending = publish(conn, group, thread, [
            claim("billing-api", "tracked in", "JIRA-7"),
            claim("billing-api", "tracked in", "JIRA-8"),
        ])  # fmt: skip
        assert {p["lifecycle"] for p in pending} == {"pending_review"}
        waiting_passages = store_chunks(conn, group, thread, [
            {"text": "forum says billing-api is tracked in JIRA-7"},
            {"text": "forum says billing-api is tracked in JIRA-8"},
        ])  # fmt: skip
    check("tier-3 claims and passages waiting")

    reviews = [
        ("review_claim", pending[0]["fact_id"], "approve"),
        ("review_claim", pending[1]["fact_id"], "reject"),
        (
            "review_claim",
            proposals[0]["fact_id"],
            "approve",
        ),  # copied into the project, the proposal accepted
        ("review_claim", proposals[1]["fact_id"], "reject"),
        ("review_passage", waiting_passages[0], "approve"),
        ("review_passage", waiting_passages[1], "reject"),
        ("review_passage", proposed_passage, "reject"),
    ]
    for function, item, decision in reviews:
        with committed(world) as conn:
            conn.execute(f"select * from vera.{function}(%s, %s, %s)", (group, item, decision))
        check(f"{function} {decision}")

    with committed(world) as conn:  # a new version of the export: what it no longer states is retired
        export_v2, version, _ = record_episode(conn, group, cmdb, "export", "v2")
        assert version == 2
        publish(
            conn,
            group,
            export_v2,
            [claim("billing-api", "runs on", "cluster green", valid_from="2026-03-01")],
        )
        store_chunks(conn, group, export_v2, [{"text": "the export lists billing-api on cluster green"}])
        assert (
            facts_of(conn, "f.group_id = %s and f.episode_id = %s and f.retired_at is null", (group, export))
            == []
        )
    check("a new version of an episode")

    with committed(world) as conn:
        conn.execute("select vera.retract_episode(%s, %s)", (group, page))
    check("retract_episode")

    with committed(world) as conn:
        conn.execute("select vera.retract_source(%s, %s)", (group, forum))
    check("retract_source")

    with committed(world) as conn:
        conn.execute("select vera.erase_episode(%s, %s)", (group, message))
    check("erase_episode of a live episode (proposals and the approved copy)")

    with committed(world) as conn:
        conn.execute("select vera.erase_episode(%s, %s)", (group, page))
    check("erase_episode of a retracted episode")

    with committed(world) as conn:
        conn.execute("select vera.erase_source(%s, %s)", (group, cmdb))
    check("erase_source")

    # writes past the API (a bulk load, an operator's fix): the triggers count them too
    with committed(world) as conn:
        notes = register_source(conn, group, "notes", 1)
        note, _, _ = record_episode(conn, group, notes, "note.md", "n1")
        publish(conn, group, note, [claim("ledger-api", "runs on", "cluster red")])
        store_chunks(conn, group, note, [{"text": "ledger-api notes"}, {"text": "ledger-api more notes"}])
    with world.db.admin() as admin:
        admin.execute("update vera.facts set fact_text = 'ledger-api runs on cluster red, really red' "
                      "where group_id = %s and object_value = 'cluster red'", (group,))  # fmt: skip
    check("a fact's text changed in place")
    with world.db.admin() as admin:
        admin.execute("delete from vera.facts where group_id = %s and episode_id = %s", (group, note))
        admin.execute("delete from vera.episodes where group_id = %s and episode_id = %s", (group, note))
    check("an episode deleted without retraction")


# The locks a claim takes before its rows: its subject's name bucket (vera.resolve_entities) and
# its history's bucket (vera.lock_histories), 1024 of each. Two writers whose claims share a bucket
# wait on each other by design; the statistics must add no wait of their own.
BUCKETS = """
    select e.canonical_name,
           array[hashtextextended(e.group_id || '/' || vera.normalize_name(e.canonical_name), 0) & 1023,
                 1024 + (hashtextextended(f.group_id || '/' || f.subject_entity_id::text || '/' || f.predicate, 1)
                         & 1023)]
      from vera.facts f join vera.entities e on e.group_id = f.group_id and e.entity_id = f.subject_entity_id
     where f.group_id = %s and e.canonical_name like 'writer-%%'
     order by e.canonical_name"""


def test_two_writers_of_one_group_neither_wait_and_end_exact(world: World) -> None:
    with committed(world) as conn:
        group = functional_project(conn, world.a.organisation, "stats-concurrent")
        source = register_source(conn, group, "cmdb", 1, kind="cmdb")
        episodes = [record_episode(conn, group, source, f"export-{i}", str(i))[0] for i in range(2)]
        # the subjects, the predicate and the words exist before: the writers share every term
        publish(conn, group, episodes[0], [claim(f"writer-{i}", "serves", "shared words") for i in range(60)])
    with world.db.admin() as admin:
        subjects: list[list[str]] = [[], []]
        held: list[set[int]] = [set(), set()]
        for name, buckets in admin.execute(BUCKETS, (group,)):  # no bucket of one writer is the other's
            for which in (0, 1):
                if len(subjects[which]) < 10 and held[1 - which].isdisjoint(buckets):
                    subjects[which].append(name)
                    held[which] |= set(buckets)
                    break
        assert min(map(len, subjects)) >= 10
    first_published, second_committed, may_commit = threading.Event(), threading.Event(), threading.Event()

    def writer(which: int) -> float:
        with world.db.connect() as conn:
            conn.execute("set lock_timeout = '10s'")
            conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
            if which == 1:
                assert first_published.wait(30)
            started = time.monotonic()
            publish(conn, group, episodes[which], [
                claim(subject, "serves", f"shared words of writer {which}, {subject}")
                for subject in subjects[which][:10]
            ])  # fmt: skip
            if which == 0:  # the first keeps its transaction (and its pending changes) open
                first_published.set()
                assert may_commit.wait(30)
            conn.commit()
            if which == 1:
                second_committed.set()
            return time.monotonic() - started

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.submit(writer, 0), pool.submit(writer, 1)
        try:
            assert second_committed.wait(30), f"the second writer waited for the first: {second.exception()}"
            # the second committed while the first is still open: its changes were applied at
            # its commit, the first's wait in its own transaction (invisible to anyone else), and
            # the statistics are exact for what has committed
            assert not first.done()
            with world.db.admin() as admin:
                pending = admin.execute(
                    "select count(*) from vera.term_stat_changes where group_id = %s", (group,)
                ).fetchone()
            assert pending == (0,)
            assert_exact(world.db, "second committed, first open", group)
        finally:
            may_commit.set()
        first.result(timeout=30)
        assert second.result(timeout=30) < 10
    assert_exact(world.db, "both committed", group)


# ---------------------------------------------------------------- 2. erasure


WORD = "zyxwvutq"


@pytest.mark.parametrize("erase", ["erase_episode", "erase_source"])
def test_erasure_leaves_no_word_behind(world: World, erase: str) -> None:
    with committed(world) as conn:
        group = functional_project(conn, world.a.organisation, f"stats-{erase}")
        hr = register_source(conn, group, "hr", 1, kind="hr")
        wiki = register_source(conn, group, "wiki", 2)
        person, _, _ = record_episode(conn, group, hr, "person.md", "secret")
        store_chunks(conn, group, person, [{"text": f"Jane Roe, known as {WORD}, lives at 1 Secret Lane"}])
        publish(conn, group, person, [claim("Jane Roe", "known as", WORD)])
        runbook, _, _ = record_episode(conn, group, wiki, "runbook.md", "r")
        store_chunks(conn, group, runbook, [{"text": "restart the billing pods"}])
        publish(conn, group, runbook, [claim("billing-api", "runs on", "cluster blue")])
    with world.db.connect(autocommit=True) as conn:
        conn.execute("begin isolation level repeatable read")
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        conn.execute("select * from vera.create_snapshot(%s, 'before erasure')", (group,))
        conn.execute("commit")
    with world.db.admin() as admin:
        stored_word = words_stored(admin, WORD)  # counted (applied at the publish's commit) and pinned
        assert stored_word["term_stats"] and stored_word["snapshot_term_stats"]

    def snapshot_search(query: str) -> list[tuple[str, float]]:
        with caller(world.db, world.a.owner_key) as conn:
            hits = conn.execute("select text, score from vera.search_snapshot(%s, 'before erasure', %s)",
                                (group, query)).fetchall()  # fmt: skip
        return [(text, score) for text, score in hits]

    before = snapshot_search("restart billing-api pods")
    assert len(before) == 2

    with committed(world) as conn:
        conn.execute(f"select vera.{erase}(%s, %s)", (group, person if erase == "erase_episode" else hr))
    # right after the erasure commits, with no other write in the group since
    with world.db.admin() as admin:
        assert words_stored(admin, WORD) == {
            "term_stats": 0,
            "term_stat_changes": 0,
            "snapshot_term_stats": 0,
        }
    assert_exact(world.db, erase, group)
    assert snapshot_search(WORD) == []
    assert snapshot_search("restart billing-api pods") == before


# ---------------------------------------------------------------- 3. tenancy

QUERY = "where does ledger-api run on cluster red"

# Stage 1's lexical half of one kind as vera.search_candidates prepares it:
# the statistics of both kinds over the groups, the weights of this kind's
# terms rarest first, the groups in their order.
LEXICAL = """
with stats as (
    select k.kind, st.term, st.documents, st.tokens
      from unnest('{fact,passage}'::vera.item_kind[]) k(kind)
     cross join lateral vera.term_statistics(%(groups)s, k.kind, vera.query_terms(%(query)s)) st
), weights as (
    select array_agg(w.term order by w.postings, w.term) as terms,
           array_agg(w.postings order by w.postings, w.term) as postings,
           array_agg(w.idf order by w.postings, w.term) as idfs,
           array_agg(w.most_held order by w.postings, w.term) as most_held, min(w.average_length) as average_length
      from vera.bm25_weights((select array_agg(s.kind) from stats s), (select array_agg(s.term) from stats s),
                             (select array_agg(s.documents) from stats s), (select array_agg(s.tokens) from stats s)) w
     where w.kind = %(kind)s
), ordered as (
    select array(select g.group_id from vera.groups g where g.group_id = any (%(groups)s)
                  order by vera.group_order_key(g.kind, g.name), g.group_id) as groups
)
"""


def lexical(admin: psycopg.Connection, groups: list[str], query: str, kind: str, n: int,
            personal: str, principal: UUID) -> list[tuple[UUID, float]]:  # fmt: skip
    """vera.lexical_candidates (MaxScore) as search calls it: (item, score) in its order."""
    rows = admin.execute(
        LEXICAL
        + """
        select l.item_id, l.score
          from weights w, ordered o,
               vera.lexical_candidates(%(kind)s, %(groups)s, w.terms, w.postings, w.idfs, w.most_held, w.average_length,
                                       now(), %(personal)s, %(principal)s, %(n)s, o.groups) with ordinality l
         order by l.ordinality""",
        {
            "groups": groups,
            "query": query,
            "kind": kind,
            "n": n,
            "personal": personal,
            "principal": principal,
        },
    ).fetchall()
    return [(item, score) for item, score in rows]


def test_another_tenants_writes_move_no_score(world: World) -> None:
    a, b = world.a, world.b
    with committed(world) as conn:
        project = functional_project(conn, a.organisation, "stats-tenancy")
        for group in (a.organisation, project):
            source = register_source(conn, group, "tenancy-cmdb", 1, kind="cmdb")
            episode, _, _ = record_episode(conn, group, source, "export", "e")
            publish(conn, group, episode, [
                claim("ledger-api", "runs on", "cluster red"),
                claim("ledger-api", "owned by", "team ledger"),
                claim(f"worker-{group[-4:]}", "runs on", "cluster blue"),
            ])  # fmt: skip
            store_chunks(conn, group, episode, [{"text": "ledger-api runs on cluster red since March"}])
    groups = [a.organisation, project]

    def observed() -> tuple[Any, ...]:
        with world.db.admin() as admin:
            scores = tuple(tuple(lexical(admin, groups, QUERY, kind, 10, a.owner_personal, a.owner))
                           for kind in ("fact", "passage"))  # fmt: skip
            statistics = tuple(stored(admin, groups, kind) for kind in ("fact", "passage"))
        with caller(world.db, a.owner_key) as conn:
            # (the blended score moves with the clock, through recency; the relevance does not)
            hits = [(h["item_id"], h["relevance"]) for h in search(conn, QUERY, groups=groups, k=20)]
        return scores, statistics, hits

    before = observed()
    assert all(before[0]) and before[2]
    with committed(world, b.owner_key) as conn:  # tenant B writes the same words, a lot of them
        source = register_source(conn, b.organisation, "tenancy-cmdb", 1, kind="cmdb")
        episode, _, _ = record_episode(conn, b.organisation, source, "export", "e")
        publish(conn, b.organisation, episode, [
            claim(f"ledger-api-{i}", "runs on", f"cluster red {i}",
                  fact_text=f"ledger-api {i} does run on cluster red, where ledger-api runs")
            for i in range(300)
        ])  # fmt: skip
    with world.db.admin() as admin:
        assert stored(admin, [b.organisation], "fact")["ledger-api"][0] >= 300
    assert observed() == before

    # a search over the organisation and the project: the sum of exactly those two groups
    with world.db.admin() as admin:
        for kind in ("fact", "passage"):
            both, org, own = (stored(admin, g, kind) for g in (groups, [a.organisation], [project]))
            assert both == {term: (org.get(term, (0, 0))[0] + own.get(term, (0, 0))[0],
                                   org.get(term, (0, 0))[1] + own.get(term, (0, 0))[1])
                            for term in org.keys() | own.keys()}  # fmt: skip
            assert both == recount(admin, groups, kind)


# ---------------------------------------------------------------- 4. MaxScore


# The documented rule of candidate generation (sql/functions/177_lexical_candidates.sql),
# restated: the rarest terms while each is held by at most a tenth of the documents (IDF >= ln 10;
# passages: a fiftieth, ln 50) or by at most the budget (vera.lexical_budget), at least the rarest;
# a document holding none of them is no candidate.
GENERATING = """vera.any_of(w.terms[1:(select greatest(1, coalesce(min(t.position) - 1, cardinality(w.terms)))
                                         from unnest(w.idfs, w.postings) with ordinality t(idf, postings, position)
                                        where t.idf < ln(case when %(kind)s = 'fact' then 10 else 50 end)
                                          and t.postings > vera.lexical_budget(%(kind)s))])"""


def brute_force(admin: psycopg.Connection, groups: list[str], query: str, kind: str, n: int,
                personal: str, principal: UUID) -> list[tuple[UUID, float]]:  # fmt: skip
    """Every visible candidate document of the groups (holding a generating term) scored with
    vera.bm25_score; the n best, ties as stage 1."""
    scored = {
        "fact": """
            select f.fact_id as item_id, f.group_id,
                   vera.bm25_score('fact', f.tsv, w.terms, w.idfs, w.average_length) as score,
                   vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from) as order_key
              from vera.facts f, weights w
             where f.group_id = any (%(groups)s) and f.tsv @@ """
        + GENERATING
        + """
               and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, now(),
                                     %(personal)s)""",
        "passage": """
            select c.chunk_id as item_id, c.group_id,
                   vera.bm25_score('passage', c.tsv, w.terms, w.idfs, w.average_length) as score,
                   vera.passage_order_key(s.name, e.external_id, e.version, c.ordinal) as order_key
              from vera.chunks c
              join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
              join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id, weights w
             where c.group_id = any (%(groups)s) and c.tsv @@ """
        + GENERATING
        + """
               and (c.lifecycle = 'published' or (c.lifecycle = 'proposal' and c.proposed_by = %(principal)s))
               and e.status <> 'retracted' and e.observed_at <= now()
               and not exists (select from vera.episodes newer
                                where newer.group_id = e.group_id and newer.source_id = e.source_id
                                  and newer.external_id = e.external_id and newer.version > e.version
                                  and newer.observed_at <= now() and newer.status <> 'retracted')""",
    }[kind]
    rows = admin.execute(
        LEXICAL
        + f""", scored as ({scored})
        select sc.item_id, sc.score from scored sc, ordered o
         where sc.score > 0
         order by sc.score desc, sc.order_key, array_position(o.groups, sc.group_id), sc.item_id
         limit %(n)s""",
        {
            "groups": groups,
            "query": query,
            "kind": kind,
            "n": n,
            "personal": personal,
            "principal": principal,
        },
    ).fetchall()
    return [(item, score) for item, score in rows]


def _bulk_group(world: World, name: str) -> tuple[str, UUID]:
    """A project of tenant A with one published fact (its subject, source and episode for the
    rows a test loads directly) and that episode."""
    with committed(world) as conn:
        group = functional_project(conn, world.a.organisation, name)
        source = register_source(conn, group, "bulk", 1)
        episode, _, _ = record_episode(conn, group, source, "bulk.md", "b")
        publish(conn, group, episode, [claim("bulk-api", "mentions", "nothing")])
    return group, episode


def test_maxscore_returns_the_exact_top_n(world: World) -> None:
    """Candidate generation reads the postings of a round's terms, a budget at
    most beyond the first term's (vera.lexical_budget: 250 for passages and
    facts), so the frequent words here hold more documents of their kind:
    "medium common" over facts and "beta alpha" over passages read the
    frequent word only when the bound requires it, and some documents holding
    only the frequent word many times (or in a short passage) outscore some
    holding the other word once, so that a bound too loose returns a wrong
    list. Both kinds get the exact top n whenever no round holds a term over
    the budget, and otherwise exact scores, in order, never above the exact
    list's, from rounds that read (facts) or score (passages, their shortest)
    at most the budget of rows (see test_fact_rounds_read_at_most_the_budget
    and test_a_passage_round_over_the_budget_scores_its_shortest_passages).
    The rows are loaded directly (the triggers count them as any write)."""
    group, episode = _bulk_group(world, "stats-maxscore")
    with world.db.admin() as admin:
        # 1300 facts (b = 0: equal scores galore); some counted but never returned (retired, proposals)
        admin.execute(
            """insert into vera.facts (group_id, subject_entity_id, predicate, object_value, fact_text, tier,
                                       authority, verification, lifecycle, retired_at, proposed_for, source_id,
                                       episode_id)
               select f.group_id, f.subject_entity_id, f.predicate, 'v' || i,
                      concat_ws(' ', 'item', lpad(i::text, 4, '0'),
                                case when i %% 6 <> 0 then 'common' end,
                                case when i %% 5 = 0 then 'common' end,
                                case when i %% 50 = 1 then repeat('common ', 19) end,
                                case when i %% 4 = 0 then 'medium' end,
                                case when i %% 24 = 0 then 'medium' end,
                                case when i %% 250 = 7 then 'rare' end,
                                case when i %% 500 = 7 then 'rare rare' end),
                      1, 1.0, 'auto',
                      case when i %% 100 = 7 then 'superseded' when i %% 33 = 0 then 'proposal'
                           else 'published' end::vera.fact_lifecycle,
                      case when i %% 100 = 7 then now() end, case when i %% 33 = 0 then f.group_id end,
                      f.source_id, f.episode_id
                 from vera.facts f, generate_series(1, 1300) i
                where f.group_id = %s""",
            (group,),
        )
        # 2500 passages of lengths 2 to 30 (b = 0.75)
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, i,
                      concat_ws(' ', 'passage', i, repeat('filler ', i %% 17),
                                case when i %% 2 = 0 then 'alpha' end,
                                case when i %% 10 = 0 then 'alpha alpha alpha alpha alpha' end,
                                case when i %% 7 = 0 then 'beta' end,
                                case when i %% 300 = 11 then 'rare' end,
                                case when i %% 41 = 0 then 'common medium' end)
                 from generate_series(1, 2500) i""",
            (group, episode),
        )
    assert_exact(world.db, "bulk load", group)

    exits_early = bounded = 0
    with world.db.admin() as admin:
        for query in ("medium common", "beta alpha", "rare medium common", "rare beta alpha", "common",
                      "item common 0042", "rare item", "0042 0043 rare item"):  # fmt: skip
            for kind in ("fact", "passage"):
                # the order is total (score, order key, group, id): the top n is the best 400's first n
                best = brute_force(admin, [group], query, kind, 400, world.a.owner_personal, world.a.owner)
                cut = _a_round_is_cut(admin, group, query, kind)
                bounded += cut
                for n in (1, 3, 10, 50, 250, 280, 300, 340, 400):
                    found = lexical(admin, [group], query, kind, n, world.a.owner_personal, world.a.owner)
                    if not cut:
                        assert found == best[:n], (query, kind, n)
                    else:
                        _assert_bounded_list(admin, world, group, query, kind, n, found, best[:n])
                    exits_early += _stops_early(admin, group, query, kind, n, found)
    assert exits_early > 0  # MaxScore skipped the frequent word's postings somewhere
    assert bounded > 1  # and some round of facts and of passages was cut at the budget


def _stops_early(admin: psycopg.Connection, group: str, query: str, kind: str, n: int,
                 top: list[tuple[UUID, float]]) -> bool:  # fmt: skip
    """Whether the first round (the rare terms up to the budget) already proves the top n."""
    row = admin.execute(
        LEXICAL + "select w.terms, w.postings, w.idfs, p.k1 from weights w, vera.bm25_parameters(%(kind)s) p",
        {"groups": [group], "query": query, "kind": kind},
    ).fetchone()
    assert row is not None
    terms, postings, idfs, k1 = row
    if not terms or len(top) < n:
        return False
    budget = admin.execute("select vera.lexical_budget(%s)", (kind,)).fetchone()[0]  # type: ignore[index]
    taken, read = 1, postings[0]
    while taken < len(terms) and read + postings[taken] <= budget:
        read += postings[taken]
        taken += 1
    return taken < len(terms) and top[-1][1] > sum(idf * (k1 + 1) for idf in idfs[taken:])


def _weights(admin: psycopg.Connection, group: str, query: str, kind: str) -> tuple[Any, ...]:
    """The query's terms rarest first with their postings and IDFs, k1 and the budget of this kind."""
    row = admin.execute(
        LEXICAL
        + """select w.terms, w.postings, w.idfs, p.k1, vera.lexical_budget(%(kind)s)
               from weights w, vera.bm25_parameters(%(kind)s) p""",
        {"groups": [group], "query": query, "kind": kind},
    ).fetchone()
    assert row is not None
    return tuple(row)


def _a_round_is_cut(admin: psycopg.Connection, group: str, query: str, kind: str) -> bool:
    """Whether a generating term holds more than the budget (a round may then be cut: a round of
    facts reads at most the budget of rows, one of passages scores at most that many)."""
    terms, postings, idfs, _, budget = _weights(admin, group, query, kind)
    if not terms:
        return False
    frequent = math.log(10 if kind == "fact" else 50)
    generating = next((i for i, (idf, p) in enumerate(zip(idfs, postings, strict=True))
                       if idf < frequent and p > budget), len(terms))  # fmt: skip
    return any(p > budget for p in postings[: max(1, generating)])


def _assert_bounded_list(admin: psycopg.Connection, world: World, group: str, query: str, kind: str, n: int,
                         found: list[tuple[UUID, float]], best: list[tuple[UUID, float]]) -> None:  # fmt: skip
    """A list from rounds cut at the budget: as long as the exact one, each score its document's
    exact BM25 score, in stage 1's order, never above the exact list's at the same rank, and the
    same on every call (a cut round of facts reads the first rows its scan meets, one of passages
    the shortest)."""
    assert len(found) == len(best), (query, n)
    scores = dict(brute_force(admin, [group], query, kind, 100_000, world.a.owner_personal, world.a.owner))
    assert all(scores[item] == score for item, score in found), (query, n)
    assert len({item for item, _ in found}) == len(found)
    assert all(got <= exact for (_, got), (_, exact) in zip(found, best, strict=True)), (query, n)
    keys = dict(admin.execute(ORDER_KEYS[kind], ([item for item, _ in found],)).fetchall())
    order = [(-score, keys[item], item) for item, score in found]
    assert order == sorted(order), (query, n)
    assert lexical(admin, [group], query, kind, n, world.a.owner_personal, world.a.owner) == found


# each kind's order key (stage 1's order of equal scores) of the given items
ORDER_KEYS = {
    "fact": "select f.fact_id, vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)"
    " from vera.facts f where f.fact_id = any (%s)",
    "passage": "select c.chunk_id, vera.passage_order_key(s.name, e.external_id, e.version, c.ordinal)"
    " from vera.chunks c join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id"
    " join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id where c.chunk_id = any (%s)",
}


def test_passage_rounds_return_the_exact_top_n_of_random_queries(world: World) -> None:
    """Passages get the exact top n of the documents holding a generating term
    (177_lexical_candidates.sql), rounds of a budget of postings and the MaxScore bound between
    them, and, once the list is full, rounds of one word read only with the later words that can
    lift a passage past the n-th score (a version that also left out the passages holding the
    word alone failed here), whenever no round's word is held by more than the budget; otherwise
    a bounded list (its shortest passages scored): many queries of Zipf-drawn words over 1,500
    passages of lengths 1-40 (some words held many times), against the brute-force list for
    several n."""
    group, episode = _bulk_group(world, "stats-passage-partners")
    words = [f"w{i}" for i in range(60)]
    with world.db.admin() as admin:
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, i,
                      (select string_agg((%s::text[])[1 + floor(60 * power(abs(hashtext(i || '/' || j)) / 2147483648.0,
                                                                          3))::int], ' ')
                         from generate_series(1, 1 + (i * 7919) %% 40) j where i > -j)
                 from generate_series(1, 1500) i""",
            (group, episode, words),
        )
    rng = random.Random(31)  # noqa: S311 (a fixed sample of queries)
    exact = bounded = 0
    with world.db.admin() as admin:
        for _ in range(40):
            query = " ".join(rng.sample(words[:40], rng.randint(2, 6)))
            best = brute_force(admin, [group], query, "passage", 200, world.a.owner_personal, world.a.owner)
            cut = _a_round_is_cut(admin, group, query, "passage")
            exact, bounded = exact + (not cut), bounded + cut
            for n in (1, 5, 20, 60, 200):
                found = lexical(admin, [group], query, "passage", n, world.a.owner_personal, world.a.owner)
                if not cut:
                    assert found == best[:n], (query, n)
                else:  # a round's word held by more than the budget: its shortest passages scored
                    _assert_bounded_list(admin, world, group, query, "passage", n, found, best[:n])
        assert exact > 10 and bounded > 10, (exact, bounded)
        # long queries too (a question's length): the same passages in the same order. Their scores
        # may differ from the brute force's in the last bit: over ten terms the planner may join a
        # query's terms to a passage's words the other way round in one statement than in the other,
        # and the sum takes the terms in another order (main's functions did so before vera.chunks.words)
        for _ in range(6):
            query = " ".join(rng.sample(words[:40], rng.randint(11, 18)))
            best = brute_force(admin, [group], query, "passage", 60, world.a.owner_personal, world.a.owner)
            cut = _a_round_is_cut(admin, group, query, "passage")
            for n in (5, 60):
                found = lexical(admin, [group], query, "passage", n, world.a.owner_personal, world.a.owner)
                if cut:  # as long, never above the exact list at the same rank (to the last bit's noise)
                    assert len(found) == len(best[:n]), (query, n)
                    assert all(
                        got <= want * (1 + 1e-12) for (_, got), (_, want) in zip(found, best, strict=False)
                    )
                    continue
                assert [item for item, _ in found] == [item for item, _ in best[:n]], (query, n)
                assert [score for _, score in found] == pytest.approx([s for _, s in best[:n]], rel=1e-12)


def test_a_passage_round_over_the_budget_scores_its_shortest_passages(world: World) -> None:
    """A round of passages whose word more passages hold than the budget scores only the shortest
    of them, as many as the budget (or n): of passages holding the word equally often the shorter
    scores higher, so the list is the exact one here but for what such a round gives up: a long
    passage holding the word twenty times, the exact list's first, is past the budget's length and
    not read. A query with a rarer word that passage holds finds it in that word's round, and a
    long passage holding the query's later words too is read first, in the round's first piece."""
    group, episode = _bulk_group(world, "stats-passage-budget")
    with world.db.admin() as admin:
        # 600 passages holding "common" once, of 2 to 601 distinct words, the longest stored first
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, i, 'common ' || (select string_agg('x' || j, ' ') from generate_series(1, 601 - i) j)
                 from generate_series(1, 600) i""",
            (group, episode),
        )
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, 1000, repeat('common ', 20) || 'zebra '
                                    || (select string_agg('y' || j, ' ') from generate_series(1, 590) j)""",
            (group, episode),
        )
        long_one = admin.execute(
            "select chunk_id from vera.chunks where group_id = %s and ordinal = 1000", (group,)
        ).fetchone()[0]  # type: ignore[index]
        budget = admin.execute("select vera.lexical_budget('passage')").fetchone()[0]  # type: ignore[index]
        assert budget < 600
        exact = brute_force(admin, [group], "common", "passage", 11, world.a.owner_personal, world.a.owner)
        assert exact[0][0] == long_one
        found = lexical(admin, [group], "common", "passage", 10, world.a.owner_personal, world.a.owner)
        assert found == exact[1:]  # the ten shortest, in order, without the long one
        lengths = [admin.execute("select words from vera.chunks where chunk_id = %s", (item,)).fetchone()[0]  # type: ignore[index]
                   for item, _ in found]  # fmt: skip
        assert lengths == list(range(2, 12))
        # as many as the budget: the shortest 250 (of 2 to 251 words), read length class by length class
        # (up to 31 words, 32-63, 64-127, then the shortest of 128-255): the exact list but the long one
        assert (
            lexical(admin, [group], "common", "passage", budget, world.a.owner_personal, world.a.owner)
            == (
                brute_force(
                    admin, [group], "common", "passage", budget + 1, world.a.owner_personal, world.a.owner
                )[1:]
            )
        )
        found = lexical(admin, [group], "common zebra", "passage", 10, world.a.owner_personal, world.a.owner)
        assert found[0][0] == long_one
        assert found == brute_force(admin, [group], "common zebra", "passage", 10, world.a.owner_personal,
                                    world.a.owner)  # fmt: skip
        # A passage holding more of the question: 700 and 800 short passages hold "extra" and "more",
        # more frequent than "common" but each held by less than a tenth of the passages (7,000 more
        # hold neither), and a passage of 300 distinct words (past the budget's length among those
        # holding "common") holds all three thirty times. The round of "common" reads the passages holding it
        # and a later word held by less than a tenth first (that one alone), then the shortest holding
        # it and none of those; the later words' rounds leave out the passages holding "common", so a
        # round that read its word in one piece would never find it.
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, 2000 + i, case when i <= 700 then 'extra z' || i
                                             when i <= 1500 then 'more z' || i
                                             else 'filler z' || i end
                 from generate_series(1, 8500) i
               union all
               select %s, %s, 20000, repeat('common extra more ', 30)
                                     || (select string_agg('w' || j, ' ') from generate_series(1, 297) j)""",
            (group, episode, group, episode),
        )
        asked = admin.execute(
            "select chunk_id from vera.chunks where group_id = %s and ordinal = 20000", (group,)
        ).fetchone()[0]  # type: ignore[index]
        query = "common extra more"
        exact = brute_force(admin, [group], query, "passage", 10, world.a.owner_personal, world.a.owner)
        assert exact[0][0] == asked
        found = lexical(admin, [group], query, "passage", 10, world.a.owner_personal, world.a.owner)
        assert found[0] == exact[0]


def _store_common_once(admin: psycopg.Connection, group: str, episode: UUID) -> list[UUID]:
    """600 passages holding "common" once among 1 to 600 other words (ordinals 1-600, the shortest
    first); returns the ten shortest, the exact list of "common" alone."""
    admin.execute(
        """insert into vera.chunks (group_id, episode_id, ordinal, text)
           select %s, %s, i, 'common ' || (select string_agg('x' || j, ' ') from generate_series(1, i) j)
             from generate_series(1, 600) i""",
        (group, episode),
    )
    rows = admin.execute(
        "select chunk_id from vera.chunks where group_id = %s and ordinal <= 10 order by ordinal", (group,)
    ).fetchall()
    return [row[0] for row in rows]


def test_a_cut_round_reads_first_the_passages_holding_a_telling_later_word(world: World) -> None:
    """The first piece of a cut round holds the passages that also hold a later word held by less
    than a tenth of the passages (one that tells them apart): a later word nearly every passage
    holds ("the") would make it nearly every passage holding the round's word. Here 300 long
    passages hold "common" and "the", 600 short ones "common" alone and 3,000 more "the" alone: the
    round of "common" (900 passages, over the budget) scores its 250 shortest holders, the short
    ones, and the top 10 is the exact one. Read first as a piece of their own, the 300 long ones
    (score them and the budget is spent) made the whole top 10, below the exact one."""
    group, episode = _bulk_group(world, "stats-passage-telling")
    with world.db.admin() as admin:
        shortest = _store_common_once(admin, group, episode)
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, 1000 + i,
                      'common the ' || i || ' ' || (select string_agg('w' || j, ' ') from generate_series(1, 400) j)
                 from generate_series(1, 300) i
               union all
               select %s, %s, 2000 + i, 'the y' || i from generate_series(1, 3000) i""",
            (group, episode, group, episode),
        )
        terms, postings, idfs, _, budget = _weights(admin, group, "common the", "passage")
        assert terms == ["common", "the"] and postings[0] > budget and idfs[1] < math.log(10)
        found = lexical(admin, [group], "common the", "passage", 10, world.a.owner_personal, world.a.owner)
        exact = brute_force(
            admin, [group], "common the", "passage", 10, world.a.owner_personal, world.a.owner
        )
        assert found == exact
        assert [item for item, _ in found] == shortest


def test_a_cut_round_scores_the_n_shortest_of_its_second_piece(world: World) -> None:
    """The second piece of a cut round (the passages holding its word and no telling later word)
    has its n shortest scored, not the budget's rest: the list takes at most n of them, and of
    passages holding the word equally often the shorter scores higher. What that gives up, as
    docs/sql-api.md says: here a passage holding "common" twenty times among 80 other words (81
    as BM25 counts a length: its distinct words), the exact list's first, is about the 80th
    shortest of the 601 holding "common" and none of "extra" (held by 700 short passages of
    8,301, under a tenth: telling). Scored as the budget's rest (250), it led the list; with
    n = 10 the ten shortest make it, and with n = 120 it leads again."""
    group, episode = _bulk_group(world, "stats-passage-second-piece")
    with world.db.admin() as admin:
        shortest = _store_common_once(admin, group, episode)
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, 1000, repeat('common ', 20)
                                    || (select string_agg('y' || j, ' ') from generate_series(1, 80) j)
               union all
               select %s, %s, 2000 + i, case when i <= 700 then 'extra z' || i else 'filler z' || i end
                 from generate_series(1, 7700) i""",
            (group, episode, group, episode),
        )
        repeated = admin.execute(
            "select chunk_id from vera.chunks where group_id = %s and ordinal = 1000", (group,)
        ).fetchone()[0]  # type: ignore[index]
        terms, postings, idfs, _, budget = _weights(admin, group, "common extra", "passage")
        assert terms == ["common", "extra"] and postings[0] > budget and idfs[1] >= math.log(10)
        exact = brute_force(
            admin, [group], "common extra", "passage", 10, world.a.owner_personal, world.a.owner
        )
        assert exact[0][0] == repeated
        found = lexical(admin, [group], "common extra", "passage", 10, world.a.owner_personal, world.a.owner)
        assert [item for item, _ in found] == shortest
        assert (
            found
            == brute_force(
                admin, [group], "common extra", "passage", 11, world.a.owner_personal, world.a.owner
            )[1:]
        )
        found = lexical(admin, [group], "common extra", "passage", 120, world.a.owner_personal, world.a.owner)
        assert found[0][0] == repeated


def test_a_second_piece_below_the_first_pieces_n_best_is_not_checked(world: World) -> None:
    """A passage of a cut round's second piece scoring below the n-th of the list and of the first
    piece together cannot enter the list, so its visibility and order key are not looked up. Here
    20 passages hold "common" and the telling "extra" (2 to 21 words), 600 more "common" alone: the
    first piece's ten best outscore every passage holding "common" alone, and only those are
    checked (two probes of vera.episodes each, its row and its newer versions); a second piece
    filtered by the list alone (empty in the first round) checked its ten shortest as well."""
    group, episode = _bulk_group(world, "stats-passage-second-piece-bound")
    with world.db.admin() as admin:
        _store_common_once(admin, group, episode)
        admin.execute(
            """insert into vera.chunks (group_id, episode_id, ordinal, text)
               select %s, %s, 1000 + i, 'common extra ' || coalesce((select string_agg('v' || j, ' ')
                                                                       from generate_series(1, i) j), '')
                 from generate_series(0, 19) i
               union all
               select %s, %s, 2000 + i, case when i <= 700 then 'extra z' || i else 'filler z' || i end
                 from generate_series(1, 7700) i""",
            (group, episode, group, episode),
        )
        terms, postings, idfs, _, budget = _weights(admin, group, "common extra", "passage")
        assert terms == ["common", "extra"] and postings[0] > budget and idfs[1] >= math.log(10)
        first_piece = [
            row[0]
            for row in admin.execute(
                "select chunk_id from vera.chunks where group_id = %s and ordinal between 1000 and 1009"
                " order by ordinal",
                (group,),
            ).fetchall()
        ]
        probes = """select coalesce(sum(pg_stat_get_xact_numscans(i.indexrelid)), 0)
                      from pg_index i where i.indrelid = 'vera.episodes'::regclass"""
        with admin.transaction():
            before = admin.execute(probes).fetchone()[0]  # type: ignore[index]
            found = lexical(
                admin, [group], "common extra", "passage", 10, world.a.owner_personal, world.a.owner
            )
            checked = admin.execute(probes).fetchone()[0] - before  # type: ignore[index]
        assert [item for item, _ in found] == first_piece
        assert found == brute_force(
            admin, [group], "common extra", "passage", 10, world.a.owner_personal, world.a.owner
        )
        # the ten and the eleventh, which the list reads to see whether it ties with the tenth
        assert checked == 2 * 11, checked


def test_fact_rounds_read_at_most_the_budget(world: World) -> None:
    """Facts (b = 0) tie in thousands on one frequent word: a round of one term
    holding more than the budget reads the first documents holding it in the
    table's order, at most the budget, instead of every posting. Here 10,000
    facts hold "in" once, the ones with the smallest order keys stored last:
    the exact list would read all 10,000 to return those; the bounded one
    returns as good a list (the same scores) from the first rows, and the rows
    it fetched from vera.facts (PostgreSQL's own counts for this transaction,
    the scan meeting some that the filters drop) stay a small multiple of the
    budget. A fact holding the rare "note" too is found as before."""
    group, _ = _bulk_group(world, "stats-budget")
    with world.db.admin() as admin:
        admin.execute(
            """insert into vera.facts (group_id, subject_entity_id, predicate, object_value, fact_text, tier,
                                       authority, verification, lifecycle, source_id, episode_id)
               select f.group_id, f.subject_entity_id, f.predicate, 'v' || i,
                      concat_ws(' ', 'fact', lpad((20001 - i)::text, 5, '0'), case when i %% 2 = 0 then 'in' end,
                                case when i = 15000 then 'note' end),
                      1, 1.0, 'auto', 'published', f.source_id, f.episode_id
                 from vera.facts f, generate_series(1, 20000) i
                where f.group_id = %s
                order by i""",
            (group,),
        )
        admin.execute("analyze vera.facts")  # as autovacuum would: the planner sees the rows
        budget = admin.execute("select vera.lexical_budget('fact')").fetchone()[0]  # type: ignore[index]
        # the other tests' facts, which a sequential scan (the planner's choice for a word in half of a
        # small table) passes; an exact list reads the 10,000 postings (20,000 rows and those, scanning)
        elsewhere = admin.execute(
            "select count(*) from vera.facts where group_id <> %s", (group,)
        ).fetchone()[0]  # type: ignore[index]
        # rows a sequential scan returned or an index or bitmap scan fetched
        fetched = """select pg_stat_get_xact_tuples_returned('vera.facts'::regclass)
                            + pg_stat_get_xact_tuples_fetched('vera.facts'::regclass)
                            + (select coalesce(sum(pg_stat_get_xact_tuples_fetched(i.indexrelid)), 0)
                                 from pg_index i where i.indrelid = 'vera.facts'::regclass)"""
        for query in ("in", "in note"):
            with admin.transaction():
                before = admin.execute(fetched).fetchone()[0]  # type: ignore[index]
                found = lexical(admin, [group], query, "fact", 10, world.a.owner_personal, world.a.owner)
                read = admin.execute(fetched).fetchone()[0] - before  # type: ignore[index]
            assert 0 < read <= 4 * budget + elsewhere, (query, read, elsewhere)
            exact = brute_force(admin, [group], query, "fact", 10, world.a.owner_personal, world.a.owner)
            assert [score for _, score in found] == [score for _, score in exact], query
            texts = [
                admin.execute("select fact_text from vera.facts where fact_id = %s", (item,)).fetchone()[0]  # type: ignore[index]
                for item, _ in found
            ]
            if query == "in note":  # "in" generates no candidate beside the rare word: one fact
                assert texts == ["fact 05001 in note"]
                continue
            # the exact list's ties are facts 00002, 00004, ...; the bounded one's come from the first rows
            assert len(texts) == 10 and texts == sorted(texts), texts
            assert all(int(text.split()[1]) > 10_000 for text in texts), texts
