"""The typed client (sync and async) against the real database: every call
family, the one SQLSTATE mapping, search with a hosted embedder (the local
stand-in of OpenAI's wire format) through the cache and meter, and stage 3
with a reranker (the stand-in of Voyage's rerank)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from uuid import UUID

import pytest
from pydantic import SecretStr
from tests.standins import API_KEY, StandinServer, running_standin

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World
from vera_client.adapters.embedders.cache import CachedEmbedder
from vera_client.bootstrap import Providers, build_providers
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.config import (
    DbSettings,
    EmbedderSettings,
    ObjectStoreSettings,
    RerankerSettings,
    ResilienceSettings,
    VeraSettings,
)
from vera_client.core import Operations
from vera_client.domain.callers import ApiKey, Principal
from vera_client.domain.errors import (
    ConfigurationError,
    DatabaseUnavailableError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnknownApiKeyError,
)

QUICK = ResilienceSettings(max_retries=1, retry_base_seconds=0.01, retry_max_seconds=0.05, timeout_seconds=5)


@pytest.fixture(scope="module")
def standin() -> Iterator[StandinServer]:
    with running_standin() as server:
        yield server


def _settings(tmp: Path, standin: StandinServer, *, rerank: bool = False) -> VeraSettings:
    return VeraSettings(
        db=DbSettings(data_dir=tmp / "pg"),
        embedder=EmbedderSettings(provider="openai", base_url=f"{standin.url}/openai/v1", dim=64,
                                  api_key=SecretStr(API_KEY), resilience=QUICK),
        reranker=RerankerSettings(provider="voyage" if rerank else "none", base_url=f"{standin.url}/voyage/v1",
                                  api_key=SecretStr(API_KEY), weight=0.5, top_n=5, resilience=QUICK),
        objects=ObjectStoreSettings(root=tmp / "objects"),
    )  # fmt: skip


@pytest.fixture(scope="module")
def providers(standin: StandinServer, tmp_path_factory: pytest.TempPathFactory) -> Providers:
    return build_providers(_settings(tmp_path_factory.mktemp("client"), standin))


@pytest.fixture(scope="module")
def vera(world: World, providers: Providers) -> Iterator[VeraClient]:
    with client_for(world, world.a.owner_key, providers=providers) as client:
        yield client


@pytest.fixture(scope="module")
def loaded(vera: VeraClient, world: World, providers: Providers) -> tuple[str, UUID]:
    """A project with a CMDB source, its episode, passages and claims, all with hosted vectors."""
    group = vera.create_group(world.a.organisation, "project", "client")
    source = vera.register_source(group, "cmdb", "cmdb", 1, config={"note": "export"})
    episode = vera.record_episode(
        group, source, "services.csv", hashlib.sha256(b"v1").digest(), mime="text/csv"
    )
    embedder = providers.embedder()
    passages = ["Restart billing-api with kubectl rollout restart.", "Ledger backups run nightly."]
    vectors = embedder.embed(passages)
    stored = vera.store_chunks(group, episode.episode_id,
                               [{"text": t, "embedding": v} for t, v in zip(passages, vectors, strict=True)],
                               embedder.model)  # fmt: skip
    assert [c.ordinal for c in stored] == [0, 1]
    claims = [
        {"subject": "billing-api", "predicate": "runs on", "object": "k8s-hanoi-2", "object_is_entity": True,
         "fact_text": "billing-api runs on k8s-hanoi-2"},
        {"subject": "ledger-db", "predicate": "owned by", "object": "Data Platform", "object_is_entity": True,
         "fact_text": "ledger-db is owned by Data Platform"},
    ]  # fmt: skip
    for claim, vector in zip(claims, embedder.embed([c["fact_text"] for c in claims]), strict=True):
        claim["embedding"] = vector
    published = vera.publish(group, episode.episode_id, claims, embedder.model)
    assert [(p.claim, p.lifecycle) for p in published] == [(0, "published"), (1, "published")]
    return group, episode.episode_id


def test_who_groups_and_keys(vera: VeraClient, world: World) -> None:
    groups = {m.group_id: m.role for m in vera.whoami()}
    assert groups[world.a.organisation] == "owner"
    key = vera.create_api_key("ci", None, None)
    assert key.api_key.startswith("vera_") and key.prefix in key.api_key
    assert key.key_id in {k.key_id for k in vera.list_api_keys()}
    assert vera.revoke_api_key(key.prefix) is True
    group = vera.create_group(world.a.organisation, "project", "client-members")
    bot = vera.create_principal(group, "service", "bot", "viewer")
    vera.set_member_role(group, bot, "member")
    assert vera.remove_member(group, bot) is True
    assert vera.set_setting(group, "er.trigram_link", 0.9) == 0.9
    assert vera.setting(group, "er.trigram_link") == 0.9


def test_hybrid_search_embeds_the_query_through_the_cache_and_meters_only_misses(
    vera: VeraClient, loaded: tuple[str, UUID], providers: Providers
) -> None:
    group, _ = loaded
    before = sum(t.requests for t in vera.usage().values())
    hits = vera.search("Which cluster does billing-api runs on?", groups=[group], k=3)
    assert hits[0].text == "billing-api runs on k8s-hanoi-2"
    # relevance is the hit's own match confidence (not 1.0 for being the best candidate)
    assert hits[0].signals.relevance == hits[0].confidence and hits[0].citation["source"]["name"] == "cmdb"  # type: ignore[index]
    after_first = sum(t.requests for t in vera.usage().values())
    assert after_first == before + 1  # the query's embedding, one request to the provider
    vera.search("Which cluster does billing-api runs on?", groups=[group], k=3)
    assert sum(t.requests for t in vera.usage().values()) == after_first  # a cache hit costs nothing
    cached = providers.embedder()
    assert isinstance(cached, CachedEmbedder) and cached.stats().hits_local >= 1
    [totals] = [t for key, t in vera.usage().items() if key.model == "text-embedding-3-small"]
    assert totals.input_tokens > 0 and totals.estimated_cost_usd > 0


def test_feedback_calibration_and_weights(vera: VeraClient, loaded: tuple[str, UUID]) -> None:
    group, _ = loaded
    [hit] = vera.search("ledger-db owned", groups=[group], k=1)
    vote = vera.feedback(hit.kind, hit.item_id, "ledger-db owned", "up", groups=[group])
    assert vote.created and vote.group_id == group and set(vote.signals) >= {"relevance", "authority"}
    calibration = vera.calibrate(group)
    assert not calibration.persisted and calibration.helpful == 1  # too few votes to change anything
    assert vera.active_weights(group)["relevance"] == pytest.approx(0.32)
    vera.reset_weights(group)


def test_snapshots_answer_as_taken(vera: VeraClient, loaded: tuple[str, UUID]) -> None:
    group, _ = loaded
    taken = vera.create_snapshot(group, "client-snap")
    assert taken.item_count == 4
    assert [s.name for s in vera.list_snapshots(group)] == ["client-snap"]
    live = vera.search("billing-api", groups=[group], k=4)
    frozen = vera.search_snapshot(group, "client-snap", "billing-api", k=4)
    assert [h.item_id for h in frozen] == [h.item_id for h in live]
    vera.drop_snapshot(group, "client-snap")
    with pytest.raises(NotFoundError):
        vera.search_snapshot(group, "client-snap", "billing-api")


def test_review_retract_and_erase(vera: VeraClient, world: World) -> None:
    group = vera.create_group(world.a.organisation, "project", "client-review")
    notes = vera.register_source(group, "markdown", "notes", 3)
    episode = vera.record_episode(group, notes, "n.md", hashlib.sha256(b"n").digest())
    [pending] = vera.publish(group, episode.episode_id, [{"subject": "a", "predicate": "b", "object": "c"}])
    assert pending.lifecycle == "pending_review"
    assert [r.fact_id for r in vera.pending_reviews(group)] == [pending.fact_id]
    outcome = vera.review(group, pending.fact_id, "approve", "checked")
    assert outcome.lifecycle == "published"
    withdrawn = vera.retract_episode(group, episode.episode_id, "wrong page")
    # no graph here: the job keeps the fact's edge for a worker that knows the graph
    assert withdrawn.job > 0 and (withdrawn.cleaned_up, withdrawn.edges_left) == (False, 1)
    assert vera.erase_source(group, notes, "gone").job > 0
    assert vera.complete_cleanup(withdrawn.job) is True  # cleaned up in-process: the worker will skip the job
    assert vera.complete_cleanup(withdrawn.job) is False
    assert vera.list_sources(group) == []  # erased: nothing of it is left


def test_errors_are_typed_by_sqlstate(vera: VeraClient, world: World, providers: Providers) -> None:
    with (
        client_for(world, "vera_000000000000_" + "x" * 43) as stranger,
        pytest.raises(UnknownApiKeyError),
    ):
        stranger.whoami()
    with client_for(world, world.a.viewer_key, providers=providers) as viewer:
        with pytest.raises(PermissionDeniedError):
            viewer.register_source(world.a.organisation, "markdown", "nope", 1)
        with pytest.raises(PermissionDeniedError):
            viewer.search("x", groups=[world.b.organisation])
    with pytest.raises(InvalidArgumentError, match="k must be between 1 and 1000"):
        vera.search("x", k=0)
    with pytest.raises(InvalidArgumentError):
        vera.register_source(world.a.organisation, "markdown", "bad tier", 7)


def test_an_unreachable_database_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatabaseUnavailableError, match="cannot connect"):
        VeraClient(f"postgresql://vera_app@/vera?host={tmp_path}", "k", connect_timeout=1)


def test_stage_three_reranks_the_top_hits(
    world: World, loaded: tuple[str, UUID], standin: StandinServer, tmp_path: Path
) -> None:
    group, _ = loaded
    settings = _settings(tmp_path, standin, rerank=True)
    with client_for(world, world.a.owner_key, providers=build_providers(settings)) as client:
        blended = client.search("Restart billing-api kubectl", groups=[group], k=4, rerank=False)
        reranked = client.search("Restart billing-api kubectl", groups=[group], k=4)
        assert all(h.rerank_score is not None and h.blend_score is not None for h in reranked)
        # the blend's scores min-max normalised over the reranked head (top_n = 5 hits)
        head = client.search("Restart billing-api kubectl", groups=[group], k=5, rerank=False)
        low, high = min(h.score for h in head), max(h.score for h in head)
        assert high > low
        for hit in reranked:
            blend = (hit.blend_score - low) / (high - low)  # type: ignore[operator]
            assert hit.score == pytest.approx(0.5 * blend + 0.5 * hit.rerank_score)  # type: ignore[operator]
        assert [h.score for h in reranked] == sorted((h.score for h in reranked), reverse=True)
        assert {h.item_id for h in reranked} == {h.item_id for h in blended}
        assert [h.rank for h in reranked] == [1, 2, 3, 4]
        assert any(key.model == "rerank-2.5" and t.requests == 1 for key, t in client.usage().items())


def test_the_async_client_does_the_same(world: World, loaded: tuple[str, UUID], providers: Providers) -> None:
    group, _ = loaded

    async def scenario() -> None:
        client = await AsyncVeraClient.connect(
            world.db.dsn(APP_LOGIN), world.a.owner_key, providers=providers
        )
        async with client:
            hits, memberships = await asyncio.gather(
                client.search("Which cluster does billing-api runs on?", groups=[group], k=2), client.whoami()
            )
            assert hits[0].text == "billing-api runs on k8s-hanoi-2"
            assert any(m.group_id == group for m in memberships)
            taken = await client.create_snapshot(group, "async-snap")
            assert taken.item_count == 4
            frozen = await client.search_snapshot(group, "async-snap", "billing-api", k=2)
            assert frozen and frozen[0].kind in {"fact", "passage"}
            await client.drop_snapshot(group, "async-snap")
            with pytest.raises(PermissionDeniedError):
                await client.search("x", groups=[world.b.organisation])
            with pytest.raises(NotFoundError):
                await client.search_snapshot(group, "async-snap", "x")

    asyncio.run(scenario())


def test_a_query_the_pinned_model_cannot_read_is_searched_by_its_words(world: World, tmp_path: Path) -> None:
    """all-MiniLM-L6-v2 reads English only: a Vietnamese query is not embedded (its vector
    would be confidently wrong and drag the lexical leg down), an English one is."""
    settings = VeraSettings(
        db=DbSettings(data_dir=tmp_path / "pg"), embedder=EmbedderSettings(provider="local")
    )
    providers = build_providers(settings)
    with client_for(world, world.a.owner_key, providers=providers) as client:
        group = client.create_group(world.a.organisation, "project", "client-languages")
        source = client.register_source(group, "markdown", "handbook", 2)
        episode = client.record_episode(group, source, "vi.md", hashlib.sha256(b"vi").digest())
        text = "Dịch vụ route-planner chạy trên cụm k8s-hanoi-1."
        embedder = providers.embedder()
        client.store_chunks(group, episode.episode_id, [{"text": text, "embedding": embedder.embed([text])[0]}],
                            embedder.model)  # fmt: skip
        assert isinstance(embedder, CachedEmbedder)
        misses = embedder.stats().misses
        [hit] = client.search("route-planner chạy trên cụm nào?", groups=[group], k=1)
        assert hit.text == text and embedder.stats().misses == misses  # not embedded
        client.search("Which cluster runs route-planner?", groups=[group], k=1)
        assert embedder.stats().misses == misses + 1


def test_one_client_serves_many_callers_through_cheap_views(world: World, providers: Providers) -> None:
    """A server holds one pool and takes a view per request: an API key, or a principal that
    its trusted role (here the gateway) vouches for. Each view answers as its own caller."""
    with VeraClient(world.db.dsn("vera_gateway"), providers=providers) as server:
        with pytest.raises(ConfigurationError, match="no caller"):
            server.whoami()
        owner_a = server.as_caller(Principal(world.a.owner))
        viewer_b = server.as_caller(ApiKey(world.b.viewer_key))
        assert {m.group_id for m in owner_a.whoami()} >= {world.a.organisation}
        assert world.b.organisation not in {m.group_id for m in owner_a.whoami()}
        assert world.b.organisation in {m.group_id for m in viewer_b.whoami()}
        assert not {m.group_id for m in viewer_b.whoami()} & {world.a.organisation, world.a.workspace}
        with pytest.raises(PermissionDeniedError):
            viewer_b.search("x", groups=[world.a.organisation])
        assert owner_a._executor is server._executor and viewer_b._shared is server._shared
        owner_a.close()  # a view leaves the shared pool open
        assert world.b.organisation in {m.group_id for m in viewer_b.whoami()}
        # many callers at once over one pool: each sees only its own tenant
        with ThreadPoolExecutor(max_workers=4) as pool:
            seen = list(
                pool.map(
                    lambda who: {m.group_id for m in server.as_caller(who).whoami()},
                    [Principal(world.a.owner), Principal(world.b.owner)] * 6,
                )
            )
        assert all(world.a.organisation in s and world.b.organisation not in s for s in seen[::2])
        assert all(world.b.organisation in s and world.a.organisation not in s for s in seen[1::2])


def test_only_trusted_roles_may_vouch_for_a_principal(world: World) -> None:
    with (
        client_for(world, Principal(world.a.owner)) as app,
        pytest.raises(PermissionDeniedError),
    ):
        app.whoami()


def test_pins_are_remembered_per_caller(world: World, providers: Providers) -> None:
    """'Every readable group' differs per caller, so the pins memo is keyed by the caller."""
    with VeraClient(world.db.dsn("vera_gateway"), providers=providers) as server:
        shared = server._shared
        shared.remember_pins(Principal(world.a.owner), None, [("m", 3)])
        assert shared.known_pins(Principal(world.a.owner), None) == [("m", 3)]
        assert shared.known_pins(Principal(world.b.owner), None) is None
        assert shared.known_pins(ApiKey(world.a.owner_key), None) is None


def test_both_faces_have_the_same_operations() -> None:
    """The sync and async clients inherit one list of operations (core.Operations) and drive
    each their way: results, or coroutines."""
    operations = {n for n in dir(Operations) if not n.startswith("_")}
    for face in (VeraClient, AsyncVeraClient):
        assert issubclass(face, Operations)
        methods = {n for n in dir(face) if not n.startswith("_")}
        assert methods - operations <= {
            "as_caller", "caller", "close", "connect", "executor", "from_settings", "usage"
        }  # fmt: skip
    assert inspect.iscoroutinefunction(object.__new__(AsyncVeraClient).search)
    assert not inspect.iscoroutinefunction(object.__new__(VeraClient).search)
    assert "session" not in inspect.signature(object.__new__(VeraClient).search).parameters


def test_waiting_passages_are_reviewed_through_the_client(world: World, owner_a: VeraClient) -> None:
    """A tier-3 source's text waits for review: hidden from the group's search, listed to its
    admins, searchable once approved."""
    group = owner_a.create_group(world.a.organisation, "project", "client-passage-review")
    source = owner_a.register_source(group, "markdown", "forum", 3)
    episode = owner_a.record_episode(group, source, "thread.md", hashlib.sha256(b"thread").digest())
    [stored] = owner_a.store_chunks(group, episode.episode_id, [{"text": "parcel-router scales on Mondays"}])
    assert owner_a.search("parcel-router Mondays", groups=[group]) == []
    [waiting] = owner_a.pending_passages(group)
    assert (waiting.chunk_id, waiting.lifecycle, waiting.tier) == (stored.chunk_id, "pending_review", 3)
    outcome = owner_a.review_passage(group, stored.chunk_id, "approve", "checked with the team")
    assert (outcome.chunk_id, outcome.lifecycle) == (stored.chunk_id, "published")
    [hit] = owner_a.search("parcel-router Mondays", groups=[group])
    assert hit.item_id == stored.chunk_id and hit.signals.verification == pytest.approx(1.0)
    assert owner_a.pending_passages(group) == []
    with (
        client_for(world, world.a.viewer_key) as viewer,
        pytest.raises(PermissionDeniedError),
    ):
        viewer.pending_passages(world.a.organisation)
