"""The worker's composition: the Procrastinate app with every job the settings enable, all
reaching SQL through the process's one executor. `vera worker`, `vera ingest` and `vera demo`
(vera_cli) build the worker here."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import procrastinate

from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.providers.chat import worker_models
from vera_client.api import jobs as jobs_api
from vera_client.api import sources as sources_api
from vera_client.api import weights as weights_api
from vera_client.bootstrap import Database, build_providers
from vera_client.domain.callers import Operator
from vera_client.domain.errors import VeraError
from vera_worker.adapters.embedding import FactEmbedding
from vera_worker.adapters.extraction import ExtractionEvent, ExtractionReport, PassageExtraction
from vera_worker.adapters.judges import Judges
from vera_worker.adapters.queue import build_app
from vera_worker.connectors.dispatch import IngestRequest, SourceRuns
from vera_worker.connectors.events import IngestEvent, IngestReport
from vera_worker.connectors.runner import ConnectorIngestion
from vera_worker.entrypoints.graph_wiring import graph_projection

logger = logging.getLogger(__name__)


def worker_app(
    database: Database,
    sql: Executor,
    *,
    on_progress: Callable[[IngestEvent], None] | None = None,
    on_report: Callable[[IngestReport], None] | None = None,
    on_failure: Callable[[IngestRequest, str, VeraError], None] | None = None,
    extra_roots: Sequence[Path] = (),
    on_extraction: Callable[[ExtractionEvent], None] | None = None,
    on_extracted: Callable[[ExtractionReport], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> procrastinate.App:
    settings = database.settings
    providers = build_providers(settings)
    objects = providers.objects

    def reported(report: IngestReport) -> None:
        # what hosted models cost this process so far (a local model costs nothing)
        spent = providers.meter.grand_total()
        if spent.requests:
            logger.info(
                "provider usage so far: %d requests (%d failed), %d input tokens, about $%.4f",
                spent.requests, spent.failed_requests, spent.input_tokens, spent.estimated_cost_usd,
            )  # fmt: skip
        if on_report is not None:
            on_report(report)

    # a connector's secret is read from the variable its source's token_env names, in this
    # process's environment, when its run starts (connectors/secrets.py)
    connectors = ConnectorIngestion(
        sql, objects=objects, embedder_for_model=providers.embedder_for_model, environ=os.environ,
        on_progress=on_progress, read_limits=settings.worker.read_limits, should_stop=should_stop,
        # git clones of URL repositories beside the embedded server's data; folder sources' roots
        # and local repositories within the folders the operator allows
        cache_dir=settings.db.data_dir.parent / "connectors",
        allowed_roots=(*settings.worker.source_roots, *extra_roots),
    )  # fmt: skip
    ingestion = SourceRuns(sql, connectors=connectors, on_report=reported, on_failure=on_failure)
    embedding = FactEmbedding(sql, embedder_for_model=providers.embedder_for_model)
    models = worker_models(settings.llm)  # None without VERA_LLM__BASE_URL: extraction and judges off
    extraction = judges = None
    if models is not None:
        extraction = PassageExtraction(
            sql,
            model=models.extraction,
            embedder_for_model=providers.embedder_for_model,
            max_claims_per_passage=settings.llm.max_claims_per_passage,
            on_progress=on_extraction,
            on_report=on_extracted,
        )
        judges = Judges(sql, model=models.judge)
    schedule = settings.worker.calibration_schedule
    return build_app(
        database.worker_dsn,
        objects=objects,
        projection=graph_projection(database, sql),
        ingestion=ingestion,
        embedding=embedding,
        extraction=extraction,
        judges=judges,
        # without a graph, a projection job records that the group's graph is behind
        record_behind=lambda group, facts: sql.run(Operator(), jobs_api.record_graph_behind(group, facts)),
        calibration=lambda: sql.run(Operator(), weights_api.calibrate_due()),
        calibration_cron=None if schedule == "off" else schedule,
        request_due_ingests=lambda: sql.run(Operator(), sources_api.request_due_ingests()),
    )
