"""Ingestion through the real worker, for tests: register sources, queue their
runs through the SQL API, and drain the Procrastinate queue in-process."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from pathlib import Path

from pg_tests.support.clients import client_for
from pg_tests.support.databases import Database
from pg_tests.support.seed import allow_folders
from vera_client.adapters.examples import example_dir
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.api.sources import Source
from vera_client.config import ReadLimits, ResilienceSettings
from vera_client.domain.ports import Embedder, ObjectStore
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import drain
from vera_worker.connectors.dispatch import SourceRuns
from vera_worker.connectors.events import IngestEvent, IngestReport
from vera_worker.connectors.folder.manifest import register_manifest, request_all
from vera_worker.connectors.runner import ConnectorIngestion


def worker_executor(db: Database) -> Executor:
    """A worker's pool on db (role vera_worker), checked as `vera worker`'s is
    (Database.worker_executor); close it when done."""
    return Executor.connect(db.dsn("vera_worker"), check=True)


def run_worker(
    db: Database,
    objects: Path,
    embedder: Embedder | None = None,
    events: list[IngestEvent] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    resilience: ResilienceSettings | None = None,
    read_limits: ReadLimits | None = None,
) -> list[IngestReport]:
    """Work off every due job of the worker's queues, as `vera worker` does (folder sources and
    connector kinds alike, each run recorded); the ingestion runs' reports. environ: the worker's
    environment that token_env variables are read from."""
    reports: list[IngestReport] = []
    store = LocalObjectStore(objects)
    progress = events.append if events is not None else None
    with closing(worker_executor(db)) as sql:
        connectors = ConnectorIngestion(
            sql, objects=store, embedder_for_model=lambda _pinned: embedder, environ=environ or {},
            resilience=resilience, on_progress=progress,
            # test folders and git repositories live below the temporary directory (clones beside
            # the objects); the example corpus ships with VERA
            allowed_roots=(Path(tempfile.gettempdir()), example_dir()), cache_dir=objects / "connector-cache",
            read_limits=read_limits,
        )  # fmt: skip
        ingestion = SourceRuns(sql, connectors=connectors, on_report=reports.append)
        drain(build_app(db.dsn("vera_worker"), objects=store, ingestion=ingestion))
    return reports


def folder_runs(
    sql: Executor,
    *,
    objects: ObjectStore,
    embedder_for_model: Callable[[str | None], Embedder | None],
    allowed_roots: Sequence[Path],
    on_progress: Callable[[IngestEvent], None] | None = None,
    on_report: Callable[[IngestReport], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    limits: ReadLimits | None = None,
) -> SourceRuns:
    """The worker's ingestion (connectors/dispatch.py) for tests that run it directly rather than
    through the queue: every kind through the one runner, folder sources below allowed_roots."""
    connectors = ConnectorIngestion(
        sql, objects=objects, embedder_for_model=embedder_for_model, environ={}, on_progress=on_progress,
        allowed_roots=tuple(allowed_roots), read_limits=limits, should_stop=should_stop,
    )  # fmt: skip
    return SourceRuns(sql, connectors=connectors, on_report=on_report)


def ingest_manifest(db: Database, key: str, group: str, manifest: Path) -> list[Source]:
    """Register the manifest's sources and queue one run each (committed); the manifest's folder
    is allowed to the group's organisation first, as `vera demo` allows the example corpus."""
    with db.admin() as admin:
        organisation = admin.execute("select vera.root_group(%s)", (group,)).fetchone()
        assert organisation is not None
        allow_folders(admin, organisation[0], str(manifest.parent))
    with client_for(db, key) as vera:
        registered = register_manifest(vera, group, manifest)
        request_all(vera, registered)
    return registered


def worker_process_env(db: Database, objects: Path, **settings: str) -> dict[str, str]:
    """The environment of a real `vera worker` process on db: the test server, the
    deterministic embedder, objects under `objects`, sources below the temporary directory;
    settings adds VERA_* variables (e.g. VERA_WORKER__STALLED_AFTER="2")."""
    return {
        **os.environ,
        "VERA_DB__DATA_DIR": str(db.server.data_dir),
        "VERA_DB__PORT": str(db.server.port),
        "VERA_DB__DATABASE": db.name,
        "VERA_DB__DSN": "",
        "VERA_DB__ADMIN_DSN": "",
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_OBJECTS__ROOT": str(objects),
        "VERA_WORKER__SOURCE_ROOTS": json.dumps([tempfile.gettempdir()]),
        **settings,
    }
