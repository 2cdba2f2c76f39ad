"""The extract job against a real PostgreSQL and a stand-in model server: claims from
free text published through vera.publish_claims as the ingestion's principal (the tier
grades them, a new predicate is a proposal, citations name the passage and span),
idempotent per passage text and model version, `redo` for a new version, bad answers
bounded and never stored, and other tenants' ids refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from tests.standins import API_KEY, StandinServer

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.ingesting import folder_runs, worker_executor, worker_process_env
from pg_tests.support.seed import World, caller
from vera_cli.main import main
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.providers.chat import ChatModel
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.client import VeraClient
from vera_client.config import ResilienceSettings
from vera_client.domain.ports import Embedder
from vera_worker.adapters.extraction import PassageExtraction
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import drain

FAST = ResilienceSettings(max_retries=1, retry_base_seconds=0.001, timeout_seconds=5.0)
# "X runs on Y." and "X is owned by Y." sentences, as a model would find them
_RUNS_ON = re.compile(r"([\w-]+) runs on ([\w-]+)")
_OWNED_BY = re.compile(r"([\w-]+) is owned by ([\w ]+?)\.")


def reading_model(body: dict[str, Any]) -> str:
    """A stand-in extraction model: reads the passage the worker sent and answers with its claims."""
    passage = json.loads(body["messages"][-1]["content"])["passage"]
    claims = []
    for pattern, predicate in ((_RUNS_ON, "runs on"), (_OWNED_BY, "OWNED_BY")):
        for match in pattern.finditer(passage):
            claims.append({
                "subject": match.group(1), "predicate": predicate, "object": match.group(2),
                "object_is_entity": True, "new_predicate": predicate == "OWNED_BY", "valid_from": None,
                "confidence": 0.9, "evidence": match.group(0), "evidence_start": match.start(),
                "evidence_end": match.end(),
            })  # fmt: skip
    return json.dumps({"claims": claims})


@pytest.fixture
def standin(standin: StandinServer) -> StandinServer:
    standin.chat_responder = reading_model
    return standin


def _model(standin: StandinServer, name: str = "extractor-s") -> ChatModel:
    return ChatModel(base_url=f"{standin.url}/openai/v1", model=name, api_key=API_KEY,
                     chain=ResilienceChain("llm", FAST))  # fmt: skip


class DigitBlindEmbedder(DeterministicEmbedder):
    """Deterministic vectors that ignore digits: db-1 and db-2 get the same one (cosine 1)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return super().embed([re.sub(r"[0-9]", "", text) for text in texts])


def _work(world: World, tmp_path: Path, model: ChatModel, *, max_claims: int = 50,
          embedder: Embedder | None = None) -> None:  # fmt: skip
    """Drain the queue with a worker that ingests and extracts (deterministic vectors by default)."""
    embedder = embedder or DeterministicEmbedder(16)
    store = LocalObjectStore(tmp_path / "objects")
    with closing(worker_executor(world.db)) as sql:
        ingestion = folder_runs(sql, objects=store, embedder_for_model=lambda _pin: embedder,
                                    allowed_roots=(tmp_path,))  # fmt: skip
        extraction = PassageExtraction(sql, model=model, embedder_for_model=lambda _pin: embedder,
                                       max_claims_per_passage=max_claims)  # fmt: skip
        drain(
            build_app(world.db.dsn("vera_worker"), objects=store, ingestion=ingestion, extraction=extraction)
        )


def _setup(world: World, tmp_path: Path, name: str, text: str, *, tier: int = 1) -> tuple[str, Path]:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "notes.md").write_text(text)
    with client_for(world, world.a.owner_key) as vera:
        group = vera.create_group(world.a.organisation, "project", name)
        vera.declare_predicate(group, "RUNS_ON", "functional")
        source = vera.register_folder(group, "notes", folder, tier=tier)
        vera.request_ingest(group, source.source_id)
    return group, folder


def _facts(world: World, group: str) -> list[tuple[Any, ...]]:
    with world.db.admin() as admin:
        return admin.execute(
            """select e.canonical_name, f.predicate, f.object_value, f.lifecycle::text, f.group_id,
                      substr(c.text, f.evidence_start + 1, f.evidence_end - f.evidence_start),
                      f.embedding is not null
                 from vera.facts f
                 join vera.entities e on e.group_id = f.group_id and e.entity_id = f.subject_entity_id
                 left join vera.chunks c on c.group_id = coalesce(f.origin ->> 'group_id', f.group_id)
                                        and c.chunk_id = coalesce((f.origin ->> 'chunk_id')::uuid, f.chunk_id)
                where f.group_id = %s or f.origin ->> 'group_id' = %s
                order by 2, 1""",
            (group, group),
        ).fetchall()


TEXT = "# Services\n\nbilling-api runs on pg-cluster-7. It is busy at night.\n\nledger-db is owned by team green.\n"


def test_free_text_becomes_claims_cited_by_passage_and_span(
    world: World, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _setup(world, tmp_path, "extract-basic", TEXT)
    _work(world, tmp_path, _model(standin))
    facts = _facts(world, group)
    runs_on = [f for f in facts if f[1] == "RUNS_ON"]
    # a known predicate, tier 1: published in the group, citing the exact words
    assert runs_on == [("billing-api", "RUNS_ON", "pg-cluster-7", "published", group,
                        "billing-api runs on pg-cluster-7", True)]  # fmt: skip
    # a predicate the group lacks is proposed: a proposal in the owner's own scope, not in the group
    [owned] = [f for f in facts if f[1] == "OWNED_BY"]
    assert owned[3] == "proposal" and owned[4] == world.a.owner_personal
    assert owned[5] == "ledger-db is owned by team green."
    with world.db.admin() as admin:
        ontology = admin.execute("select name from vera.predicates where group_id = %s", (group,)).fetchall()
        subject_vector = admin.execute(
            "select name_embedding is not null from vera.entities where group_id = %s"
            " and canonical_name = 'billing-api'",
            (group,),
        ).fetchone()
    assert ontology == [("RUNS_ON",)]
    assert subject_vector == (True,)  # the worker sent the subject's embedding: the semantic rung ran
    # the prompt offered the ontology, and the model was asked for the schema
    [request] = [r for r in standin.requests if r.path.endswith("/chat/completions")]
    offered = json.loads(request.body["messages"][-1]["content"])
    assert offered["ontology"] == [{"name": "RUNS_ON", "cardinality": "functional"}]
    assert request.body["response_format"]["type"] == "json_schema"


def test_unchanged_text_calls_no_model_and_a_new_model_version_only_when_asked(
    world: World, owner_a: VeraClient, tmp_path: Path, standin: StandinServer
) -> None:
    group, folder = _setup(world, tmp_path, "extract-idem", TEXT)
    _work(world, tmp_path, _model(standin))
    calls_after_first = len(standin.requests)
    facts = _facts(world, group)
    owner_a.request_extraction(group)
    _work(world, tmp_path, _model(standin))
    assert len(standin.requests) == calls_after_first  # nothing new: no model call
    assert _facts(world, group) == facts
    # a new version of the file, with the old paragraph unchanged: only new text goes to the model
    (folder / "notes.md").write_text(TEXT + "\n# More\n\nroute-planner runs on k8s-east.\n")
    [source] = [s for s in owner_a.list_sources(group) if s.name == "notes"]
    owner_a.request_ingest(group, source.source_id)
    _work(world, tmp_path, _model(standin))
    new_calls = standin.requests[calls_after_first:]
    assert len(new_calls) == 1
    assert "route-planner" in json.loads(new_calls[0].body["messages"][-1]["content"])["passage"]
    live = {(f[0], f[2]) for f in _facts(world, group) if f[1] == "RUNS_ON" and f[3] == "published"}
    assert live == {("billing-api", "pg-cluster-7"), ("route-planner", "k8s-east")}
    # another model version: nothing until asked, then every passage once
    before = len(standin.requests)
    _work(world, tmp_path, _model(standin, "extractor-m"))
    assert len(standin.requests) == before
    owner_a.request_extraction(group, redo=True)
    _work(world, tmp_path, _model(standin, "extractor-m"))
    assert len(standin.requests) == before + 2


def test_a_tier_3_source_sends_extracted_claims_to_review(
    world: World, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _setup(world, tmp_path, "extract-tier3", TEXT, tier=3)
    _work(world, tmp_path, _model(standin))
    [runs_on] = [f for f in _facts(world, group) if f[1] == "RUNS_ON"]
    assert runs_on[3] == "pending_review"


@pytest.mark.parametrize(
    ("answer", "kept", "outcome"),
    [
        ("{this is not json", 0, "failed"),
        (json.dumps({"claims": "none"}), 0, "failed"),
        # a span that is not the quoted text, an unknown field, a confidence out of range
        # (the passage is the section's text, which begins with "billing-api")
        (json.dumps({"claims": [
            {"subject": "billing-api", "predicate": "RUNS_ON", "object": "pg-cluster-7", "object_is_entity": True,
             "new_predicate": False, "valid_from": None, "confidence": 0.9, "evidence": "billing-api runs on",
             "evidence_start": 5, "evidence_end": 24},
            {"subject": "billing-api", "predicate": "RUNS_ON", "object": "pg-9", "object_is_entity": True,
             "new_predicate": False, "valid_from": None, "confidence": 0.9, "evidence": "billing-api",
             "evidence_start": 0, "evidence_end": 11, "sql": "drop table"},
            {"subject": "billing-api", "predicate": "RUNS_ON", "object": "pg-9", "object_is_entity": True,
             "new_predicate": False, "valid_from": None, "confidence": 7, "evidence": "billing-api",
             "evidence_start": 0, "evidence_end": 11},
        ]}), 0, "extracted"),
        # 10,000 claims for one paragraph: the first few kept, the rest not even read
        (json.dumps({"claims": [
            {"subject": f"svc-{i}", "predicate": "RUNS_ON", "object": "pg-cluster-7", "object_is_entity": True,
             "new_predicate": False, "valid_from": None, "confidence": 0.5, "evidence": "billing-api",
             "evidence_start": 0, "evidence_end": 11} for i in range(10_000)]}), 3, "extracted"),
    ],
)  # fmt: skip
def test_bad_answers_are_bounded_and_never_stored_as_is(
    world: World, tmp_path: Path, standin: StandinServer, answer: str, kept: int, outcome: str
) -> None:
    group, _ = _setup(world, tmp_path, f"extract-bad-{len(answer)}", TEXT)
    standin.chat_responder = lambda _body: answer
    _work(world, tmp_path, _model(standin), max_claims=3)
    assert len(_facts(world, group)) == kept
    with world.db.admin() as admin:
        runs = admin.execute(
            "select outcome, jsonb_array_length(claims), dropped from vera.extraction_runs where group_id = %s",
            (group,),
        ).fetchall()
    assert [(o, n) for o, n, _ in runs] == [(outcome, kept)]
    if outcome == "extracted" and kept == 0:
        assert runs[0][2] == 3
    if kept == 3:
        assert runs[0][2] == 10_000 - 3


def test_a_refusal_or_a_server_without_json_schema(
    world: World, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _setup(world, tmp_path, "extract-jsonmode", TEXT)
    standin.refuse_json_schema = True
    _work(world, tmp_path, _model(standin))
    assert [f[2] for f in _facts(world, group) if f[1] == "RUNS_ON"] == ["pg-cluster-7"]
    assert [r.body["response_format"]["type"] for r in standin.requests] == ["json_schema", "json_object"]


def test_other_tenants_cannot_read_or_record_a_groups_extractions(
    world: World, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _setup(world, tmp_path, "extract-tenancy", TEXT)
    _work(world, tmp_path, _model(standin))
    with world.db.admin() as admin:
        chunk, sha = admin.execute(
            "select chunk_id, content_sha256 from vera.chunk_extractions where group_id = %s limit 1",
            (group,),
        ).fetchone()  # type: ignore[misc]
    attempts = [
        ("select * from vera.passages_to_extract(%s, 'm', true, 10)", (group,)),
        ("select * from vera.extraction_run(%s, %s, 'm', true)", (group, sha)),
        ("select vera.take_passage(%s, %s, 'm', true)", (group, chunk)),
        ("select * from vera.extraction_context(%s, 'text', 10)", (group,)),
        (
            "select vera.record_extraction(%s, %s, %s, 'm', 'extracted', '[]', 0, null, 0)",
            (group, chunk, sha),
        ),
        ("select vera.request_extraction(%s, true)", (group,)),
    ]
    for sql, params in attempts:
        with (
            caller(world.db, world.b.owner_key, role="vera_worker") as conn,
            pytest.raises(psycopg.Error) as raised,
        ):
            conn.execute(sql, params)
        assert raised.value.sqlstate == "42501", sql
    # an application (even the group's owner) cannot plant claims for a text: only the worker records them
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.record_extraction(%s, %s, %s, 'm', 'extracted', '[]', 0, null, 0)",
                     (group, chunk, sha))  # fmt: skip
    assert raised.value.sqlstate == "42501"
    # nor may the worker record claims under another text's hash
    with (
        caller(world.db, world.a.owner_key, role="vera_worker") as conn,
        pytest.raises(psycopg.Error) as raised,
    ):
        conn.execute("select vera.record_extraction(%s, %s, %s, 'm', 'extracted', '[]', 0, null, 0)",
                     (group, chunk, bytes(32)))  # fmt: skip
    assert raised.value.sqlstate == "22023"
    # a viewer of the group's own tenant may not record extractions either
    with (
        caller(world.db, world.a.viewer_key, role="vera_worker") as conn,
        pytest.raises(psycopg.Error) as raised,
    ):
        conn.execute("select vera.record_extraction(%s, %s, %s, 'm', 'extracted', '[]', 0, null, 0)",
                     (group, chunk, sha))  # fmt: skip
    assert raised.value.sqlstate == "42501"


def test_erasing_a_source_leaves_no_extracted_claims_behind(
    world: World, owner_a: VeraClient, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _setup(world, tmp_path, "extract-erase", TEXT)
    _work(world, tmp_path, _model(standin))
    with world.db.admin() as admin:
        assert admin.execute(
            "select count(*) from vera.extraction_runs where group_id = %s", (group,)
        ).fetchone() == (1,)
    [source] = [s for s in owner_a.list_sources(group) if s.name == "notes"]
    owner_a.erase_source(group, source.source_id, "asked to forget")
    with world.db.admin() as admin:
        left = admin.execute(
            "select (select count(*) from vera.extraction_runs where group_id = %s),"
            " (select count(*) from vera.chunk_extractions where group_id = %s)",
            (group, group),
        ).fetchone()
    assert left == (0, 0)


def test_ingested_subjects_carry_name_vectors_and_numbered_siblings_stay_apart(
    world: World, owner_a: VeraClient, tmp_path: Path, standin: StandinServer
) -> None:
    """Structured claims get subject embeddings too, so the semantic rung runs on ingested
    data; names that differ only by their numbers (db-1, db-2: 0.98 apart) never link by it."""
    folder = tmp_path / "cmdb-siblings"
    folder.mkdir()
    # two files: two publications, so the second name is resolved against the first
    (folder / "a.csv").write_text("service,runs on\nledger-db-1,pg-7\n")
    (folder / "b.csv").write_text("service,runs on\nledger-db-2,pg-8\n")
    group = owner_a.create_group(world.a.organisation, "project", "extract-siblings")
    source = owner_a.register_folder(group, "cmdb", folder, tier=1, kind="cmdb")
    owner_a.request_ingest(group, source.source_id)
    _work(world, tmp_path, _model(standin), embedder=DigitBlindEmbedder(16))
    with world.db.admin() as admin:
        entities = admin.execute(
            "select canonical_name, name_embedding is not null from vera.entities"
            " where group_id = %s and canonical_name like 'ledger-db-%%' order by 1",
            (group,),
        ).fetchall()
    assert entities == [("ledger-db-1", True), ("ledger-db-2", True)]


def test_vera_reprocess_queues_a_redo_and_says_when_no_model_is_configured(
    world: World, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _setup(world, tmp_path, "extract-cli", TEXT)
    env = {
        "VERA_DB__DSN": world.db.dsn(APP_LOGIN),
        "VERA_DB__WORKER_DSN": world.db.dsn("vera_worker"),
        "VERA_API_KEY": world.a.owner_key,
        "VERA_LLM__BASE_URL": "",
    }
    off = CliRunner().invoke(
        main, ["reprocess", "--group", group, "--no-wait"], env=env, catch_exceptions=False
    )
    assert off.exit_code == 1
    assert off.output.strip().splitlines() == [
        "vera: error: no extraction model is configured: set VERA_LLM__BASE_URL (see docs/extraction.md)"
    ]
    env["VERA_LLM__BASE_URL"] = f"{standin.url}/openai/v1"
    on = CliRunner().invoke(
        main, ["reprocess", "--group", group, "--no-wait"], env=env, catch_exceptions=False
    )
    assert on.exit_code == 0, on.output
    assert f"queued extraction of {group}'s passages: job" in on.output
    with world.db.admin() as admin:
        jobs = admin.execute(
            "select args ->> 'redo', args ->> 'principal_id' from procrastinate.procrastinate_jobs"
            " where task_name = 'vera.extract' and args ->> 'group_id' = %s and status = 'todo'",
            (group,),
        ).fetchall()
    assert jobs == [("true", str(world.a.owner))]


def test_two_jobs_taking_the_same_passage_publish_it_once(
    world: World, worker_sql: Executor, tmp_path: Path
) -> None:
    """Two extract jobs at once (two workers, or one with concurrency): the second waits for
    the first's transaction and then finds the passage done."""
    group, _ = _setup(world, tmp_path, "extract-race", TEXT)
    store = LocalObjectStore(tmp_path / "objects")
    ingestion = folder_runs(
        worker_sql, objects=store, embedder_for_model=lambda _pin: None, allowed_roots=(tmp_path,)
    )
    drain(
        build_app(world.db.dsn("vera_worker"), objects=store, ingestion=ingestion)
    )  # passages stored, nothing extracted
    with world.db.admin() as admin:
        chunk, sha = admin.execute(
            "select chunk_id, sha256(convert_to(text, 'UTF8')) from vera.chunks where group_id = %s", (group,)
        ).fetchone()  # type: ignore[misc]
    take = "select vera.take_passage(%s, %s, 'm/extract-1', false)"
    with caller(world.db, world.a.owner_key, role="vera_worker") as first:
        assert first.execute(take, (group, chunk)).fetchone() == (True,)
        answers: list[Any] = []

        def second_job() -> None:
            with caller(world.db, world.a.owner_key, role="vera_worker") as second:
                answers.append(second.execute(take, (group, chunk)).fetchone())

        waiting = threading.Thread(target=second_job)
        waiting.start()
        waiting.join(timeout=0.5)
        assert waiting.is_alive()  # blocked on the first job's hold of the passage
        first.execute("select vera.record_extraction(%s, %s, %s, 'm/extract-1', 'extracted', '[]', 0, null, 0)",
                      (group, chunk, sha))  # fmt: skip
        first.commit()
        waiting.join(timeout=10)
    assert answers == [(False,)]


def test_a_real_worker_process_configured_with_a_model_extracts(
    world: World, tmp_path: Path, standin: StandinServer
) -> None:
    """`vera worker --once` with VERA_LLM__* set: settings -> models -> the extract job, end to end."""
    group, _ = _setup(world, tmp_path, "extract-process", TEXT)
    env = worker_process_env(
        world.db, tmp_path / "objects",
        VERA_LLM__BASE_URL=f"{standin.url}/openai/v1", VERA_LLM__API_KEY=API_KEY,
        VERA_LLM__EXTRACTION_MODEL="extractor-p",
        # one job at a time: `--once` stops when a fetch finds the queue empty, and with two
        # slots the idle one would find it so while the ingestion still runs
        VERA_WORKER__CONCURRENCY="1",
        # the vectors of the other tests' worker (proposals land in the owner's scope, pinned by them)
        VERA_EMBEDDER__DIM="16",
        VERA_LLM__PRICES=json.dumps({"extractor-p": {"input_per_million": 1.0, "output_per_million": 2.0}}),
    )  # fmt: skip
    worker = subprocess.run(  # noqa: S603
        [str(Path(sys.executable).with_name("vera")), "worker", "--once"],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert [f[2] for f in _facts(world, group) if f[1] == "RUNS_ON"] == ["pg-cluster-7"], worker.stderr[
        -4000:
    ]
    assert {r.body["model"] for r in standin.requests} == {"extractor-p"}
    # the log line carries the meter's totals, priced from the settings
    assert re.search(r"extract p:\S+: 1 passages, 1 model calls, .* about \$0\.0\d+ so far", worker.stderr)


def test_reprocess_tries_a_failed_passage_again(
    world: World, owner_a: VeraClient, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _setup(world, tmp_path, "extract-retry", TEXT)
    standin.chat_responder = lambda _body: "{not json"
    _work(world, tmp_path, _model(standin))
    assert _facts(world, group) == []
    # asked again without redo: a failure is not retried in a loop
    standin.chat_responder = reading_model
    owner_a.request_extraction(group)
    _work(world, tmp_path, _model(standin))
    assert len(standin.requests) == 1 and _facts(world, group) == []
    owner_a.request_extraction(group, redo=True)
    _work(world, tmp_path, _model(standin))
    assert len(standin.requests) == 2
    assert [f[2] for f in _facts(world, group) if f[1] == "RUNS_ON"] == ["pg-cluster-7"]
    with world.db.admin() as admin:
        runs = admin.execute(
            "select outcome from vera.extraction_runs where group_id = %s", (group,)
        ).fetchall()
    assert runs == [("extracted",)]
