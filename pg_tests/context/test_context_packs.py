"""Context packs (sql/functions/215_context_packs.sql, vera_client's
get_context): assembled from a real search, stored in the caller's u: scope,
read back by that principal only, emptied by erasure of what they quote, and
voted on by position exactly as a hit is."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any
from uuid import UUID

import psycopg
import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World, caller
from vera_client.api.reads import ExploredFact
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.domain.context import ASSEMBLER_VERSION, ContextPack
from vera_client.domain.errors import InvalidArgumentError, NotFoundError

SIGNALS = {
    "relevance": 1,
    "authority": 1,
    "verification": 0.8,
    "recency": 1,
    "feedback": 0.5,
    "confidence": 1,
}


@dataclass
class Corpus:
    group: str
    source: UUID
    kept_episode: UUID
    erased_episode: UUID


@pytest.fixture(scope="module")
def viewer(world: World) -> Iterator[VeraClient]:
    with client_for(world, world.a.viewer_key) as client:
        yield client


def _load(owner: VeraClient, world: World, name: str) -> Corpus:
    """A project with two episodes of a CMDB: one to keep, one to erase (passages and facts in each)."""
    group = owner.create_group(world.a.organisation, "project", name)
    owner.declare_predicate(group, "runs on", "functional")
    source = owner.register_source(group, "cmdb", "cmdb", 1)
    kept = owner.record_episode(group, source, "kept.md", b"k" * 32).episode_id
    erased = owner.record_episode(group, source, "erased.md", b"e" * 32).episode_id
    owner.store_chunks(group, kept, [{"text": "The billing-api service is restarted with a rolling deploy."}])
    owner.store_chunks(group, erased, [{"text": "The billing-api secret rotation runbook lives in vault."}])
    owner.publish(
        group, kept, [{"subject": "billing-api", "predicate": "owned by", "object": "team payments"}]
    )
    owner.publish(
        group, erased, [{"subject": "billing-api", "predicate": "runs on", "object": "cluster green"}]
    )
    return Corpus(group=group, source=source, kept_episode=kept, erased_episode=erased)


@pytest.fixture(scope="module")
def corpus(owner_a: VeraClient, world: World) -> Corpus:
    return _load(owner_a, world, "context packs")


def test_a_pack_from_a_real_search_within_its_budget(owner_a: VeraClient, corpus: Corpus) -> None:
    pack = owner_a.get_context("billing-api", token_budget=100, groups=[corpus.group])
    assert pack.pack_id is not None and pack.assembler_version == ASSEMBLER_VERSION
    assert len(pack.items) == 4 and pack.tokens_used <= 100
    assert [i.position for i in pack.items] == [1, 2, 3, 4]
    assert all(i.tokens > 0 and i.text and i.citation["source"]["name"] == "cmdb" for i in pack.items)
    assert set(pack.weights or {}) == {corpus.group}
    assert pack.searched_groups == [corpus.group] and pack.groups == [corpus.group]
    again = owner_a.get_context_pack(pack.pack_id)
    assert again == pack
    tight = owner_a.get_context("billing-api", token_budget=100, groups=[corpus.group], max_tier=0 + 1, k=2)
    assert len(tight.items) + len(tight.omitted) == 2


def test_the_pack_keeps_conflicts_and_warnings(owner_a: VeraClient, world: World) -> None:
    corpus = _load(owner_a, world, "context pack conflicts")
    notes = owner_a.register_source(corpus.group, "notes", "notes", 3)
    note = owner_a.record_episode(corpus.group, notes, "n.md", b"n" * 32).episode_id
    owner_a.publish(
        corpus.group, note, [{"subject": "billing-api", "predicate": "runs on", "object": "purple"}]
    )
    pack = owner_a.get_context("billing-api cluster", token_budget=1000, groups=[corpus.group])
    assert [(c.subject, c.predicate, sorted(v.object for v in c.values)) for c in pack.conflicts] == [
        ("billing-api", "RUNS_ON", ["cluster green", "purple"]),
    ]  # fmt: skip
    assert owner_a.get_context_pack(pack.pack_id).conflicts == pack.conflicts  # type: ignore[arg-type]


def test_only_its_principal_reads_a_pack(
    owner_a: VeraClient, viewer: VeraClient, owner_b: VeraClient, corpus: Corpus
) -> None:
    pack = owner_a.get_context("billing-api", token_budget=200, groups=[corpus.group])
    assert pack.pack_id is not None
    nowhere = uuid.uuid4()
    answers = []
    for reader, pack_id in ((viewer, pack.pack_id), (viewer, nowhere)):
        with pytest.raises(NotFoundError) as refused:
            reader.get_context_pack(pack_id)
        answers.append((refused.value.sqlstate, str(refused.value).replace(str(pack_id), "?")))
    with pytest.raises(NotFoundError) as foreign:
        owner_b.get_context_pack(pack.pack_id)
    with pytest.raises(NotFoundError):
        owner_b.pack_feedback(pack.pack_id, 1, "up")
    answers.append((foreign.value.sqlstate, str(foreign.value).replace(str(pack.pack_id), "?")))
    assert len(set(answers)) == 1 and answers[0][0] == "VN001"


def test_erasure_empties_the_packs_that_quote_it(
    owner_a: VeraClient, viewer: VeraClient, world: World
) -> None:
    corpus = _load(owner_a, world, "context pack erasure")
    # the viewer's pack: another principal than the admin who erases
    pack = viewer.get_context("billing-api", token_budget=1000, groups=[corpus.group])
    assert pack.pack_id is not None
    quoted = {i.citation["episode"]["external_id"] for i in pack.items}  # type: ignore[index]
    assert quoted == {"kept.md", "erased.md"}
    owner_a.erase_episode(corpus.group, corpus.erased_episode, "leaked a secret")
    after = viewer.get_context_pack(pack.pack_id)
    erased = [i for i in after.items if i.erased]
    kept = [i for i in after.items if not i.erased]
    assert len(erased) == 2 and len(kept) == 2
    assert all(i.text == "" and "episode" not in i.citation for i in erased)
    assert all("vault" not in i.text and "cluster green" not in i.text for i in after.items)
    assert {i.citation["episode"]["external_id"] for i in kept} == {"kept.md"}  # type: ignore[index]
    assert [i.position for i in after.items] == [i.position for i in pack.items]
    # erasing the whole source empties the rest
    owner_a.erase_source(corpus.group, corpus.source, "gone")
    assert all(i.erased and i.text == "" for i in viewer.get_context_pack(pack.pack_id).items)


def test_a_vote_on_a_pack_position_lands_on_the_item_as_a_vote_on_a_hit(
    owner_a: VeraClient, corpus: Corpus
) -> None:
    pack = owner_a.get_context("billing-api", token_budget=200, groups=[corpus.group])
    assert pack.pack_id is not None
    first = pack.items[0]
    vote = owner_a.pack_feedback(pack.pack_id, 1, "up")
    assert vote.group_id == corpus.group and vote.created
    # the same vote as a hit of the same query: the one vote of this principal, item and query
    again = owner_a.feedback(first.kind, first.item_id, "billing-api", "down", groups=[corpus.group])
    assert again.feedback_id == vote.feedback_id and not again.created
    with pytest.raises(NotFoundError):
        owner_a.pack_feedback(pack.pack_id, 99, "up")
    with pytest.raises(InvalidArgumentError):
        owner_a.pack_feedback(pack.pack_id, 1, "sideways")


def test_a_pack_keeps_the_period_its_search_asked_about(owner_a: VeraClient, corpus: Corpus) -> None:
    asked = owner_a.get_context(
        "billing-api", token_budget=200, groups=[corpus.group], during=(date(2020, 1, 1), date(2021, 1, 1))
    )
    assert asked.during is not None and (asked.during.start, asked.during.end) == (
        date(2020, 1, 1),
        date(2021, 1, 1),
    )
    assert asked.items and all(item.signals.period is not None for item in asked.items)
    assert asked.pack_id is not None and owner_a.get_context_pack(asked.pack_id).during == asked.during
    # a vote on one of its items is recorded as on a search that asked about the same period
    assert owner_a.pack_feedback(asked.pack_id, 1, "up").signals["period"] is not None

    # the period the query's words state; a period passed wins over them; detect_time=False reads none
    read = owner_a.get_context("billing-api from 2019 to 2021", groups=[corpus.group])
    assert read.during is not None and (read.during.start, read.during.end, read.during.text) == (
        date(2019, 1, 1), date(2022, 1, 1), "from 2019 to 2021"
    )  # fmt: skip
    passed = owner_a.get_context(
        "billing-api in 2019", groups=[corpus.group], during=(date(2023, 1, 1), None)
    )
    assert passed.during is not None and (passed.during.start, passed.during.end) == (date(2023, 1, 1), None)
    assert owner_a.get_context("billing-api in 2019", groups=[corpus.group], detect_time=False).during is None

    unasked = owner_a.get_context("billing-api", token_budget=200, groups=[corpus.group])
    assert unasked.during is None and all(item.signals.period is None for item in unasked.items)
    assert unasked.pack_id is not None and owner_a.get_context_pack(unasked.pack_id).during is None


def test_client_refuses_bad_requests_before_searching(owner_a: VeraClient) -> None:
    for arguments in (
        {"token_budget": 99},
        {"token_budget": 32_001},
        {"max_tier": 5},
        {"min_authority": 2.0},
    ):
        with pytest.raises(InvalidArgumentError):
            owner_a.get_context("billing-api", **arguments)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        owner_a.get_context("x" * 8193)
    with pytest.raises(InvalidArgumentError, match="end after it starts"):
        owner_a.get_context("billing-api", during=(date(2021, 1, 1), date(2020, 1, 1)))


# --- vera.store_context_pack in SQL ------------------------------------------------------------------


def _store(conn: psycopg.Connection, **arguments: Any) -> UUID:
    defaults: dict[str, Any] = {"query": "billing-api", "token_budget": 1000, "items": "[]"}
    values = defaults | arguments
    named = ", ".join(f"{name} => %({name})s" for name in values)
    row = conn.execute(f"select vera.store_context_pack({named})", values).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return UUID(str(row[0]))


def _item(item_id: UUID | str, kind: str = "fact", tokens: int = 10, **signals: Any) -> dict[str, Any]:
    return {"kind": kind, "item_id": str(item_id), "tokens": tokens, "signals": SIGNALS | signals}


def _foreign_fact(world: World) -> UUID:
    with world.db.admin() as conn:
        row = conn.execute(
            "select fact_id from vera.facts where group_id = %s", (world.b.organisation,)
        ).fetchone()
    assert row is not None
    return UUID(str(row[0]))


def test_sql_stores_what_the_database_holds_not_what_the_client_says(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
        [fact] = conn.execute(
            "select item_id from vera.search('team payments', groups => %s, k => 1)", ([corpus.group],)
        ).fetchall()
        pack = _store(conn, items=json.dumps([{**_item(fact[0]), "text": "forged", "citation": {}}]),
                      groups=[corpus.group])  # fmt: skip
        [stored] = conn.execute("select items from vera.get_context_pack(%s)", (pack,)).fetchone()  # type: ignore[misc]
    assert stored[0]["text"] == "billing-api owned by team payments"
    assert stored[0]["citation"]["source"]["name"] == "cmdb"


@pytest.mark.parametrize(
    ("arguments", "sqlstate"),
    [
        ({"query": ""}, "22023"),
        ({"query": "x" * 8193}, "22001"),
        ({"token_budget": 99}, "22023"),
        ({"token_budget": 32001}, "22023"),
        ({"token_budget": None}, "22023"),
        ({"items": '{"kind": "fact"}'}, "22023"),
        (
            {
                "items": json.dumps(
                    [{"kind": "claim", "item_id": str(uuid.uuid4()), "tokens": 1, "signals": SIGNALS}]
                )
            },
            "22023",
        ),
        (
            {"items": json.dumps([{"kind": "fact", "item_id": "nope", "tokens": 1, "signals": SIGNALS}])},
            "22023",
        ),
        ({"items": json.dumps([_item(uuid.uuid4(), tokens=-1)])}, "22023"),
        ({"items": json.dumps([_item(uuid.uuid4(), relevance=2)])}, "22023"),
        ({"items": json.dumps([{"kind": "fact", "item_id": str(uuid.uuid4()), "tokens": 1}])}, "22023"),
        ({"items": json.dumps([_item(uuid.uuid4(), tokens=600), _item(uuid.uuid4(), tokens=600)])}, "22023"),
        ({"items": json.dumps([_item(uuid.uuid4())] * 1001)}, "54000"),
        ({"items": json.dumps([_item(uuid.uuid4())])}, "VN001"),
        ({"as_of": "infinity"}, "22023"),
        ({"min_authority": 1.5}, "22023"),
        ({"max_tier": 5}, "22023"),
        ({"assembler_version": " "}, "22023"),
        ({"omitted": "{}"}, "22023"),
        ({"warnings": json.dumps(["x" * 1_000_001])}, "22001"),
        ({"groups": []}, "22023"),
        ({"during": '"2020"'}, "22023"),
        ({"during": json.dumps({"start": "2020-01-01", "end": None})}, "22023"),
        ({"during": json.dumps({"start": None, "end": None, "text": "x", "why": "y"})}, "22023"),
        ({"during": json.dumps({"start": "2021-01-01", "end": "2020-01-01", "text": "x"})}, "22023"),
        ({"during": json.dumps({"start": "2020-01-01", "end": "2020-01-01", "text": "x"})}, "22023"),
        ({"during": json.dumps({"start": None, "end": None, "text": "x" * 8193})}, "22001"),
        ({"during": json.dumps({"start": "2020/01/01", "end": None, "text": "x"})}, "22007"),
        ({"during": json.dumps({"start": 2020, "end": None, "text": "x"})}, "22007"),
        ({"during": json.dumps({"start": None, "end": "2020-02-30", "text": "x"})}, "22008"),
    ],
)
def test_sql_refuses_bad_packs(world: World, arguments: dict[str, Any], sqlstate: str) -> None:
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as raised:
        _store(conn, **arguments)
    assert raised.value.sqlstate == sqlstate
    assert len(raised.value.diag.message_primary or "") < 300


def test_sql_refuses_another_tenants_items_groups_and_anonymous_callers(world: World) -> None:
    foreign, absent = _foreign_fact(world), uuid.uuid4()
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as theirs:
        _store(conn, items=json.dumps([_item(foreign)]))
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as nowhere:
        _store(conn, items=json.dumps([_item(absent)]))
    assert theirs.value.sqlstate == nowhere.value.sqlstate == "VN001"
    assert (theirs.value.diag.message_primary or "").replace(str(foreign), "?") == (
        nowhere.value.diag.message_primary or ""
    ).replace(str(absent), "?")
    with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as group:
        _store(conn, groups=[world.b.organisation])
    assert group.value.sqlstate == "42501"
    for function, arguments in (
        ("store_context_pack", "'q', 1000, '[]'"),
        ("get_context_pack", f"'{uuid.uuid4()}'"),
        ("record_pack_feedback", f"'{uuid.uuid4()}', 1, 'up'"),
    ):
        with caller(world.db, None, role=APP_LOGIN) as conn, pytest.raises(psycopg.Error) as anonymous:
            conn.execute(f"select * from vera.{function}({arguments})")  # type: ignore[arg-type]
        assert anonymous.value.sqlstate == "VA005"


def test_the_async_client_assembles_and_reads_the_same(world: World, corpus: Corpus) -> None:
    async def scenario() -> tuple[ContextPack, ContextPack, list[ExploredFact]]:
        client = await AsyncVeraClient.connect(world.db.dsn(APP_LOGIN), world.a.owner_key)
        async with client:
            pack = await client.get_context("billing-api", token_budget=300, groups=[corpus.group])
            assert pack.pack_id is not None
            again, explored = await asyncio.gather(
                client.get_context_pack(pack.pack_id),
                client.explore("billing-api", depth=1, groups=[corpus.group]),
            )
            return pack, again, explored

    pack, again, explored = asyncio.run(scenario())
    assert again == pack and len(pack.items) == 4
    assert {e.object for e in explored} == {"team payments", "cluster green"}
