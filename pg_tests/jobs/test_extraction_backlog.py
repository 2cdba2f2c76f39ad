"""Switching a model on does not send a group's old passages to it behind an ingest's back
(issue 29): an ingestion extracts only the passages it wrote; the backlog waits for `vera
extract --backlog`, which first says how many passages, about how many tokens and what they
would cost, then extracts them with progress; summaries count the model's claims."""

from __future__ import annotations

import json
import re
from contextlib import closing
from pathlib import Path
from typing import LiteralString

import psycopg
import pytest
from click.testing import CliRunner
from tests.standins import API_KEY, StandinServer

from pg_tests.jobs.test_extraction import TEXT, _model, _setup, reading_model
from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.ingesting import folder_runs, worker_executor
from pg_tests.support.seed import World
from vera_cli.main import main
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.providers.chat import ChatModel
from vera_client.client import VeraClient
from vera_worker.adapters.extraction import PassageExtraction
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import drain

NEW = "# Routing\n\nroute-planner runs on k8s-east.\n"


@pytest.fixture
def standin(standin: StandinServer) -> StandinServer:
    standin.chat_responder = reading_model
    return standin


def _drain(world: World, tmp_path: Path, model: ChatModel | None) -> None:
    embedder = DeterministicEmbedder(16)
    store = LocalObjectStore(tmp_path / "objects")
    with closing(worker_executor(world.db)) as sql:
        ingestion = folder_runs(sql, objects=store, embedder_for_model=lambda _pin: embedder,
                                    allowed_roots=(tmp_path,))  # fmt: skip
        extraction = None if model is None else PassageExtraction(
            sql, model=model, embedder_for_model=lambda _pin: embedder
        )  # fmt: skip
        drain(
            build_app(world.db.dsn("vera_worker"), objects=store, ingestion=ingestion, extraction=extraction)
        )


def _backlog_then_new_file(world: World, owner_a: VeraClient, tmp_path: Path, name: str) -> tuple[str, Path]:
    """A group whose first files were ingested while no model was configured."""
    group, folder = _setup(world, tmp_path, name, TEXT)
    (folder / "more.md").write_text("# Owners\n\nledger-db is owned by team green.\n")
    [source] = [s for s in owner_a.list_sources(group) if s.name == "notes"]
    owner_a.request_ingest(group, source.source_id)
    _drain(world, tmp_path, None)  # no model: the passages stay passages
    assert owner_a.extraction_backlog(group, "extractor-s/extract-1").passages == 2
    (folder / "new.md").write_text(NEW)
    return group, folder


def test_an_ingest_sends_only_the_passages_it_wrote_to_the_model(
    world: World, owner_a: VeraClient, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _backlog_then_new_file(world, owner_a, tmp_path, "backlog-scope")
    [source] = [s for s in owner_a.list_sources(group) if s.name == "notes"]
    owner_a.request_ingest(group, source.source_id)
    _drain(world, tmp_path, _model(standin))
    sent = [json.loads(r.body["messages"][-1]["content"])["passage"] for r in standin.requests]
    assert sent == ["route-planner runs on k8s-east."] or (len(sent) == 1 and "route-planner" in sent[0])
    # the two older passages still wait, for an explicit command
    assert owner_a.extraction_backlog(group, "extractor-s/extract-1").passages == 2


def _cli_env(world: World, standin: StandinServer, tmp_path: Path) -> dict[str, str]:
    return {
        "VERA_DB__DSN": world.db.dsn(APP_LOGIN),
        "VERA_DB__WORKER_DSN": world.db.dsn("vera_worker"),
        "VERA_API_KEY": world.a.owner_key,
        "VERA_LLM__BASE_URL": f"{standin.url}/openai/v1",
        "VERA_LLM__API_KEY": API_KEY,
        "VERA_LLM__EXTRACTION_MODEL": "extractor-s",
        "VERA_LLM__PRICES": json.dumps(
            {"extractor-s": {"input_per_million": 1.0, "output_per_million": 2.0}}
        ),
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_EMBEDDER__DIM": "16",
        "VERA_OBJECTS__ROOT": str(tmp_path / "objects"),
        "VERA_WORKER__SOURCE_ROOTS": json.dumps([str(tmp_path)]),
    }


def test_vera_extract_backlog_estimates_asks_then_extracts_with_progress(
    world: World, owner_a: VeraClient, tmp_path: Path, standin: StandinServer
) -> None:
    group, _ = _backlog_then_new_file(world, owner_a, tmp_path, "backlog-cli")
    env = _cli_env(world, standin, tmp_path)
    runner = CliRunner()
    # an ingest through the command: the model reads its new passage only, the summary counts its
    # claims, and a note says what waits
    ingested = runner.invoke(main, ["ingest", "--source", "notes", "--group", group], env=env,
                             catch_exceptions=False)  # fmt: skip
    assert ingested.exit_code == 0, ingested.output
    assert len(standin.requests) == 1
    assert re.search(r"extraction: 1 passage through the model \(1 call, 0 reused, 0 failed\): 1 claim by the model",
                     ingested.stdout), ingested.stdout  # fmt: skip
    assert f"2 passages of {group} have not been through a model" in ingested.stderr
    assert f"vera extract --group {group} --backlog" in ingested.stderr
    # asked, and not confirmed: nothing is sent
    refused = runner.invoke(main, ["extract", "--group", group, "--backlog"], env=env, input="n\n",
                            catch_exceptions=False)  # fmt: skip
    assert refused.exit_code == 1
    assert re.search(r"2 passages to send to extractor-s: about [\d,]+ input and 500 output tokens, about \$0\.00",
                     refused.stdout), refused.stdout  # fmt: skip
    assert "nothing sent" in refused.stderr and len(standin.requests) == 1
    done = runner.invoke(main, ["extract", "--group", group, "--backlog", "--yes"], env=env,
                         catch_exceptions=False)  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "2 passages to send to extractor-s" in done.stdout
    assert (
        f"extracting {group}: 1/2 passages" in done.stderr
        and f"extracting {group}: 2/2 passages" in done.stderr
    )
    assert (
        "extraction: 2 passages through the model (2 calls, 0 reused, 0 failed): 3 claims by the model"
        in (done.stdout)
    )
    assert len(standin.requests) == 3
    again = runner.invoke(main, ["extract", "--group", group, "--backlog"], env=env, catch_exceptions=False)
    assert again.exit_code == 0 and f"nothing to extract in {group}" in again.stdout


@pytest.mark.parametrize(
    "statement",
    [
        "select vera.request_episode_extraction(%(group)s, array[gen_random_uuid()])",
        "select * from vera.extraction_backlog(%(group)s, 'any-model', false)",
    ],
)
def test_another_tenants_backlog_is_out_of_reach(world: World, statement: LiteralString) -> None:
    """Tenant A's owner asks about, or queues, tenant B's backlog: refused as for any group it is
    not a member of (42501), and nothing is queued."""
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement, {"group": world.b.organisation})
