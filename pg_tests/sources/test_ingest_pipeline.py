"""Ingestion that keeps the embedder busy (issue 31, connectors/pipeline.py): files are
read and embedded ahead, several files' texts in one call of the embedder's batch
size, and written in order, one transaction each. A run that dies mid-way (the
embedder's circuit opens after some batches) resumes with nothing lost or doubled,
and every vector belongs to its own text."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.ingesting import folder_runs
from pg_tests.support.seed import World, caller, create_project
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.domain.errors import ProviderUnavailableError
from vera_worker.connectors.dispatch import IngestRequest, SourceRuns
from vera_worker.connectors.folder import connector as folder_connector

FILES = 12
PAGED = 24  # files of the run in pages of 4


class _Batched:
    """The deterministic embedder with a batch size, whose circuit opens after `calls` calls."""

    model, dim, batch_size = "deterministic-hash-16", 16, 8

    def __init__(self, calls: int | None = None) -> None:
        self.calls = calls
        self.sizes: list[int] = []
        self.inner = DeterministicEmbedder(16)

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.calls is not None and len(self.sizes) >= self.calls:
            raise ProviderUnavailableError("embedder: the circuit breaker is open")
        if not self.sizes:
            time.sleep(0.3)  # a model's first call is slow: the files behind it are read meanwhile
        self.sizes.append(len(texts))
        return self.inner.embed(texts)


def _folder(root: Path, files: int = FILES) -> Path:
    for n in range(files):
        path = root / f"part-{n % 3}" / f"service-{n:02d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nsubject: service-{n}\nruns on: host-{n}\n---\n# Service {n}\n\n"
            f"Service {n} restarts nightly.\n\nIts owner is team {n % 4}.\n",
            encoding="utf-8",
        )
    return root


def _registered(
    world: World, worker_sql: Executor, tmp_path: Path, name: str, files: int
) -> tuple[str, IngestRequest, Callable[[_Batched], SourceRuns]]:
    """A project with a folder of `files` files registered as its source; the run's request, and the
    worker's ingestion with a given embedder."""
    group = create_project(world, name)
    folder = _folder(tmp_path / "docs", files)
    with client_for(world, world.a.owner_key) as vera:
        source = vera.register_folder(group, f"{name} docs", folder, tier=2, functional=["runs on"])
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    request = IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal)

    def ingestion(embedder: _Batched) -> SourceRuns:
        return folder_runs(worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
                               embedder_for_model=lambda _: embedder)  # type: ignore[arg-type,return-value]  # fmt: skip

    return group, request, ingestion


def test_a_run_that_dies_between_batches_resumes_with_nothing_lost_or_doubled(
    world: World, worker_sql: Executor, tmp_path: Path
) -> None:
    group, request, ingestion = _registered(world, worker_sql, tmp_path, "ingest-pipeline", FILES)

    breaking = _Batched(calls=1)  # a call holds CALL_BATCHES batches: the second call breaks
    with pytest.raises(ProviderUnavailableError):
        ingestion(breaking).run(request)
    assert max(breaking.sizes) > 5  # one file has 5 texts: a call embedded several files at once
    with caller(world.db, world.a.owner_key) as conn:
        committed = conn.execute(
            "select count(*) from vera.episodes where group_id = %s", (group,)
        ).fetchone()[0]  # type: ignore[index]
    with world.db.admin() as admin:
        signed = admin.execute(
            "select count(*) from vera.episodes where group_id = %s and signature is not null", (group,)
        ).fetchone()[0]  # type: ignore[index]
    assert 0 < committed < FILES and signed == committed  # what was written is known, no more

    resumed = ingestion(_Batched()).run(request)
    assert (resumed.untouched, resumed.ingested, resumed.failed) == (committed, FILES - committed, [])
    with caller(world.db, world.a.owner_key) as conn:
        versions = conn.execute(
            "select external_id, count(*) from vera.episodes where group_id = %s group by 1 order by 1",
            (group,),
        ).fetchall()
        chunks = conn.execute(
            "select c.text, c.embedding::text from vera.chunks c join vera.episodes e using (episode_id) "
            "where e.group_id = %s",
            (group,),
        ).fetchall()
    expected = [(f"part-{n % 3}/service-{n:02d}.md", 1) for n in range(FILES)]
    assert versions == sorted(expected)  # nothing lost, nothing doubled
    assert len(chunks) >= FILES
    reference = DeterministicEmbedder(16)
    for text, stored in chunks:  # every vector is its own text's: batching mixed nothing up
        vector = [float(v) for v in stored.strip("[]").split(",")]
        assert all(
            math.isclose(a, b, abs_tol=1e-6) for a, b in zip(vector, reference.embed([text])[0], strict=True)
        )


def test_one_pipeline_runs_through_every_page(
    world: World, worker_sql: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder's files come in pages (200 each; 4 here): the next page's files are read and
    embedded while this page's are written, in calls that hold files of both, rather than the
    pipeline starting and draining once per page; each page's position is still written only once
    its files are, so a run that dies mid-way resumes with nothing lost or doubled."""
    monkeypatch.setattr(folder_connector, "PAGE_SIZE", 4)
    group, request, ingestion = _registered(world, worker_sql, tmp_path, "ingest-pipeline-pages", PAGED)

    breaking = _Batched(calls=2)  # 120 texts, calls of 32 or more once the first is under way
    with pytest.raises(ProviderUnavailableError):
        ingestion(breaking).run(request)
    # a page's 4 files hold at most 4 * 5 texts: a larger call held files of two pages
    assert max(breaking.sizes) > 20
    with caller(world.db, world.a.owner_key) as conn:
        committed = conn.execute(
            "select count(*) from vera.episodes where group_id = %s", (group,)
        ).fetchone()[0]  # type: ignore[index]
    assert 4 < committed < PAGED  # past the first page, not all of them

    whole = _Batched()
    resumed = ingestion(whole).run(request)
    assert (resumed.untouched, resumed.ingested, resumed.failed) == (committed, PAGED - committed, [])
    with caller(world.db, world.a.owner_key) as conn:
        versions = conn.execute(
            "select external_id, count(*) from vera.episodes where group_id = %s group by 1 order by 1",
            (group,),
        ).fetchall()
    assert versions == sorted((f"part-{n % 3}/service-{n:02d}.md", 1) for n in range(PAGED))
    again = ingestion(_Batched()).run(request)
    assert (again.untouched, again.ingested) == (PAGED, 0)  # every page's position and signatures kept
