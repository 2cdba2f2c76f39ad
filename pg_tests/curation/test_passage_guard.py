"""The contamination guard over passages (sql/functions/110_sources.sql
store_chunks, 140_review.sql, 177_lexical_candidates.sql,
179_search_candidates.sql, 200_snapshots.sql, rls): text of tier 1-2 sources
is published, tier-3 text waits for review, tier-4 text is a proposal that
answers only its proposer until an admin approves it; retraction, erasure and
snapshots treat such text as they treat the claims of such sources.

Each test searches as the organisation's viewer, a member, the member who
stored the passages (the proposer), an admin and the owner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.databases import Database
from pg_tests.support.searching import MODEL, embed, search, vector_literal
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source

WORD = "walrus"
SOURCES = {1: "manual", 2: "wiki", 3: "forum", 4: "chat"}


def _text(tier: int) -> str:
    return f"the {WORD} lives on cluster {SOURCES[tier]} (tier {tier})"


@dataclass(frozen=True)
class People:
    """API keys of org A's viewer, a member, the proposer (a member), an admin and the owner."""

    keys: dict[str, str]
    ids: dict[str, UUID]


@dataclass(frozen=True)
class Project:
    group: str
    sources: dict[int, UUID]
    episodes: dict[int, UUID]
    chunks: dict[int, UUID]


def _principal(conn: psycopg.Connection, org: str, name: str, role: str) -> tuple[UUID, str]:
    row = conn.execute("select vera.insert_principal('user', %s, null)", (name,)).fetchone()
    assert row is not None
    conn.execute("insert into vera.memberships (group_id, principal_id, role) values (%s, %s, %s)",
                 (org, row[0], role))  # fmt: skip
    key = conn.execute("select api_key from vera.issue_api_key(%s, 'key', null)", (row[0],)).fetchone()
    assert key is not None
    return row[0], key[0]


@pytest.fixture(scope="module")
def people(world: World) -> People:
    keys = {"viewer": world.a.viewer_key, "owner": world.a.owner_key}
    ids = {"viewer": world.a.viewer, "owner": world.a.owner}
    with world.db.admin() as conn:
        for name, role in (("member", "member"), ("proposer", "member"), ("admin", "admin")):
            ids[name], keys[name] = _principal(conn, world.a.organisation, f"{name} of Acme", role)
    return People(keys=keys, ids=ids)


def make_project(world: World, people: People, name: str) -> Project:
    """A project of org A with one source of each tier (registered by the owner) and
    one passage from each, stored by the proposer; committed."""
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', %s)", (world.a.organisation, name)
        ).fetchone()[0]  # type: ignore[index]
        sources = {tier: register_source(conn, group, source, tier) for tier, source in SOURCES.items()}
        conn.commit()
    episodes, chunks = {}, {}
    with caller(world.db, people.keys["proposer"]) as conn:
        for tier, source in sources.items():
            episodes[tier], _, _ = record_episode(conn, group, source, f"{SOURCES[tier]}.md", _text(tier),
                                                  observed_at="2026-03-01")  # fmt: skip
            [(_, chunk)] = conn.execute(
                "select * from vera.store_chunks(%s, %s, %s, %s)",
                (
                    group,
                    episodes[tier],
                    Jsonb([{"text": _text(tier), "embedding": embed(_text(tier))}]),
                    MODEL,
                ),
            ).fetchall()
            chunks[tier] = chunk
        conn.commit()
    return Project(group=group, sources=sources, episodes=episodes, chunks=chunks)


@pytest.fixture(scope="module")
def project(world: World, people: People) -> Project:
    return make_project(world, people, "guard")


def _searched(database: Database, key: str, group: str) -> dict[int, dict[str, Any]]:
    """Tier -> hit of a search for WORD in the group."""
    with caller(database, key) as conn:
        hits = search(conn, WORD, groups=[group], k=50)
    return {hit["citation"]["tier"]: hit for hit in hits}


def _rows(database: Database, key: str, group: str) -> dict[int, str]:
    """Tier -> lifecycle of the project's passages that a plain select returns (row-level security)."""
    with caller(database, key) as conn:
        return dict(conn.execute(  # type: ignore[arg-type]
            "select s.trust_tier, c.lifecycle::text from vera.chunks c"
            " join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id"
            " join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id"
            " where c.group_id = %s", (group,)).fetchall())  # fmt: skip


@pytest.mark.parametrize(
    ("who", "tiers"),
    [("viewer", {1, 2}), ("member", {1, 2}), ("proposer", {1, 2, 4}), ("admin", {1, 2}), ("owner", {1, 2})],
)
def test_who_finds_which_passage(
    world: World, people: People, project: Project, who: str, tiers: set[int]
) -> None:
    found = _searched(world.db, people.keys[who], project.group)
    assert set(found) == tiers
    for tier in {1, 2} & tiers:
        assert found[tier]["verification"] == pytest.approx(0.8)
        assert found[tier]["citation"]["lifecycle"] == "published"
        assert found[tier]["citation"]["verification"] == "auto"
    if 4 in tiers:  # the proposer's own proposal, graded as an unverified claim would be
        mine = found[4]
        assert (mine["verification"], mine["authority"]) == (pytest.approx(0.5), pytest.approx(0.40))
        assert mine["citation"]["lifecycle"] == "proposal"
        assert mine["citation"]["proposed_for"] == project.group
        # below the verified text
        assert mine["rank"] > max(found[tier]["rank"] for tier in (1, 2))


def test_the_vector_half_applies_the_guard_too(world: World, people: People, project: Project) -> None:
    for who, tiers in (("viewer", {1, 2}), ("proposer", {1, 2, 4})):
        with caller(world.db, people.keys[who]) as conn:
            hits = search(conn, embedding=embed(_text(4)), groups=[project.group], k=50)
        assert {hit["citation"]["tier"] for hit in hits} == tiers, who


@pytest.mark.parametrize(
    ("who", "tiers"),
    [("viewer", {1, 2, 3}), ("member", {1, 2, 3}), ("proposer", {1, 2, 3, 4}), ("admin", {1, 2, 3, 4})],
)
def test_who_reads_which_passage_row(
    world: World, people: People, project: Project, who: str, tiers: set[int]
) -> None:
    """As with claims: text pending review is readable in its scope (not searchable); a
    proposal only by its proposer and the scope's admins."""
    lifecycles = {1: "published", 2: "published", 3: "pending_review", 4: "proposal"}
    assert _rows(world.db, people.keys[who], project.group) == {tier: lifecycles[tier] for tier in tiers}


def test_the_review_queue_lists_waiting_passages_to_admins_only(
    world: World, people: People, project: Project
) -> None:
    with caller(world.db, people.keys["admin"]) as conn:
        waiting = conn.execute(
            "select chunk_id, lifecycle::text, tier, verification::text, source_name, external_id, proposed_by, text"
            " from vera.pending_passages(%s)", (project.group,)).fetchall()  # fmt: skip
    assert waiting == [
        (project.chunks[4], "proposal", 4, "pending", "chat", "chat.md", people.ids["proposer"], _text(4)),
        (
            project.chunks[3],
            "pending_review",
            3,
            "pending",
            "forum",
            "forum.md",
            people.ids["proposer"],
            _text(3),
        ),
    ]
    outsiders = {who: people.keys[who] for who in ("viewer", "member", "proposer")}
    for who, key in {**outsiders, "other tenant": world.b.owner_key}.items():
        with caller(world.db, key) as conn, pytest.raises(psycopg.Error) as refused:
            conn.execute("select * from vera.pending_passages(%s)", (project.group,))
        assert refused.value.sqlstate == "42501", who
        with caller(world.db, key) as conn, pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "select * from vera.review_passage(%s, %s, 'approve')", (project.group, project.chunks[3])
            )
        assert refused.value.sqlstate == "42501", who


def _review(database: Database, key: str, project: Project, tier: int, decision: str) -> tuple[Any, ...]:
    with caller(database, key) as conn:
        row = conn.execute("select * from vera.review_passage(%s, %s, %s, 'read it')",
                           (project.group, project.chunks[tier], decision)).fetchone()  # fmt: skip
        conn.commit()
    assert row is not None
    return tuple(row)


def test_approved_passages_answer_every_reader_as_human_verified(world: World, people: People) -> None:
    project = make_project(world, people, "approved")
    assert _review(world.db, people.keys["admin"], project, 3, "approve") == (
        project.chunks[3], project.group, "published")  # fmt: skip
    assert _review(world.db, people.keys["owner"], project, 4, "approve")[2] == "published"
    for who in ("viewer", "member", "proposer", "admin"):
        found = _searched(world.db, people.keys[who], project.group)
        assert set(found) == {1, 2, 3, 4}, who
        for tier, authority in ((3, 0.70), (4, 0.40)):
            assert (found[tier]["verification"], found[tier]["authority"]) == (
                pytest.approx(1.0), pytest.approx(authority))  # fmt: skip
            assert (found[tier]["citation"]["verification"], found[tier]["citation"]["lifecycle"]) == (
                "human_verified", "published")  # fmt: skip
            assert found[tier]["citation"]["proposed_for"] is None
    assert set(_rows(world.db, people.keys["viewer"], project.group)) == {1, 2, 3, 4}
    with caller(world.db, people.keys["admin"]) as conn:
        assert conn.execute(
            "select count(*) from vera.pending_passages(%s)", (project.group,)
        ).fetchone() == (0,)
        audited = conn.execute(
            "select action, target_id, detail from vera.audit_log where group_id = %s and target_kind = 'passage'"
            " order by audit_id", (project.group,)).fetchall()  # fmt: skip
        reviewed = conn.execute(
            "select reviewed_by from vera.chunks where group_id = %s and chunk_id = %s",
            (project.group, project.chunks[3]),
        ).fetchone()
    assert [(action, target) for action, target, _ in audited] == [
        ("passage.approve", str(project.chunks[3])), ("passage.approve", str(project.chunks[4]))]  # fmt: skip
    assert audited[0][2]["note"] == "read it" and WORD not in str(audited)
    assert reviewed == (people.ids["admin"],)


def test_a_rejected_passage_answers_nobody_and_only_its_proposer_and_admins_read_it(
    world: World, people: People
) -> None:
    project = make_project(world, people, "rejected")
    assert _review(world.db, people.keys["admin"], project, 4, "reject")[2] == "rejected"
    assert _review(world.db, people.keys["admin"], project, 3, "reject")[2] == "rejected"
    for who in ("viewer", "proposer", "admin"):
        assert set(_searched(world.db, people.keys[who], project.group)) == {1, 2}, who
    assert _rows(world.db, people.keys["viewer"], project.group) == {
        1: "published",
        2: "published",
        3: "rejected",
    }
    assert _rows(world.db, people.keys["proposer"], project.group)[4] == "rejected"
    assert _rows(world.db, people.keys["admin"], project.group)[4] == "rejected"
    with caller(world.db, people.keys["admin"]) as conn, pytest.raises(psycopg.Error) as decided:
        conn.execute(
            "select * from vera.review_passage(%s, %s, 'approve')", (project.group, project.chunks[4])
        )
    assert decided.value.sqlstate == "VN001"


def test_retracting_the_sources_takes_waiting_passages_out_of_search_and_of_the_queue(
    world: World, people: People
) -> None:
    project = make_project(world, people, "retracted")
    with caller(world.db, people.keys["admin"]) as conn:
        for tier in (3, 4):
            conn.execute("select vera.retract_source(%s, %s, 'not a source we trust')",
                         (project.group, project.sources[tier]))  # fmt: skip
        conn.commit()
    assert set(_searched(world.db, people.keys["proposer"], project.group)) == {1, 2}
    with caller(world.db, people.keys["admin"]) as conn:
        assert conn.execute(
            "select count(*) from vera.pending_passages(%s)", (project.group,)
        ).fetchone() == (0,)
        with pytest.raises(psycopg.Error) as gone:
            conn.execute(
                "select * from vera.review_passage(%s, %s, 'approve')", (project.group, project.chunks[4])
            )
        assert gone.value.sqlstate == "VN001"


def test_a_passage_of_a_replaced_version_leaves_the_queue(world: World, people: People) -> None:
    project = make_project(world, people, "replaced")
    with caller(world.db, people.keys["proposer"]) as conn:
        newer, version, _ = record_episode(conn, project.group, project.sources[4], "chat.md", "edited",
                                           observed_at="2026-04-01")  # fmt: skip
        conn.execute("select vera.store_chunks(%s, %s, %s)",
                     (project.group, newer, Jsonb([{"text": f"the {WORD} moved"}])))  # fmt: skip
        conn.commit()
    assert version == 2
    with caller(world.db, people.keys["admin"]) as conn:
        waiting = conn.execute(
            "select text, version from vera.pending_passages(%s)", (project.group,)
        ).fetchall()
    assert waiting == [(f"the {WORD} moved", 2), (_text(3), 1)]


def test_erasing_the_sources_leaves_no_trace_of_their_text(world: World, people: People) -> None:
    """Approved, pending and proposed passages, the claims drawn from them, votes and
    snapshot copies all go; the tier 1-2 text stays."""
    project = make_project(world, people, "erased")
    _review(world.db, people.keys["admin"], project, 3, "approve")  # so that a snapshot copies it
    with caller(world.db, people.keys["proposer"]) as conn:
        # a tier-4 claim citing the proposed passage (a proposal in the proposer's u: scope)
        publish(conn, project.group, project.episodes[4], [claim(WORD, "lives on", "cluster chat", chunk=0)])
        hit = next(h for h in search(conn, WORD, groups=[project.group]) if h["citation"]["tier"] == 4)
        conn.execute("select * from vera.record_feedback('passage', %s, %s, 'up')", (hit["item_id"], WORD))
        conn.commit()
    with world.db.connect(autocommit=True) as conn:
        conn.execute("begin isolation level repeatable read")
        conn.execute("select vera.authenticate(%s)", (people.keys["admin"],))
        [(copied,)] = conn.execute(
            "select item_count from vera.create_snapshot(%s, 'before erasure')", (project.group,)
        ).fetchall()
        conn.execute("commit")
    assert copied == 3
    with caller(world.db, people.keys["admin"]) as conn:
        for tier in (3, 4):
            conn.execute(
                "select vera.erase_source(%s, %s, 'GDPR request')", (project.group, project.sources[tier])
            )
        conn.commit()
    with world.db.admin() as admin:
        for tier in (3, 4):
            text = f"%cluster {SOURCES[tier]}%"
            # other tests' projects hold the same passages: this one's rows, and everything else anywhere
            for table, column, where in (
                ("chunks", "text", "group_id = %s"),
                ("snapshot_items", "text", "group_id = %s"),
                ("facts", "fact_text", "%s::text is not null"),
                ("audit_log", "detail::text", "%s::text is not null"),
            ):
                leftover = admin.execute(
                    f"select count(*) from vera.{table} where {column} like %s and {where}",
                    (text, project.group),
                )
                assert leftover.fetchone() == (0,), (tier, table)
            jobs = admin.execute("select count(*) from procrastinate.procrastinate_jobs where args::text like %s",
                                 (text,))  # fmt: skip
            assert jobs.fetchone() == (0,)
        assert admin.execute(
            "select count(*) from vera.feedback where item_id = %s", (hit["item_id"],)
        ).fetchone() == (0,)
        kept = admin.execute(
            "select count(*) from vera.chunks where group_id = %s", (project.group,)
        ).fetchone()
        copies = admin.execute(
            "select count(*) from vera.snapshot_items where group_id = %s", (project.group,)
        )
        assert (kept, copies.fetchone()) == ((2,), (2,))


def test_a_snapshot_copies_only_what_a_search_of_the_group_returns(world: World, people: People) -> None:
    """Taken by the proposer: its own proposal stays out (it answers the proposer, not the group),
    and the snapshot answers as a viewer's live search did at that instant."""
    project = make_project(world, people, "snapshot")
    query, vector = f"where does the {WORD} live", embed(f"where does the {WORD} live")
    with world.db.connect(autocommit=True) as conn:
        conn.execute("begin isolation level repeatable read")
        conn.execute("select vera.authenticate(%s)", (people.keys["proposer"],))
        [(taken, copied)] = conn.execute(
            "select created_at, item_count from vera.create_snapshot(%s, 'proposer''s')", (project.group,)).fetchall()  # fmt: skip
        mine = search(conn, query, embedding=vector, groups=[project.group])
        conn.execute("commit")
    assert copied == 2
    with caller(world.db, people.keys["viewer"]) as conn:
        live = search(conn, query, embedding=vector, groups=[project.group], as_of=taken)
        cursor = conn.execute("select * from vera.search_snapshot(%s, 'proposer''s', %s, %s::vector)",
                              (project.group, query, vector_literal(vector)))  # fmt: skip
        names = [column.name for column in cursor.description or []]
        frozen = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    assert [h["citation"]["tier"] for h in live] == [h["citation"]["tier"] for h in frozen] and len(live) == 2
    assert frozen == live
    assert sorted(h["citation"]["tier"] for h in mine) == [1, 2, 4]


def test_storing_the_same_text_again_keeps_its_review_and_new_text_is_graded_afresh(
    world: World, people: People
) -> None:
    project = make_project(world, people, "restored")
    _review(world.db, people.keys["admin"], project, 4, "approve")

    def store(text: str) -> None:
        with caller(world.db, people.keys["proposer"]) as conn:
            conn.execute(
                "select vera.store_chunks(%s, %s, %s)",
                (project.group, project.episodes[4], Jsonb([{"text": text}])),
            )
            conn.commit()

    store(_text(4))
    assert _rows(world.db, people.keys["viewer"], project.group)[4] == "published"
    store(f"the {WORD} lives on heroku, no doubt")
    assert 4 not in _rows(world.db, people.keys["viewer"], project.group)
    with caller(world.db, people.keys["admin"]) as conn:
        assert conn.execute(
            "select lifecycle::text, verification::text, reviewed_by from vera.chunks where chunk_id = %s",
            (project.chunks[4],)).fetchone() == ("proposal", "pending", None)  # fmt: skip


def test_in_ones_own_scope_every_passage_answers_its_owner(world: World, people: People) -> None:
    personal = world.a.owner_personal
    with caller(world.db, world.a.owner_key) as conn:
        chat = register_source(conn, personal, "my chat", 4)
        episode, _, _ = record_episode(conn, personal, chat, "note.md", "note")
        conn.execute(
            "select vera.store_chunks(%s, %s, %s)", (personal, episode, Jsonb([{"text": f"my {WORD}"}]))
        )
        [hit] = [h for h in search(conn, f"my {WORD}", groups=[personal]) if h["text"] == f"my {WORD}"]
    assert (hit["citation"]["lifecycle"], hit["citation"]["verification"]) == ("published", "pending")
