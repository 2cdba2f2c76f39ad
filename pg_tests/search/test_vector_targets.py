"""The groups the vector half of search reads (sql/functions/176_vector_targets.sql):
those of the searched groups pinned to the query embedding's dimension, and to its model
when one is named; none without an embedding; VE001 when groups hold vectors, but none
of this dimension and model."""

from __future__ import annotations

import psycopg
import pytest

from pg_tests.support.search_corpus import Corpus, build_corpus
from pg_tests.support.searching import MODEL, embed, search, vector_literal
from pg_tests.support.seed import World, caller, create_project


@pytest.fixture(scope="module")
def corpus(world: World) -> Corpus:
    return build_corpus(world)


def test_an_embedding_of_the_wrong_dimension_or_model_is_refused(world: World, corpus: Corpus) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        with pytest.raises(psycopg.Error, match="pinned to test-hash-16 \\(16 dimensions\\)") as error:
            search(conn, embedding=[0.1] * 8, groups=[corpus.group])
        assert error.value.sqlstate == "VE001"
    with caller(world.db, world.a.viewer_key) as conn, pytest.raises(psycopg.Error) as error:
        search(conn, embedding=embed("x"), groups=[corpus.group], embedding_model="another-model")
    assert error.value.sqlstate == "VE001"


def test_only_the_groups_pinned_to_the_embedding_are_read(world: World, corpus: Corpus) -> None:
    """A group without vectors is left out of the vector half (not refused); the model, when
    named, must be the pinned one."""
    bare = create_project(world, "no vectors")
    query = vector_literal(embed("billing"))
    with world.db.admin() as conn:

        def targets(groups: list[str], embedding: str | None, model: str | None) -> list[str]:
            row = conn.execute(
                "select vera.vector_targets(%s, %s::vector, %s)", (groups, embedding, model)
            ).fetchone()
            assert row is not None
            return list(row[0])

        assert targets([corpus.group, bare], query, None) == [corpus.group]
        assert targets([corpus.group, bare], query, MODEL) == [corpus.group]
        assert targets([bare], query, None) == []
        assert targets([corpus.group, bare], None, None) == []
