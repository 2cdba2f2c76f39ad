"""One ingestion run of a source, whatever its kind: the connector of its kind
(registry.py; the folder connector for a source whose config names a root
folder) run by the runner (runner.py). Every run is recorded
(vera.source_runs: `vera source list` shows the last one), and the caller
hears of its report or its failure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from vera_client.adapters.postgres.executor import Executor
from vera_client.api import sources as sources_api
from vera_client.domain.callers import Principal
from vera_client.domain.errors import DatabaseUnavailableError, VeraError
from vera_worker.connectors.events import IngestReport
from vera_worker.connectors.registry import connector_kind
from vera_worker.connectors.runner import ConnectorIngestion, ConnectorRequest, source_of


@dataclass(frozen=True, slots=True)
class IngestRequest:
    """A vera.ingest_source job's arguments: the source, who asked (the worker vouches for that
    principal: the run writes with its rights) and, for a folder, one path below its root."""

    group_id: str
    source_id: UUID
    principal_id: UUID
    path: str | None = None

    @classmethod
    def from_job_args(cls, args: dict[str, Any]) -> IngestRequest:
        return cls(
            group_id=str(args["group_id"]),
            source_id=UUID(str(args["source_id"])),
            principal_id=UUID(str(args["principal_id"])),
            path=args.get("path") or None,
        )


class SourceRuns:
    """Runs ingestion requests (the worker's vera.ingest_source jobs)."""

    def __init__(
        self,
        sql: Executor,
        *,
        connectors: ConnectorIngestion,
        on_report: Callable[[IngestReport], None] | None = None,
        on_failure: Callable[[IngestRequest, str, VeraError], None] | None = None,
    ) -> None:
        """on_report and on_failure hear of each run's report, or of the error that ended it (with
        the source's name, its id when unknown)."""
        self._sql = sql
        self._connectors = connectors
        self._on_report = on_report
        self._on_failure = on_failure

    def run(self, request: IngestRequest, should_stop: Callable[[], bool] = lambda: False) -> IngestReport:
        """One recorded run; a VeraError ends it (the job fails) once its run row says why."""
        caller = Principal(request.principal_id)
        try:
            with self._sql.transaction(caller) as tx:
                source = source_of(tx, request.group_id, request.source_id)
                run_id = tx.run(sources_api.begin_source_run(request.group_id, request.source_id))
        except VeraError as exc:
            if self._on_failure is not None:
                self._on_failure(request, str(request.source_id), exc)
            raise
        try:
            connector_request = ConnectorRequest(
                group_id=request.group_id, source_id=request.source_id, principal_id=request.principal_id,
                scope=request.path,
            )  # fmt: skip
            try:
                report = self._connectors.run(connector_kind(source.kind, source.config), connector_request,
                                              should_stop)  # fmt: skip
            except VeraError as exc:
                if self._on_failure is not None:
                    self._on_failure(request, source.name, exc)
                raise
            if self._on_report is not None:
                self._on_report(report)
        except DatabaseUnavailableError:
            raise  # nothing can be recorded; the next run marks this one interrupted
        except VeraError as exc:
            self._end(caller, request, run_id, "failed", report=None, error=str(exc))
            raise
        self._end(caller, request, run_id, "stopped" if report.stopped else "done", report=report, error=None)
        return report

    def _end(
        self, caller: Principal, request: IngestRequest, run_id: UUID, status: str, *,
        report: IngestReport | None, error: str | None,
    ) -> None:  # fmt: skip
        counts: dict[str, int] = {}
        if report is not None:
            counts = {"items": report.ingested, "unchanged": report.unchanged, "retracted": report.retracted,
                      "skipped": len(report.skipped) + len(report.failed)}  # fmt: skip
        with self._sql.transaction(caller) as tx:
            pruned = report is not None and report.pruned
            tx.run(
                sources_api.end_source_run(
                    request.group_id, run_id, status, counts, error=error, pruned=pruned
                )
            )
