"""Ingestion throughput of the folder connector, through the real worker:
a folder of Markdown documents (SciFact abstracts from ../shared/eval when
present, else generated text) registered as a source, requested with
vera.request_ingest and worked off by the Procrastinate worker in-process.
Prints documents/s for a first run without vectors, a first run with the
local all-MiniLM-L6-v2 (and how much of it was embedding), a second run
with nothing changed (not even read), and a run after every file was
touched (read and hashed, found unchanged).

Then the embedder alone on the same texts (issue 31: a run should be bound by
the embedder, at >= 85% of its rate). Measured fairly: the very texts the run
embedded, in the order the run embedded them, through the same embedder object
(the same ONNX Runtime session and thread settings) in the same process, right
after the run, in calls of the size the pipeline aims at (its CALL_BATCHES
batches of the model's batch_size, which the embedder sorts by length and
pads per batch as it does in a run). A run whose calls were smaller (the
pipeline starved) pays for it; the alone figure does not. It is measured
twice and the mean used (the machine is shared: the faster of two would
favour a quiet moment). Also printed: the run's calls (how many texts each)
and the seconds inside them, against the same texts alone: what the model
lost to the writer and PostgreSQL running beside it; and the CPU seconds of
the run (this process, every thread; the benchmark's PostgreSQL, backends
included) against the model's alone: the model's share of the run's CPU is
the most the ratio can reach when the model alone can use every core.

Two figures for the run with vectors, both printed with their ratio: the
ingestion to its report (every document stored, embedded and searchable: the
ingest job's end), and the whole drain, the follow-up jobs its writes deferred
included (the graph's projection, the equivalence judge's; with no graph or
judge configured here they only log). The CPU seconds above are the whole
drain's. The worker drains with one slot, as a worker with
VERA_WORKER__CONCURRENCY=1 would, so those jobs run after the ingest job, not
beside the model. Since the outbox adds a list job's items to the group's job
still waiting (issue 31, sql/functions/080_outbox.sql) a run defers one of
each per 50 files, not one per file, and the two figures differ by a fraction
of a second. The run with vectors goes first, alone in its database: the runs
without vectors defer embed jobs that their worker (no embedder) leaves to be
retried, which a later drain would run too.

    .venv/bin/python benchmarks/ingest_throughput.py [--docs 400] [--embedded-docs 150] [--threads N]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.api.sources import Source
from vera_client.client import VeraClient
from vera_client.domain.ports import Embedder
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import drain
from vera_worker.connectors.dispatch import SourceRuns
from vera_worker.connectors.events import IngestReport
from vera_worker.connectors.pipeline import CALL_BATCHES, batch_size
from vera_worker.connectors.runner import ConnectorIngestion

SCIFACT = (
    Path(__file__).resolve().parents[2] / "shared" / "eval" / "scifact" / "beir_test" / "corpus.jsonl.gz"
)


class TimedEmbedder:
    """Counts the seconds spent embedding, to tell model time from database time."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.seconds, self.texts = inner, 0.0, 0
        self.model, self.dim = inner.model, inner.dim
        self.batch_size = getattr(inner, "batch_size", 0)
        self.seen: list[str] = []
        self.calls: list[int] = []  # texts per call
        self.first_call = self.last_return = 0.0  # perf_counter: the first call's start, the last's end

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        self.first_call = self.first_call or started
        vectors = self.inner.embed(texts)
        self.last_return = time.perf_counter()
        self.seconds += self.last_return - started
        self.texts += len(texts)
        self.seen.extend(texts)
        self.calls.append(len(texts))
        return vectors


def alone(embedder: Embedder, texts: list[str], call: int) -> tuple[float, float]:
    """Seconds (wall, this process's CPU) to embed the texts in calls of `call` texts, in order."""
    started, cpu = time.perf_counter(), process_cpu()
    for first in range(0, len(texts), call):
        embedder.embed(texts[first : first + call])
    return time.perf_counter() - started, process_cpu() - cpu


def process_cpu() -> float:
    """CPU seconds of this process, every thread (ONNX Runtime's too)."""
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


def server_cpu(bench: Bench) -> float:
    """CPU seconds of the benchmark's PostgreSQL: the postmaster, its live backends and the ones
    that ended (reaped by it)."""
    postmaster = psutil.Process(bench.server.status().pid)
    times = postmaster.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in postmaster.children():
        with contextlib.suppress(psutil.Error):  # ended meanwhile: counted as reaped
            child_times = child.cpu_times()
            total += child_times.user + child_times.system
    return float(total)


def documents(count: int) -> list[tuple[str, str]]:
    """(title, text) pairs: real abstracts when the evaluation data is there."""
    if SCIFACT.exists():
        with gzip.open(SCIFACT, "rt", encoding="utf-8") as lines:
            rows = [json.loads(line) for _, line in zip(range(count), lines, strict=False)]
        return [(row["title"] or row["_id"], row["text"]) for row in rows]
    rng = random.Random(7)
    words = ["service", "cluster", "owner", "ledger", "invoice", "queue", "restart", "deploy", "latency"]
    return [(f"Note {i}", " ".join(rng.choice(words) for _ in range(180)) + ".") for i in range(count)]


def write_folder(root: Path, docs: list[tuple[str, str]]) -> None:
    for number, (title, text) in enumerate(docs):
        folder = root / f"part-{number // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        front = f"---\ntitle: {json.dumps(title)}\nsubject: doc-{number}\nteam: Team {number % 7}\n---\n"
        (folder / f"doc-{number:05d}.md").write_text(f"{front}# {title}\n\n{text}\n", encoding="utf-8")


def run(
    bench: Bench, group: str, source: Source, objects: Path, embedder: Embedder | None
) -> tuple[IngestReport, float]:
    measured = run_embedded(bench, group, source, objects, embedder)
    return measured.report, measured.drained


@dataclass(frozen=True, slots=True)
class Measured:
    """An embedded run: its report; seconds from the request to the ingestion's report and to the
    end of the worker's drain (the follow-up jobs its writes deferred included); the CPU seconds
    (this process, PostgreSQL) of the whole drain; the follow-up jobs by task."""

    report: IngestReport
    to_report: float
    drained: float
    cpu: float
    server: float
    follow_up: dict[str, int]


def follow_up_jobs(bench: Bench, group: str) -> dict[str, int]:
    """The jobs a run's writes deferred for the worker (beside its ingest job), by task."""
    with bench.admin() as admin:
        rows = admin.execute(
            "select task_name, count(*) from procrastinate.procrastinate_jobs where args ->> 'group_id' = %s"
            " and task_name <> 'vera.ingest_source' group by task_name order by task_name", (group,)
        ).fetchall()  # fmt: skip
    return {str(task): int(count) for task, count in rows}


def run_embedded(
    bench: Bench, group: str, source: Source, objects: Path, embedder: Embedder | None
) -> Measured:
    """A run, timed to the ingestion's report and to the drain's end."""
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        vera.request_ingest(source.group_id, source.source_id)
    reports: list[IngestReport] = []
    reported: list[float] = []  # when the ingestion reported: the worker runs follow-up jobs after

    def on_report(report: IngestReport) -> None:
        reports.append(report)
        reported.append(time.perf_counter())

    worker_dsn = bench.server.worker_url(bench.database)
    with closing(Executor.connect(worker_dsn, check=True)) as sql:  # the worker's pool
        connectors = ConnectorIngestion(sql, objects=LocalObjectStore(objects),
                                        embedder_for_model=lambda _pinned: embedder, environ={},
                                        allowed_roots=(objects.parent,))  # fmt: skip
        ingestion = SourceRuns(sql, connectors=connectors, on_report=on_report)
        started, cpu, server = time.perf_counter(), process_cpu(), server_cpu(bench)
        drain(build_app(worker_dsn, objects=LocalObjectStore(objects), ingestion=ingestion))
        ended = time.perf_counter()
        seconds = ended - started
        cpu, server = process_cpu() - cpu, server_cpu(bench) - server
        follow_up = follow_up_jobs(bench, group)
        if isinstance(embedder, TimedEmbedder) and embedder.calls:
            jobs = ", ".join(f"{count} {task}" for task, count in follow_up.items()) or "none"
            print(
                f"({embedder.first_call - started:.1f} s before the first embedder call, "
                f"{reported[0] - embedder.last_return:.1f} s from the last to the ingestion's report, "
                f"{ended - reported[0]:.1f} s of follow-up jobs and the worker's end; follow-up jobs: {jobs})"
            )
        return Measured(reports[0], reported[0] - started, seconds, cpu, server, follow_up)


def register(bench: Bench, name: str, folder: Path) -> tuple[str, Source]:
    with bench.admin() as admin:  # as an operator: the organisation's folders (vera tenant roots add)
        admin.execute("select vera.add_source_root(%s, %s)", (bench.organisation, os.path.realpath(folder)))
    with bench.app() as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', %s)", (bench.organisation, name)
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        return group, vera.register_folder(group, name, folder, tier=2)


def line(label: str, report: IngestReport, seconds: float, docs: int) -> None:
    print(
        f"| {label} | {docs:,} | {seconds:.1f} | {docs / seconds:,.1f} | {report.ingested} ingested, "
        f"{report.untouched} untouched, {report.unchanged} unchanged; {report.passages} passages, "
        f"{report.claims} claims, {report.embeddings} embeddings |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=400, help="documents for the runs without vectors")
    parser.add_argument("--embedded-docs", type=int, default=150, help="documents for the run with MiniLM")
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime's intra-op threads")
    options = parser.parse_args()
    bench = start("vera_bench_ingest")
    with tempfile.TemporaryDirectory(prefix="vera-ingest-bench-") as scratch:
        root = Path(scratch)
        plain, embedded, objects = root / "plain", root / "embedded", root / "objects"
        all_docs = documents(max(options.docs, options.embedded_docs))
        write_folder(plain, all_docs[: options.docs])
        write_folder(embedded, all_docs[: options.embedded_docs])
        print(
            f"documents: {'SciFact abstracts' if SCIFACT.exists() else 'generated text'}; "
            "through vera.request_ingest and the Procrastinate worker, one transaction per file\n"
        )
        print("| run | documents | seconds | documents/s | what happened |")
        print("|---|---|---|---|---|")
        # the run with vectors first, on its own: the runs without vectors defer embed jobs that
        # their worker (no embedder) leaves to retry, which a later drain would run beside its own
        minilm = LocalMiniLMEmbedder(threads=options.threads)
        minilm.embed(["loads the model"])  # not timed: the first call loads the model
        model = TimedEmbedder(minilm)
        group_e, source_e = register(bench, "embedded", embedded)
        measured = run_embedded(bench, group_e, source_e, objects, model)
        report_e, seconds_e = measured.report, measured.drained
        cpu_e, server_e = measured.cpu, measured.server
        line("first run, all-MiniLM-L6-v2 vectors", report_e, seconds_e, options.embedded_docs)
        group, source = register(bench, "plain", plain)
        report, seconds = run(bench, group, source, objects, None)
        line("first run, no vectors", report, seconds, options.docs)
        report, seconds = run(bench, group, source, objects, None)
        line("second run, nothing changed", report, seconds, options.docs)
        for path in plain.rglob("*.md"):
            os.utime(path, ns=(time.time_ns(), time.time_ns()))
        report, seconds = run(bench, group, source, objects, None)
        line("every file touched, same bytes", report, seconds, options.docs)
        print(
            f"\nembedding: {model.texts} texts in {model.seconds:.1f} s "
            f"({model.texts / model.seconds:.1f} texts/s), "
            f"{100 * model.seconds / seconds_e:.0f}% of the embedded run"
        )
        call = max(1, batch_size(minilm) * CALL_BATCHES)
        tries = [alone(minilm, model.seen, call) for _ in range(2)]
        mean = sum(wall for wall, _ in tries) / len(tries)
        model_cpu = sum(cpu for _, cpu in tries) / len(tries)
        docs = options.embedded_docs
        print(
            f"the run's embedder calls: {len(model.calls)}, texts per call min {min(model.calls)} / "
            f"mean {model.texts / len(model.calls):.1f} / max {max(model.calls)}; "
            f"{model.seconds:.1f} s inside them, the same texts alone {mean:.1f} s "
            f"(tries {', '.join(f'{wall:.1f}' for wall, _ in tries)} s, calls of {call})"
        )
        share = 100 * model_cpu / (cpu_e + server_e)
        print(
            f"CPU seconds of the run: this process {cpu_e:.1f} (the model alone on the same texts "
            f"{model_cpu:.1f}), PostgreSQL {server_e:.1f}; the model's share {share:.0f}%"
            " (the ratio's bound when the model alone can use every core)"
        )
        to_report = measured.to_report
        print(
            f"\n| with all-MiniLM-L6-v2 | seconds | documents/s | ratio to the embedder alone |\n"
            f"|---|---|---|---|\n"
            f"| ingestion, to its report (stored, embedded, searchable) | {to_report:.1f} | "
            f"{docs / to_report:,.1f} | {100 * mean / to_report:.0f}% |\n"
            f"| ingestion and its follow-up jobs, to the drain's end | {seconds_e:.1f} | "
            f"{docs / seconds_e:,.1f} | {100 * mean / seconds_e:.0f}% |\n"
            f"| the embedder alone, same {len(model.seen):,} texts | {mean:.1f} | {docs / mean:,.1f} | |"
        )


if __name__ == "__main__":
    main()
