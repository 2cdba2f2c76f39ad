"""The GraphStore contract, run against both real graph servers (graph_backend_url):
projection, idempotent replay, supersession, as_of, literal objects, retraction and
orphans, dropping a group, tenancy (including hostile group ids) and bad input, plus
Graphiti's own search over what VERA projected. No PostgreSQL is involved: these live
in pg_tests because they need real servers (pg_tests/support/graph_servers.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import neo4j
import pytest

from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.graph import (
    EdgeState,
    GraphEdge,
    GraphNode,
    edge_digest,
    literal_node_id,
)
from vera_client.domain.ports import GraphStore
from vera_worker.graph.graphiti_model import graph_group_id
from vera_worker.graph.graphiti_search import open_graphiti
from vera_worker.graph.stores import open_graph_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
EMBEDDER = DeterministicEmbedder(32)


@pytest.fixture(scope="module")
def opened_stores() -> Iterator[dict[tuple[str, str], GraphStore]]:
    """One store per server for the module: opening one ensures the schema, a round trip per index."""
    opened: dict[tuple[str, str], GraphStore] = {}
    yield opened
    for each in opened.values():
        each.close()


@pytest.fixture
def store(graph_backend_url: tuple[str, str], opened_stores: dict[tuple[str, str], GraphStore]) -> GraphStore:
    if graph_backend_url not in opened_stores:
        backend, url = graph_backend_url
        # small batches: one call makes several round trips
        opened_stores[graph_backend_url] = open_graph_store(backend, url, batch_size=3)
    return opened_stores[graph_backend_url]


@pytest.fixture
def groups(store: GraphStore) -> Iterator[list[str]]:
    """Fresh group ids for one test, dropped afterwards; the test appends the ones it uses."""
    used: list[str] = []
    yield used
    for group in used:
        store.drop_group(group)


def new_group(groups: list[str], kind: str = "o") -> str:
    group = f"{kind}:test-{uuid.uuid4().hex[:12]}"
    groups.append(group)
    return group


def node(group: str, name: str, node_id: uuid.UUID | None = None) -> GraphNode:
    return GraphNode(
        group_id=group,
        node_id=node_id or uuid.uuid4(),
        name=name,
        name_embedding=tuple(EMBEDDER.embed([name])[0]),
    )


def literal(group: str, value: str) -> GraphNode:
    return GraphNode(group_id=group, node_id=literal_node_id(group, value), name=value, literal=True)


def edge(
    group: str,
    subject: GraphNode,
    predicate: str,
    obj: GraphNode,
    *,
    valid_from: datetime = T0,
    valid_to: datetime | None = None,
    retired_at: datetime | None = None,
    fact_id: uuid.UUID | None = None,
    lifecycle: str = "published",
) -> GraphEdge:
    text = f"{subject.name} {predicate.lower().replace('_', ' ')} {obj.name}"
    return GraphEdge(
        group_id=group,
        fact_id=fact_id or uuid.uuid4(),
        episode_id=uuid.uuid4(),
        source_id=uuid.uuid4(),
        subject_id=subject.node_id,
        object_id=obj.node_id,
        predicate=predicate,
        fact_text=text,
        lifecycle=lifecycle,
        valid_from=valid_from,
        valid_to=valid_to,
        recorded_at=valid_from + timedelta(minutes=5),
        retired_at=retired_at,
        fact_embedding=tuple(EMBEDDER.embed([text])[0]),
    )


def state(e: GraphEdge) -> EdgeState:
    return EdgeState(
        fact_id=e.fact_id,
        valid_from=e.valid_from,
        valid_to=e.valid_to,
        recorded_at=e.recorded_at,
        retired_at=e.retired_at,
    )


def explored(store: GraphStore, starts: list[tuple[str, GraphNode]], depth: int, as_of: datetime) -> dict:
    steps = store.explore([(group, n.node_id) for group, n in starts], depth, as_of)
    facts = [step.fact_id for step in steps]
    assert len(facts) == len(set(facts)), "a fact is returned once, at the first hop that reaches it"
    return {step.fact_id: step.hop for step in steps}


class Services:
    """A small dependency graph: api -> db -> host, api -> cache, plus one literal."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.api, self.db, self.host, self.cache = (
            node(group, n) for n in ("billing-api", "ledger-db", "host-7", "redis")
        )
        self.port = literal(group, "5432")
        self.nodes = [self.api, self.db, self.host, self.cache, self.port]
        self.depends = edge(group, self.api, "DEPENDS_ON", self.db)
        self.runs_on = edge(group, self.db, "RUNS_ON", self.host)
        self.caches = edge(group, self.api, "USES", self.cache)
        self.listens = edge(group, self.db, "LISTENS_ON", self.port)
        self.edges = [self.depends, self.runs_on, self.caches, self.listens]


def test_upsert_then_edge_states_and_counts_are_what_was_written(
    store: GraphStore, groups: list[str]
) -> None:
    s = Services(new_group(groups))
    assert store.upsert(s.group, s.nodes, s.edges) == 4
    states = store.edge_states(s.group)
    assert sorted(states, key=lambda x: x.fact_id) == sorted(map(state, s.edges), key=lambda x: x.fact_id)
    assert edge_digest(states) == edge_digest(map(state, s.edges))
    assert store.node_count(s.group) == 5


def test_replaying_an_upsert_changes_nothing(store: GraphStore, groups: list[str], graph_backend_url) -> None:
    s = Services(new_group(groups))
    store.upsert(s.group, s.nodes, s.edges)
    before = (store.edge_states(s.group), store.node_count(s.group))
    assert store.upsert(s.group, s.nodes, s.edges) == 4
    # a second process (no memory of what the first wrote) replays it too
    backend, url = graph_backend_url
    other = open_graph_store(backend, url)
    try:
        assert other.upsert(s.group, s.nodes, s.edges) == 4
    finally:
        other.close()
    after = (store.edge_states(s.group), store.node_count(s.group))
    assert edge_digest(after[0]) == edge_digest(before[0]) and after[1] == before[1]
    assert len(after[0]) == 4
    assert explored(store, [(s.group, s.api)], 2, T0 + DAY) == {
        s.depends.fact_id: 1,
        s.caches.fact_id: 1,
        s.runs_on.fact_id: 2,
        s.listens.fact_id: 2,
    }


def test_a_superseded_edge_is_invalidated_not_deleted(store: GraphStore, groups: list[str]) -> None:
    group = new_group(groups)
    db, old_host, new_host = node(group, "ledger-db"), node(group, "host-1"), node(group, "host-2")
    moved_at = T0 + 10 * DAY
    first = edge(group, db, "RUNS_ON", old_host)
    store.upsert(group, [db, old_host], [first])
    superseded = replace(first, valid_to=moved_at, lifecycle="superseded")
    second = edge(group, db, "RUNS_ON", new_host, valid_from=moved_at)
    store.upsert(group, [db, new_host], [superseded, second])

    assert edge_digest(store.edge_states(group)) == edge_digest([state(superseded), state(second)])
    assert explored(store, [(group, db)], 1, moved_at - timedelta(microseconds=1)) == {first.fact_id: 1}
    # valid_to is exclusive: at the instant of the move only the new edge answers
    assert explored(store, [(group, db)], 1, moved_at) == {second.fact_id: 1}
    assert explored(store, [(group, db)], 1, moved_at + DAY) == {second.fact_id: 1}
    assert store.node_count(group) == 3


def test_explore_as_of_follows_validity_and_retirement_hop_by_hop(
    store: GraphStore, groups: list[str]
) -> None:
    group = new_group(groups)
    a, b, c, d, e = (node(group, name) for name in "abcde")
    ab = edge(group, a, "LINKS", b)
    bc = edge(group, b, "LINKS", c, valid_from=T0 + 5 * DAY)  # not yet valid before day 5
    cd = edge(group, c, "LINKS", d)
    retired = edge(group, a, "LINKS", e, retired_at=T0 + DAY)  # expired_at set: never answers
    back = edge(group, d, "LINKS", a)  # d -> a closes a cycle: a fact is returned once
    store.upsert(group, [a, b, c, d, e], [ab, bc, cd, retired, back])

    assert explored(store, [(group, a)], 5, T0 - DAY) == {}
    assert explored(store, [(group, a)], 5, T0 + DAY) == {
        ab.fact_id: 1,
        back.fact_id: 1,
        cd.fact_id: 2,  # d was reached through `back`
    }
    assert explored(store, [(group, a)], 5, T0 + 6 * DAY) == {
        ab.fact_id: 1,
        back.fact_id: 1,
        bc.fact_id: 2,
        cd.fact_id: 2,
    }
    assert explored(store, [(group, a)], 1, T0 + 6 * DAY) == {ab.fact_id: 1, back.fact_id: 1}
    # edges are walked both ways: from c, b and d are one hop away
    assert explored(store, [(group, c)], 1, T0 + 6 * DAY) == {bc.fact_id: 1, cd.fact_id: 1}
    # several starts of one group walk together; an unknown start reaches nothing
    assert explored(store, [(group, b), (group, d)], 1, T0 + 6 * DAY) == {
        ab.fact_id: 1,
        bc.fact_id: 1,
        cd.fact_id: 1,
        back.fact_id: 1,
    }
    assert store.explore([(group, uuid.uuid4())], 3, T0 + DAY) == []


def test_literal_objects_are_returned_but_never_walked_through(store: GraphStore, groups: list[str]) -> None:
    group = new_group(groups)
    db, other = node(group, "ledger-db"), node(group, "audit-db")
    port = literal(group, "5432")
    db_port = edge(group, db, "LISTENS_ON", port)
    other_port = edge(group, other, "LISTENS_ON", port)  # the same literal value: one node
    store.upsert(group, [db, other, port], [db_port, other_port])
    assert store.node_count(group) == 3
    assert explored(store, [(group, db)], 5, T0 + DAY) == {db_port.fact_id: 1}
    # a literal as a start reaches nothing either
    assert explored(store, [(group, port)], 5, T0 + DAY) == {}


def test_remove_edges_removes_nodes_left_without_edges(store: GraphStore, groups: list[str]) -> None:
    s = Services(new_group(groups))
    store.upsert(s.group, s.nodes, s.edges)
    assert store.remove_edges(s.group, [s.runs_on.fact_id, s.listens.fact_id, uuid.uuid4()]) == 2
    # host-7 and the literal lost their only edge; ledger-db still has `depends`
    assert store.node_count(s.group) == 3
    assert edge_digest(store.edge_states(s.group)) == edge_digest([state(s.depends), state(s.caches)])
    assert store.remove_edges(s.group, [s.runs_on.fact_id]) == 0  # idempotent
    assert store.remove_edges(s.group, [s.depends.fact_id, s.caches.fact_id]) == 2
    assert store.node_count(s.group) == 0
    assert store.edge_states(s.group) == []


def test_an_edge_whose_end_nodes_change_moves_and_leaves_no_orphan(
    store: GraphStore, groups: list[str]
) -> None:
    group = new_group(groups)
    db, old_host, new_host = node(group, "ledger-db"), node(group, "host-1"), node(group, "host-2")
    fact = edge(group, db, "RUNS_ON", old_host)
    store.upsert(group, [db, old_host], [fact])
    merged = replace(fact, object_id=new_host.node_id)  # entity resolution merged host-1 into host-2
    store.upsert(group, [db, new_host], [merged])
    assert store.node_count(group) == 2
    assert edge_digest(store.edge_states(group)) == edge_digest([state(merged)])
    assert explored(store, [(group, new_host)], 1, T0 + DAY) == {fact.fact_id: 1}


def test_drop_group_removes_one_group_only(store: GraphStore, groups: list[str]) -> None:
    kept, dropped = Services(new_group(groups)), Services(new_group(groups))
    store.upsert(kept.group, kept.nodes, kept.edges)
    store.upsert(dropped.group, dropped.nodes, dropped.edges)
    store.drop_group(dropped.group)
    assert store.node_count(dropped.group) == 0 and store.edge_states(dropped.group) == []
    assert store.node_count(kept.group) == 5 and len(store.edge_states(kept.group)) == 4
    store.drop_group(dropped.group)  # idempotent
    # the dropped group can be rebuilt at once (its nodes are written again, not assumed present)
    assert store.upsert(dropped.group, dropped.nodes, dropped.edges) == 4
    assert store.node_count(dropped.group) == 5


def test_a_group_dropped_by_another_process_is_written_again_whole(
    store: GraphStore, groups: list[str], graph_backend_url: tuple[str, str]
) -> None:
    s = Services(new_group(groups))
    store.upsert(s.group, s.nodes, s.edges)
    backend, url = graph_backend_url
    other = open_graph_store(backend, url)
    try:
        other.drop_group(s.group)  # a rebuild elsewhere starts
    finally:
        other.close()
    # this store remembers having written the nodes; it must not trust that memory
    assert store.upsert(s.group, s.nodes, s.edges) == 4
    assert store.node_count(s.group) == 5
    assert edge_digest(store.edge_states(s.group)) == edge_digest(map(state, s.edges))
    assert len(explored(store, [(s.group, s.api)], 2, T0 + DAY)) == 4


def test_groups_never_see_each_other_even_with_colliding_names_and_ids(
    store: GraphStore, groups: list[str]
) -> None:
    a, b = new_group(groups), new_group(groups)
    shared_id, shared_fact = uuid.uuid4(), uuid.uuid4()
    # the same entity name AND the same node id in both groups, and one fact id used twice
    a_db, b_db = node(a, "ledger-db", shared_id), node(b, "ledger-db", shared_id)
    a_host, b_secret = node(a, "host-1"), node(b, "secret-vault")
    a_edge = edge(a, a_db, "RUNS_ON", a_host, fact_id=shared_fact)
    b_edge = edge(b, b_db, "STORES_KEYS_IN", b_secret, fact_id=shared_fact)
    b_more = edge(b, b_secret, "OWNED_BY", node(b, "security-team"))
    store.upsert(a, [a_db, a_host], [a_edge])
    store.upsert(b, [b_db, b_secret, node(b, "security-team", b_more.object_id)], [b_edge, b_more])

    assert explored(store, [(a, a_db)], 5, T0 + DAY) == {shared_fact: 1}
    assert explored(store, [(b, b_db)], 5, T0 + DAY) == {shared_fact: 1, b_more.fact_id: 2}
    # asking group A for B's nodes finds nothing
    assert explored(store, [(a, b_secret)], 5, T0 + DAY) == {}
    assert edge_digest(store.edge_states(a)) == edge_digest([state(a_edge)])
    assert store.node_count(a) == 2 and store.node_count(b) == 3
    # removing through A the id of B's edges touches only A's
    assert store.remove_edges(a, [b_more.fact_id]) == 0
    assert store.remove_edges(a, [shared_fact]) == 1
    assert store.node_count(a) == 0
    assert edge_digest(store.edge_states(b)) == edge_digest([state(b_edge), state(b_more)])
    assert store.node_count(b) == 3


@pytest.mark.parametrize(
    "hostile",
    [
        "o:x`}) MATCH (n) DETACH DELETE n //",
        "o:x\\\"'}) MATCH (n) DETACH DELETE n //",
        "*\n MATCH (n) DETACH DELETE n",
    ],
)
def test_hostile_group_ids_cannot_escape_their_group(
    store: GraphStore, groups: list[str], hostile: str
) -> None:
    bystander = Services(new_group(groups))
    store.upsert(bystander.group, bystander.nodes, bystander.edges)
    groups.append(hostile)
    s = Services(hostile)
    assert store.upsert(hostile, s.nodes, s.edges) == 4
    assert len(explored(store, [(hostile, s.api)], 5, T0 + DAY)) == 4
    assert store.node_count(hostile) == 5
    store.drop_group(hostile)
    assert store.node_count(hostile) == 0
    assert store.node_count(bystander.group) == 5
    assert edge_digest(store.edge_states(bystander.group)) == edge_digest(map(state, bystander.edges))


def test_hostile_text_is_stored_as_text(store: GraphStore, groups: list[str]) -> None:
    group = new_group(groups)
    text = "x\"}) MATCH (n) DETACH DELETE n // ' ` \\ \n Đà Nẵng 🙂"
    evil, plain = node(group, text), node(group, "plain")
    fact = replace(edge(group, evil, "SAYS", plain), fact_text=text)
    assert store.upsert(group, [evil, plain], [fact]) == 1
    assert store.node_count(group) == 2
    assert explored(store, [(group, plain)], 1, T0 + DAY) == {fact.fact_id: 1}


def test_bad_input_is_refused_with_typed_errors(store: GraphStore, groups: list[str]) -> None:
    s = Services(new_group(groups))
    store.upsert(s.group, s.nodes, s.edges)
    for depth in (0, 6, -1, True, 2.0, "2"):
        with pytest.raises(InvalidArgumentError):
            store.explore([(s.group, s.api.node_id)], depth, T0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        store.explore([(s.group, s.api.node_id)], 2, datetime(2026, 1, 2))  # naive
    with pytest.raises(InvalidArgumentError):
        store.explore([(s.group, "not-a-uuid")], 2, T0)  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError):
        store.upsert(s.group, [], [replace(s.depends, valid_from=datetime(2026, 1, 1))])
    with pytest.raises(InvalidArgumentError):  # an item of another group
        store.upsert(s.group, [node("o:elsewhere", "x")], [])
    with pytest.raises(InvalidArgumentError):  # end nodes the group does not hold
        store.upsert(s.group, [], [edge(s.group, node(s.group, "ghost"), "HAUNTS", s.api)])
    with pytest.raises(InvalidArgumentError):
        store.remove_edges(s.group, ["not-a-uuid"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError):
        store.node_count("")
    # nothing of the refused calls was written
    assert edge_digest(store.edge_states(s.group)) == edge_digest(map(state, s.edges))


def await_fulltext_indexes(url: str) -> None:
    with neo4j.GraphDatabase.driver(url) as driver:
        driver.execute_query("CALL db.index.fulltext.awaitEventuallyConsistentIndexRefresh()")


def test_neo4j_fulltext_indexes_are_updated_off_the_write_path(neo4j_url: str) -> None:
    store = open_graph_store("neo4j", neo4j_url)
    store.close()
    with neo4j.GraphDatabase.driver(neo4j_url) as driver:
        records, _, _ = driver.execute_query(
            "SHOW FULLTEXT INDEXES YIELD name, options RETURN name, options.indexConfig AS config"
        )
    config = {record["name"]: record["config"] for record in records}
    for name in ("edge_name_and_fact", "node_name_and_summary", "episode_content", "community_name"):
        assert config[name]["fulltext.eventually_consistent"] is True, name


def test_graphitis_own_search_finds_projected_edges(
    store: GraphStore, groups: list[str], graph_backend_url: tuple[str, str]
) -> None:
    s = Services(new_group(groups))
    store.upsert(s.group, s.nodes, s.edges)
    backend, url = graph_backend_url

    async def search() -> list:
        graphiti = open_graphiti(backend, url, EMBEDDER)
        try:
            return await graphiti.search("ledger-db runs on host-7", group_ids=[graph_group_id(s.group)])
        finally:
            await graphiti.close()

    if backend == "neo4j":
        # Neo4j's full-text indexes take writes after their commit (neo4j_store.py): Graphiti's
        # keyword half sees an edge once they caught up, which a reader may wait for
        await_fulltext_indexes(url)
    found = asyncio.run(search())
    by_uuid = {str(hit.uuid): hit for hit in found}
    assert str(s.runs_on.fact_id) in by_uuid
    hit = by_uuid[str(s.runs_on.fact_id)]
    assert hit.fact == s.runs_on.fact_text and hit.name == "RUNS_ON"
    assert hit.source_node_uuid == str(s.db.node_id) and hit.target_node_uuid == str(s.host.node_id)
    assert hit.valid_at == s.runs_on.valid_from and hit.invalid_at is None
    assert hit.episodes == [str(s.runs_on.episode_id)]
    assert hit.attributes["lifecycle"] == "published"
    assert all(str(h.group_id) == graph_group_id(s.group) for h in found)
    # Graphiti's own setup on the group (it builds its indexes when it opens a group's graph)
    # changes nothing in what VERA reads back
    assert len(explored(store, [(s.group, s.api)], 2, T0 + DAY)) == 4
