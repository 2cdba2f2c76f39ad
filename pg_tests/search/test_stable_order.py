"""The order of two hits changes only through their own scores (issue 28): relevance is each
hit's own match confidence (171_match_confidence.sql), never a min-max over the candidates,
so writing other facts (an unrelated source, a user's notes, another service's fact) cannot
flip two hits whose own measures stay the same. A property test over random writes, and the
issue's case on the demo data: the tier-4 chat proposal above the tier-1 CMDB fact for its
proposer once unrelated notes and docs/python-client.md's example were written."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pg_tests.support.clients import client_for
from pg_tests.support.databases import Database
from pg_tests.support.ingesting import ingest_manifest, run_worker
from pg_tests.support.lumen import Lumen, load_lumen
from pg_tests.support.searching import DIM, MODEL, vector_literal
from pg_tests.support.writes import claim, publish, record_episode, register_source
from vera_cli.main import main
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.bootstrap import build_providers
from vera_client.client import VeraClient
from vera_client.config import VeraSettings

QUERY = "billing cluster runs"
QUERY_VECTOR = [1.0] + [0.0] * (DIM - 1)
# both hold every word of the query once (lexical match 1 whatever the statistics: a fact's
# BM25 score is then the query's IDF mass); A is nearer the query, B better graded
A = ("svc-a", "billing runs cluster alpha", [0.9, 0.45] + [0.0] * (DIM - 2), 2)
B = ("svc-b", "billing runs cluster omega", [0.7, 0.0, 0.7] + [0.0] * (DIM - 3), 1)
WORDS = ["billing", "cluster", "runs", "ledger", "green", "pods", "restart", "queue", "alpha"]

extra_fact = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIM, max_size=DIM).filter(
        lambda v: sum(x * x for x in v) > 1e-3
    ),
    st.sampled_from([1, 2]),
)


@pytest.fixture(scope="module")
def tenant(db: Database) -> tuple[str, str]:
    with db.admin() as admin:
        row = admin.execute(
            "select group_id, api_key from vera.create_tenant('Order', 'Order Owner')"
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def _write(conn: psycopg.Connection, group: str, sources: dict[int, object], n: int, fact: tuple) -> None:
    subject, text, vector, tier = fact
    episode, _, _ = record_episode(conn, group, sources[tier], f"{subject}-{n}.md", f"{text} {n}")  # type: ignore[arg-type]
    publish(
        conn,
        group,
        episode,
        [claim(subject, "mentions", f"thing {n}", fact_text=text, embedding=vector)],
        MODEL,
    )


def _ranked(conn: psycopg.Connection, group: str) -> dict[str, tuple[int, float, float, float]]:
    """subject -> (rank, score, relevance, the model's confidence of the hit's own measures)."""
    rows = conn.execute(
        "select s.subject, s.rank, s.score, s.relevance, vera.match_confidence(s.lexical_match, s.similarity)"
        " from vera.search(%s, %s::vector, k => 100, groups => array[%s], candidates => 100,"
        " embedding_model => %s) s",
        (QUERY, vector_literal(QUERY_VECTOR), group, MODEL),
    ).fetchall()
    return {subject: (rank, score, relevance, own) for subject, rank, score, relevance, own in rows}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extras=st.lists(extra_fact, min_size=1, max_size=12))
def test_other_facts_never_reorder_two_hits_whose_own_measures_stay(
    db: Database, tenant: tuple[str, str], extras: list[tuple[list[str], list[float], int]]
) -> None:
    group, key = tenant
    with db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        sources = {tier: register_source(conn, group, f"tier {tier}", tier) for tier in (1, 2)}
        _write(conn, group, sources, 0, A)
        _write(conn, group, sources, 0, B)
        before = _ranked(conn, group)
        for n, (words, vector, tier) in enumerate(extras, start=1):
            _write(conn, group, sources, n, (f"svc-{n}", " ".join(words), vector, tier))
        after = _ranked(conn, group)
        conn.rollback()
    # every hit's relevance is its own measures through the model: nothing from the list
    assert all(relevance == pytest.approx(own, abs=1e-6) for _, _, relevance, own in after.values())
    # A's and B's own measures did not change, so neither did their scores nor their order
    for subject in ("svc-a", "svc-b"):
        assert after[subject][1] == pytest.approx(before[subject][1], abs=1e-6), subject
    assert (after["svc-a"][0] < after["svc-b"][0]) == (before["svc-a"][0] < before["svc-b"][0])


# --- the case on the demo data ----------------------------------------------------------

QUESTION = "Which cluster does billing-api run on?"
NOTES = {
    "standup.md": "# Standup\n\nThe billing-api deploy went out on Tuesday; the cluster upgrade is next week.\n",
    "ideas.md": "# Ideas\n\nMove the ledger-db backups to the green cluster, and run the queue on more pods.\n",
    "oncall.md": "# On-call\n\nWhich cluster runs the tracking-gateway? Ask the logistics team before paging.\n",
}


@pytest.fixture(scope="module")
def lumen(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Lumen:
    return load_lumen(db, tmp_path_factory.mktemp("objects"))


@pytest.fixture(scope="module")
def demo(db: Database, lumen: Lumen) -> Iterator[VeraClient]:
    providers = build_providers(VeraSettings(embedder={"provider": "local"}))  # as `vera demo` searches
    with client_for(db, lumen.key, providers=providers) as vera:
        yield vera


def _places(vera: VeraClient) -> tuple[int, int]:
    """Ranks of the CMDB fact and of the first team-chat hit for the question, as its proposer."""
    hits = vera.search(QUESTION, k=10)
    cmdb = next(h.rank for h in hits if h.text == "billing-api runs on k8s-hanoi-2")
    chat = next(h.rank for h in hits if (h.citation.get("source") or {}).get("name") == "team chat")  # type: ignore[union-attr]
    return cmdb, chat


def _eval(db: Database, lumen: Lumen) -> str:
    env = {**lumen.environment(db), "VERA_DB__DATA_DIR": str(db.server.data_dir),
           "VERA_DB__PORT": str(db.server.port), "VERA_DB__DATABASE": db.name}  # fmt: skip
    result = CliRunner().invoke(main, ["eval", str(Path(__file__).parents[2] / "examples/lumen/golden.toml")],
                                env=env, catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    return next(line for line in result.output.splitlines() if "hit@5" in line)


def test_notes_and_an_example_fact_do_not_put_the_proposal_above_the_cmdb(
    db: Database, lumen: Lumen, demo: VeraClient, tmp_path: Path
) -> None:
    """The tier-4 chat proposal ranks below the tier-1 CMDB fact for its proposer (the
    contamination guard's intent), before and after a folder of the user's notes and
    docs/python-client.md's first example (payments-api runs on cluster green) are written;
    and every golden question keeps a right answer in its top 5 (in the issue hit@5 fell from
    1.000 to 0.923). Its MRR may move: the notes are new candidates that name the same words
    (the stand-up note, about billing-api and "the cluster"), and their words change the
    statistics every lexical match reads, each hit by its own rule."""
    figures = _eval(db, lumen)
    assert figures.startswith("hit@5 1.000"), figures
    cmdb, chat = _places(demo)
    assert cmdb < chat
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    (tmp_path / "sources.toml").write_text(
        '[[source]]\nname = "my notes"\nkind = "markdown"\ntier = 2\npath = "notes"\n', encoding="utf-8"
    )
    ingest_manifest(db, lumen.key, lumen.organisation, tmp_path / "sources.toml")
    assert [r.ingested for r in run_worker(db, lumen.objects, LocalMiniLMEmbedder())] == [3]
    assert any("Tuesday" in hit.text for hit in demo.search("billing-api deploy Tuesday", k=5))
    org = demo.default_group()
    source = demo.register_source(org, "cmdb", "asset register", 1)
    episode = demo.record_episode(org, source, "assets.csv", hashlib.sha256(b"assets").digest())
    demo.publish(org, episode.episode_id,
                 [{"subject": "payments-api", "predicate": "runs on", "object": "cluster green", "functional": True}])  # fmt: skip
    after_cmdb, after_chat = _places(demo)
    assert after_cmdb < after_chat
    assert _eval(db, lumen).startswith("hit@5 1.000")
