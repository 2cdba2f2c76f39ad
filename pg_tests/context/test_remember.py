"""Remember in one call (sql/functions/216_remember.sql): a text or a chat
transcript, and structured claims, recorded as one episode through the
ordinary write path, idempotent by content, graded and guarded by its
source's tier; from SQL, from both faces of the client, and the personal
memory recipe of docs/python-client.md (one user of an app, no admin calls)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.searching import MODEL, embed, search, vector_literal
from pg_tests.support.seed import World, caller
from pg_tests.support.writes import register_source
from vera_client.api import access as access_api
from vera_client.api import context as context_api
from vera_client.bootstrap import build_providers
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.config import DbSettings, EmbedderSettings, ObjectStoreSettings, VeraSettings
from vera_client.domain.callers import Operator, Principal
from vera_client.domain.errors import InvalidArgumentError, PermissionDeniedError
from vera_worker.domain.markdown import parse_plain_text


def _remember(conn: psycopg.Connection, **arguments: Any) -> dict[str, Any]:
    named = ", ".join(f"{name} => %({name})s" for name in arguments)
    params = {name: psycopg.types.json.Jsonb(v) if name in {"messages", "claims", "embeddings"} else v
              for name, v in arguments.items()}  # fmt: skip
    cursor = conn.execute(f"select * from vera.remember({named})", params)  # type: ignore[arg-type]
    columns = [column.name for column in cursor.description or []]
    row = cursor.fetchone()
    assert row is not None
    return dict(zip(columns, row, strict=True))


def _sqlstate(conn: psycopg.Connection, **arguments: Any) -> str | None:
    with conn.transaction():
        try:
            with conn.transaction():  # a savepoint: the test's transaction goes on
                _remember(conn, **arguments)
        except psycopg.Error as error:
            return error.sqlstate
    return None


def test_a_text_is_remembered_once_in_the_callers_personal_scope(world: World) -> None:
    text = "I prefer window seats.\n\nMy daughter Linh is allergic to peanuts."
    with caller(world.db, world.a.owner_key) as conn:
        first = _remember(conn, content=text)
        again = _remember(conn, content=text)
        source = conn.execute(
            "select kind, trust_tier from vera.sources where group_id = %s and source_id = %s",
            (first["group_id"], first["source_id"]),
        ).fetchone()
        chunks = conn.execute(
            "select text, char_start, char_end from vera.chunks where episode_id = %s order by ordinal",
            (first["episode_id"],),
        ).fetchall()
        found = conn.execute(
            "select text from vera.search('peanuts allergic', groups => %s)", ([world.a.owner_personal],)
        ).fetchall()
        other = conn.execute(
            "select count(*) from vera.search('peanuts allergic', groups => %s)", ([world.a.organisation],)
        ).fetchone()
    assert first["group_id"] == world.a.owner_personal and first["created"]
    assert (first["passages"], first["claims_recorded"], first["lifecycle"]) == (1, 0, "published")
    assert source == ("memory", 3)  # registered on first use, informational
    assert again["episode_id"] == first["episode_id"] and not again["created"]
    assert again["passages"] == 0  # nothing new was recorded
    assert [c[0] for c in chunks] == [text] and (chunks[0][1], chunks[0][2]) == (0, len(text))
    assert any("peanuts" in row[0] for row in found)
    assert other == (0,)  # the organisation does not see a personal memory


@pytest.mark.parametrize(
    "text",
    [
        "one line",
        "  leading space\n\n\n  second paragraph  \n",
        "Tiếng Việt: Lan thích cà phê sữa đá.\n\n" + "Một câu dài. " * 150,
        ("A sentence that goes on. " * 60 + "\n") * 3 + "\n\n" + "x" * 2600,
        "short\n\n" + "word " * 230 + "\n\nend.",
        "\n \n".join(f"Đoạn {i} ngắn, có dấu." for i in range(300)) + "\n\t\n",
    ],
)
def test_sql_cuts_plain_text_as_the_folder_connector_does(world: World, text: str) -> None:
    """vera.plain_passages and parse_plain_text (python/vera_worker/domain/markdown.py) agree."""
    with world.db.admin() as conn:  # an internal function: the definer vera.remember calls it
        row = conn.execute("select vera.plain_passages(%s)", (text,)).fetchone()
    assert row is not None
    expected = [p.as_chunk() for p in parse_plain_text(text, name="memory.txt").passages]
    assert row[0] == expected


def test_a_chat_transcript_is_one_passage_per_message_with_its_speaker(world: World) -> None:
    messages = [
        {"role": "user", "content": "I moved to Đà Nẵng last month."},
        {"role": "assistant", "content": "Noted: you live in Đà Nẵng now."},
        {"role": "user", "name": "Minh", "content": "And I work from home on Fridays."},
    ]
    at = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    with caller(world.db, world.a.owner_key) as conn:
        done = _remember(conn, messages=messages, source="chat", at=at)
        chunks = conn.execute(
            "select heading, text from vera.chunks where episode_id = %s order by ordinal",
            (done["episode_id"],),
        ).fetchall()
        observed = conn.execute(
            "select observed_at, mime from vera.episodes where episode_id = %s", (done["episode_id"],)
        ).fetchone()
        # the same words as a text are other content: a second episode
        as_text = _remember(conn, content=messages[0]["content"], source="chat")
    assert done["passages"] == 3
    assert chunks == [("user", messages[0]["content"]), ("assistant", messages[1]["content"]),
                      ("Minh", messages[2]["content"])]  # fmt: skip
    assert observed == (at, "application/json")
    assert as_text["created"] and as_text["episode_id"] != done["episode_id"]


def test_claims_are_published_with_the_text_and_keyed_with_it(world: World) -> None:
    claims = [{"subject": "Linh", "predicate": "allergic to", "object": "peanuts", "chunk": 0}]
    with caller(world.db, world.a.owner_key) as conn:
        done = _remember(conn, content="Linh is allergic to peanuts.", claims=claims, source="family")
        fact = conn.execute(
            "select predicate, object_value, lifecycle::text, chunk_id is not null, tier from vera.facts "
            "where group_id = %s and episode_id = %s",
            (done["group_id"], done["episode_id"]),
        ).fetchone()
        # the same text with other claims is new content
        other = _remember(conn, content="Linh is allergic to peanuts.", source="family",
                          claims=[{"subject": "Linh", "predicate": "likes", "object": "mango"}])  # fmt: skip
    assert (done["claims_recorded"], done["claims_published"]) == (1, 1)
    assert fact == ("ALLERGIC_TO", "peanuts", "published", True, 3)
    assert other["created"] and other["claims_published"] == 1


def test_a_shared_scope_gets_what_its_sources_tier_allows(world: World) -> None:
    """The guard as for any write: a tier-3 source waits for review; a member cannot create a
    source; a tier-4 source's claims are proposals in the caller's own scope."""
    team = f"team-{uuid4().hex[:8]}"
    claims = [{"subject": "billing-api", "predicate": "owned by", "object": team}]
    with caller(world.db, world.a.owner_key) as conn:
        done = _remember(conn, content=f"billing-api is owned by {team}", to_group=world.a.organisation,
                         source="notes", claims=claims)  # fmt: skip
        waiting = conn.execute(
            "select lifecycle::text from vera.facts where group_id = %s and episode_id = %s",
            (world.a.organisation, done["episode_id"]),
        ).fetchall()
        register_source(conn, world.a.workspace, "agent notes", 4, kind="memory")
        conn.commit()
    assert (done["lifecycle"], done["claims_published"]) == ("pending_review", 0)
    assert waiting == [("pending_review",)]
    with caller(world.db, world.a.viewer_key) as conn:
        unseen = conn.execute(
            "select count(*) from vera.search(%s, groups => %s)", (team, [world.a.organisation])
        ).fetchone()
        assert _sqlstate(conn, content="x", to_group=world.a.organisation) == "42501"  # a viewer
    assert unseen == (0,)
    service_key = _key_of(world, world.a.service)
    with caller(world.db, service_key) as conn:
        # a member may not register a source, but may remember under one an admin registered
        assert _sqlstate(conn, content="guess", to_group=world.a.workspace, source="new") == "42501"
        done = _remember(conn, content="I think billing-api runs on k8s-2", to_group=world.a.workspace,
                         source="agent notes",
                         claims=[{"subject": "billing-api", "predicate": "runs on", "object": "k8s-2"}])  # fmt: skip
        landed = conn.execute(
            "select f.group_id like 'u:%%', f.lifecycle::text, f.proposed_for from vera.facts f "
            "where f.fact_text like 'billing-api runs on k8s-2'"
        ).fetchone()
    assert done["lifecycle"] == "proposal" and done["claims_published"] == 0
    assert landed == (True, "proposal", world.a.workspace)


def _key_of(world: World, principal: object) -> str:
    with world.db.admin() as conn:
        row = conn.execute("select api_key from vera.issue_api_key(%s, 'remember test', null)", (principal,))
        found = row.fetchone()
    assert found is not None
    return str(found[0])


@pytest.mark.parametrize(
    ("arguments", "sqlstate"),
    [
        ({}, "22023"),  # neither content nor messages
        ({"content": "a", "messages": [{"role": "user", "content": "b"}]}, "22023"),  # both
        ({"content": "  \n "}, "22023"),
        ({"content": "x" * 100_001}, "22001"),
        ({"messages": []}, "22023"),
        ({"messages": {"role": "user"}}, "22023"),
        ({"messages": [{"role": "user"}]}, "22023"),
        ({"messages": [{"role": "user", "content": 5}]}, "22023"),
        ({"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": " "}]}, "22023"),
        ({"messages": [{"role": ["x"], "content": "hi"}]}, "22023"),
        ({"messages": [{"role": "user", "content": "x" * 20_001}]}, "22001"),
        ({"messages": [{"role": "user", "content": "hi"}] * 1001}, "54000"),
        ({"content": "a", "source": " "}, "22023"),
        ({"content": "a", "source": "s" * 201}, "22023"),
        ({"content": "a", "at": "infinity"}, "22023"),
        ({"content": "a", "at": "10000-01-01 00:00+00"}, "22023"),
        ({"content": "a", "claims": {"subject": "x"}}, "22023"),
        ({"content": "a", "claims": [{"subject": "x"}] * 1001}, "54000"),
        ({"content": "a", "claims": [{"subject": "x", "predicate": "p", "object": ""}]}, "22023"),
        (
            {"content": "a", "claims": [{"subject": "x", "predicate": "p", "object": "y", "chunk": 9}]},
            "22023",
        ),
    ],
)
def test_bad_input_gets_a_specific_sqlstate(world: World, arguments: dict[str, Any], sqlstate: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        assert _sqlstate(conn, **arguments) == sqlstate


def test_another_tenants_group_is_refused_like_the_rest_of_the_api(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        for group in (world.b.organisation, world.b.owner_personal, "o:does-not-exist"):
            assert _sqlstate(conn, content="leak?", to_group=group) == "42501"
            assert _sqlstate(conn, content="leak?", to_group=group, source="memory") == "42501"
        # a retracted source is not written to
        done = _remember(conn, content="to be retracted", source="gone")
        conn.execute("select vera.retract_source(%s, %s, 'test')", (done["group_id"], done["source_id"]))
        assert _sqlstate(conn, content="after", source="gone") == "22023"
    with caller(world.db, None) as conn:
        assert _sqlstate(conn, content="who am I?") == "VA005"
    with world.db.admin() as conn:
        b_wrote = conn.execute(
            "select count(*) from vera.episodes where group_id in (%s, %s) and title like 'leak?%%'",
            (world.b.organisation, world.b.owner_personal),
        ).fetchone()
    assert b_wrote == (0,)


def test_both_faces_of_the_client_remember(world: World, owner_a: VeraClient) -> None:
    text = f"The sync face remembers {uuid4()}."
    first = owner_a.remember(text, source="client")
    again = owner_a.remember(text, source="client")
    found = {hit.text for hit in owner_a.search(text, k=5)}  # the one-user recipe: remember, then search
    with pytest.raises(InvalidArgumentError, match="text, or a list of messages"):
        owner_a.remember({"role": "user", "content": "a dict is not a list"})  # type: ignore[arg-type]
    with pytest.raises(PermissionDeniedError):
        owner_a.remember("x", group=world.b.organisation)
    assert first.created and not again.created and first.episode_id == again.episode_id
    assert first.group_id == world.a.owner_personal and first.passages == 1 and text in found

    async def asynchronously() -> tuple[bool, int, str | None]:
        client = await AsyncVeraClient.connect(world.db.dsn(APP_LOGIN), world.a.owner_key)
        async with client:
            done = await client.remember(
                [{"role": "user", "content": f"The async face remembers {uuid4()}."}], source="client"
            )
            return done.created, done.passages, done.lifecycle

    assert asyncio.run(asynchronously()) == (True, 1, "published")


def test_the_personal_memory_recipe(world: World) -> None:
    """docs/python-client.md, "Personal memory for one user of an app": the app's server maps
    its user ids to principals just in time (the gateway's provisioning, no admin call) and
    remembers and searches as each user; one user never finds another's memories."""
    app_users = {"alice": "Alice prefers aisle seats on long flights.",
                 "bob": "Bob prefers window seats on long flights."}  # fmt: skip
    with VeraClient(world.db.dsn("vera_gateway")) as server:
        principals = {}
        for user_id, memory in app_users.items():
            principals[user_id] = server.executor.run(
                Operator(),
                access_api.provision_identity(
                    "https://app.example", f"{user_id}-{uuid4()}", display_name=user_id, email=None,
                    group_id=world.a.organisation, role="viewer",
                ),
            )  # fmt: skip
            server.as_caller(Principal(principals[user_id])).remember(memory)
        alice = server.as_caller(Principal(principals["alice"]))
        [personal] = [m.group_id for m in alice.whoami() if m.group_kind == "personal"]
        hits = alice.search("which seats on long flights?", groups=[personal])
        everything = alice.search("prefers seats long flights", k=20)
    assert [hit.text for hit in hits] == [app_users["alice"]]
    assert app_users["bob"] not in {hit.text for hit in everything}


def _fresh_user(world: World) -> str:
    """A key of a new user with nothing but its personal scope (no pin yet)."""
    with world.db.admin() as conn:
        row = conn.execute(
            "select api_key from vera.issue_api_key(vera.insert_principal('user', 'memory user', null), 'k', null)"
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_with_an_embedder_the_passages_get_vectors_of_the_groups_pin(world: World, tmp_path: Path) -> None:
    key = _fresh_user(world)
    settings = VeraSettings(
        db=DbSettings(data_dir=tmp_path / "pg"),
        embedder=EmbedderSettings(provider="deterministic", dim=16),
        objects=ObjectStoreSettings(root=tmp_path / "objects"),
    )
    providers = build_providers(settings)
    with client_for(world, key, providers=providers) as vera:
        done = vera.remember([{"role": "user", "content": "I keep my bike in the blue shed."},
                              {"role": "assistant", "content": "The blue shed, noted."}])  # fmt: skip
        preview = vera.executor.run(
            vera.caller,  # type: ignore[arg-type]
            context_api.remember_passages(content="Another memory.", messages=None, group=None),
        )
        hits = vera.search("bike shed", k=3)
    with world.db.admin() as conn:
        stored = conn.execute(
            "select count(*), count(embedding) from vera.chunks where episode_id = %s", (done.episode_id,)
        ).fetchone()
        pin = conn.execute(
            "select embedding_model, embedding_dim from vera.groups where group_id = %s", (done.group_id,)
        ).fetchone()
    assert stored == (2, 2)
    assert pin == ("deterministic-hash-16", 16)
    assert (preview.group_id, preview.embedding_model, preview.embedding_dim) == (done.group_id, *pin)
    assert preview.passages == [{"text": "Another memory.", "char_start": 0, "char_end": 15}]
    assert hits and hits[0].text == "I keep my bike in the blue shed."
    assert hits[0].signals.relevance > 0


def test_vectors_must_match_the_passages_and_the_pin(world: World) -> None:
    key = _fresh_user(world)
    with caller(world.db, key) as conn:
        preview = conn.execute("select * from vera.remember_passages(content => 'one.\n\ntwo.')").fetchone()
        assert preview is not None and preview[1] is None  # no pin yet
        assert (
            _sqlstate(conn, content="one.", embeddings=[[0.1, 0.2], [0.3, 0.4]], embedding_model="m")
            == "22023"
        )
        assert _sqlstate(conn, content="one.", embeddings={"v": 1}, embedding_model="m") == "22023"
        _remember(conn, content="one.", embeddings=[[0.6, 0.8]], embedding_model="tiny-2")
        assert (
            _sqlstate(conn, content="two.", embeddings=[[0.6, 0.8, 0.0]], embedding_model="tiny-3") == "VE001"
        )
        assert _sqlstate(conn, content="x", to_group=world.b.organisation) == "42501"
        refused = None
        try:
            with conn.transaction():
                conn.execute("select * from vera.remember_passages(content => 'x', to_group => %s)",
                             (world.b.owner_personal,))  # fmt: skip
        except psycopg.Error as error:
            refused = error.sqlstate
        assert refused == "42501"


def _noise(conn: psycopg.Connection, count: int) -> None:
    """Other memories of the caller's personal scope, with vectors (so the scope is pinned and a
    query vector is searched), that share a word or a number with the query but not both."""
    for i in range(count):
        text = f"Locker room {i}: the gym opens at {i % 24}." if i % 2 else f"Bus 12 stop number {i}."
        _remember(conn, content=text, embeddings=[embed(text)], embedding_model=MODEL, source="noise")


def test_a_claim_remembered_without_a_vector_is_found_by_its_words_at_once(world: World) -> None:
    """No worker has run, so the fact has no vector: the lexical half finds it first among
    thirty memories that share a word or the number (issue 28's "locker 12"). Searched with a
    query vector too, a fact without one has no vector rank to fuse; the client gives it one
    (test_with_an_embedder_remembered_claims_get_the_vector_the_worker_would_give)."""
    key = _fresh_user(world)
    with caller(world.db, key) as conn:
        _noise(conn, 30)
        done = _remember(conn, content="Where my bike is.", source="bike",
                         claims=[{"subject": "my bike", "predicate": "kept in", "object": "locker 12"}])  # fmt: skip
        [(fact_id, vector)] = conn.execute(
            "select fact_id, embedding from vera.facts where group_id = %s and episode_id = %s",
            (done["group_id"], done["episode_id"]),
        ).fetchall()
        by_words = search(conn, "locker 12", k=5)
    assert vector is None  # nothing embedded it
    assert (by_words[0]["kind"], by_words[0]["item_id"]) == ("fact", fact_id)


def test_a_fact_without_a_vector_is_judged_by_its_words_when_the_query_has_a_vector(world: World) -> None:
    """A SQL caller that sends the query's vector too (issue 28): the vector-less fact has no
    similarity, so its match is read from its words alone, as if the query had no vector, and it
    is first among thirty embedded memories that share a word or the number; a missing half is
    not a miss."""
    key = _fresh_user(world)
    with caller(world.db, key) as conn:
        _noise(conn, 30)
        done = _remember(conn, content="Where my bike is.", source="bike",
                         claims=[{"subject": "my bike", "predicate": "kept in", "object": "locker 12"}])  # fmt: skip
        [(fact_id,)] = conn.execute(
            "select fact_id from vera.facts where group_id = %s and episode_id = %s",
            (done["group_id"], done["episode_id"]),
        ).fetchall()
        question = "kept in locker 12"  # (the hashed words of "locker 12" alone cancel out)
        hybrid = search(conn, question, embedding=embed(question), k=5)
        by_words = search(conn, question, k=5)
    first = hybrid[0]
    assert (first["kind"], first["item_id"]) == ("fact", fact_id), [
        (hit["text"], hit["match_confidence"], hit["lexical_match"], hit["similarity"]) for hit in hybrid
    ]
    alone = next(hit for hit in by_words if hit["item_id"] == fact_id)
    assert first["similarity"] is None
    assert first["match_confidence"] == pytest.approx(alone["match_confidence"])


def test_claim_fact_texts_are_the_texts_publish_stores(world: World) -> None:
    claims = [
        {"subject": " billing-api ", "predicate": "runsOn", "object": "cluster green"},
        {"subject": "x", "predicate": "is", "object": "y", "fact_text": "  X is y, said Lan.  "},
        {"subject": "x", "predicate": "--", "object": "y"},  # no predicate: refused by publish
        "not a claim",
    ]
    with caller(world.db, world.a.owner_key) as conn:
        texts = conn.execute(
            "select vera.claim_fact_texts(%s)", (psycopg.types.json.Jsonb(claims),)
        ).fetchone()
        nothing = conn.execute("select vera.claim_fact_texts('{\"a\": 1}')").fetchone()
        done = _remember(conn, content="billing-api runs on cluster green.", claims=claims[:2])
        stored = conn.execute(
            "select fact_text from vera.facts where group_id = %s and episode_id = %s order by fact_text",
            (done["group_id"], done["episode_id"]),
        ).fetchall()
    assert texts == (["billing-api runs on cluster green", "X is y, said Lan.", None, None],)
    assert nothing == ([],)
    assert sorted(t for t in texts[0][:2]) == [row[0] for row in stored]


def test_with_an_embedder_remembered_claims_get_the_vector_the_worker_would_give(
    world: World, tmp_path: Path
) -> None:
    key = _fresh_user(world)
    settings = VeraSettings(
        db=DbSettings(data_dir=tmp_path / "pg"),
        embedder=EmbedderSettings(provider="deterministic", dim=16),
        objects=ObjectStoreSettings(root=tmp_path / "objects"),
    )
    providers = build_providers(settings)
    claims = [{"subject": "my bike", "predicate": "kept in", "object": "locker 12"},
              {"subject": "my car", "predicate": "parked at", "object": "level 3", "fact_text": "The car is on level 3"}]  # fmt: skip
    with client_for(world, key, providers=providers) as vera:
        done = vera.remember("Where my things are.", claims=claims)
        again = vera.remember("Where my things are.", claims=claims)
        hits = vera.search("locker 12", k=3)  # hybrid: the query is embedded too
    embedder = providers.embedder()
    with world.db.admin() as conn:
        stored = conn.execute(
            "select fact_text, embedding::text from vera.facts where episode_id = %s order by fact_text",
            (done.episode_id,),
        ).fetchall()
        expected = {text: vector_literal(embedder.embed([text])[0]) for text, _ in stored}
        nearest = conn.execute(
            "select fact_text from vera.facts where group_id = %s and embedding is not null "
            "order by embedding <=> %s::vector limit 1",
            (done.group_id, vector_literal(embedder.embed(["my bike kept in locker 12"])[0])),
        ).fetchone()
    assert [text for text, _ in stored] == ["The car is on level 3", "my bike kept in locker 12"]
    assert all(vector is not None for _, vector in stored)
    assert {
        text: vector_literal([float(x) for x in vector.strip("[]").split(",")]) for text, vector in stored
    } == expected
    assert nearest == ("my bike kept in locker 12",)
    assert hits[0].text == "my bike kept in locker 12"
    assert not again.created and again.episode_id == done.episode_id  # vectors are not content
