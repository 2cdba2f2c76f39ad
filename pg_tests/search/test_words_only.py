"""A client with no embedder (VERA_EMBEDDER__PROVIDER=none) searches by words, and says why; the
groups' vectors stay searchable by whoever passes a query vector of their model (issue 29)."""

from __future__ import annotations

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.searching import search
from pg_tests.support.seed import World, caller, create_project
from vera_client.bootstrap import build_providers
from vera_client.config import DbSettings, EmbedderSettings, VeraSettings

MODEL = "all-MiniLM-L6-v2"
NEAR = [1.0] + [0.0] * 383  # the passage's vector; the query's below points the same way


def test_without_an_embedder_search_goes_by_words_and_the_vectors_stay_for_others(world: World) -> None:
    group = create_project(world, "words-only")
    with client_for(world, world.a.owner_key) as owner:
        source = owner.register_source(group, "notes", "ledger notes", 2)
        episode = owner.record_episode(group, source, "ledger.md", b"\x02" * 32)
        owner.store_chunks(group, episode.episode_id, [
            {"text": "The ledger service settles payments nightly.", "embedding": NEAR},
            {"text": "Invoices are archived after seven years.", "embedding": [0.0, 1.0] + [0.0] * 382},
        ], MODEL)  # fmt: skip
    settings = VeraSettings(
        db=DbSettings(dsn=world.db.dsn(APP_LOGIN)), embedder=EmbedderSettings(provider="none")
    )
    with client_for(world, world.a.owner_key, providers=build_providers(settings)) as vera:
        found = vera.search("ledger", groups=[group])
        assert [hit.text for hit in found] == ["The ledger service settles payments nightly."]
        assert found.words_only == "no embedder is configured here (VERA_EMBEDDER__PROVIDER=none)"
        # remember stores its passage without a vector (nothing is embedded here)
        assert vera.remember("Payments settle at midnight.", group=group).created
    with client_for(world, world.a.owner_key) as plain:  # no providers at all: nothing to say
        assert plain.search("ledger", groups=[group]).words_only is None
    # the SQL search still uses the group's vectors when a query vector of its model is passed
    # (a process that runs the model: the MCP server, the worker), and words alone without one
    with caller(world.db, world.a.owner_key) as conn:
        by_meaning = search(conn, "archived invoices", embedding=NEAR, embedding_model=MODEL, groups=[group])
        by_words = search(conn, "archived invoices", groups=[group])
    # the words find the invoices alone; the vector finds the ledger passage too
    assert "The ledger service settles payments nightly." in [hit["text"] for hit in by_meaning]
    assert [hit["text"] for hit in by_words] == ["Invoices are archived after seven years."]
    with world.db.admin() as conn:
        vectors = conn.execute(
            "select count(embedding) from vera.chunks where group_id = %s and text like 'Payments settle%%'",
            (group,),
        ).fetchone()
    assert vectors == (0,)
