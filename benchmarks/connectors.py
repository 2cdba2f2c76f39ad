"""Connector throughput beside the folder connector, on the same texts, through
the real worker: N configuration items served by the local CMDB stand-in
(tests/source_standins.py, pages of 100) and the same N texts as a folder of
Markdown files, and the same N files committed to a git repository made here
(the git kind, read from a local path). Prints items/s for a first run without vectors, a first run with
the local all-MiniLM-L6-v2, and a re-run with nothing changed, for each; the
connector's own overhead is its no-vector time over the folder's.

    .venv/bin/python benchmarks/connectors.py [--items 1000] [--embedded-items 200] [--kinds folder,cmdb,git]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.source_standins import CMDB_TOKEN, CmdbStandin, running_cmdb

from _harness import Bench, start
from ingest_throughput import TimedEmbedder, documents, write_folder
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.client import VeraClient
from vera_client.domain.ports import Embedder
from vera_worker.adapters.queue import build_app, drain
from vera_worker.connectors.dispatch import SourceRuns
from vera_worker.connectors.events import IngestReport
from vera_worker.connectors.folder.run import SourceIngestion
from vera_worker.connectors.runner import ConnectorIngestion

TOKEN_ENV = "BENCH_CMDB_TOKEN"  # noqa: S105 (the name of a variable, not a secret)


def run(
    bench: Bench, group: str, source_id: object, objects: Path, embedder: Embedder | None
) -> tuple[IngestReport, float]:
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        vera.request_ingest(group, source_id)  # type: ignore[arg-type]
    reports: list[IngestReport] = []
    worker_dsn = bench.server.worker_url(bench.database)
    store = LocalObjectStore(objects)
    with closing(Executor.connect(worker_dsn, check=True)) as sql:
        folder = SourceIngestion(sql, objects=store, embedder_for_model=lambda _p: embedder,
                                 on_report=reports.append, allowed_roots=[objects.parent])  # fmt: skip
        connectors = ConnectorIngestion(sql, objects=store, embedder_for_model=lambda _p: embedder,
                                        environ={TOKEN_ENV: CMDB_TOKEN}, allowed_roots=(objects.parent,),
                                        cache_dir=objects.parent / "cache")  # fmt: skip
        ingestion = SourceRuns(sql, folder=folder, connectors=connectors, on_report=reports.append)
        started = time.perf_counter()
        drain(build_app(worker_dsn, objects=store, ingestion=ingestion))
        return reports[0], time.perf_counter() - started


def new_group(bench: Bench, name: str) -> str:
    with bench.app() as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', %s)", (bench.organisation, name)
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
    return str(group)


def line(label: str, report: IngestReport, seconds: float, items: int) -> None:
    print(
        f"| {label} | {items:,} | {seconds:.1f} | {items / seconds:,.1f} | {report.ingested} ingested, "
        f"{report.unchanged} unchanged, {report.untouched} untouched; {report.passages} passages, "
        f"{report.claims} claims, {report.embeddings} embeddings |"
    )


def git_run(
    bench: Bench, folder: Path, objects: Path, *, embedder: Embedder | None, label: str, count: int
) -> None:
    """The folder's files committed to a repository, read by the git kind: a first run, then a
    re-run with no new commit."""
    env = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
           "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.org",
           "PATH": "/usr/bin:/bin", "HOME": str(folder)}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "texts"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, env=env)  # noqa: S603, S607
    group = new_group(bench, f"git {label}")
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        source_id = vera.register_source(group, "git", f"git {label}", 2, config={"repo": str(folder)})
    report, seconds = run(bench, group, source_id, objects, embedder)
    line(f"git, first run, {label}", report, seconds, count)
    if embedder is None:
        report, seconds = run(bench, group, source_id, objects, embedder)
        line("git, nothing changed (no new commit; prune lists the tree)", report, seconds, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000, help="items for the runs without vectors")
    parser.add_argument("--embedded-items", type=int, default=200, help="items for the runs with MiniLM")
    parser.add_argument("--kinds", default="folder,cmdb,git", help="which kinds to run (comma-separated)")
    options = parser.parse_args()
    kinds = set(options.kinds.split(","))
    bench = start("vera_bench_connectors")
    texts = documents(max(options.items, options.embedded_items))
    model = TimedEmbedder(LocalMiniLMEmbedder())
    with tempfile.TemporaryDirectory(prefix="vera-connectors-bench-") as scratch:
        root = Path(scratch)
        objects = root / "objects"
        with bench.admin() as admin:  # as an operator: the organisation's folders may lie here
            admin.execute("select vera.add_source_root(%s, %s)", (bench.organisation, str(root.resolve())))
        print("| run | items | seconds | items/s | what happened |")
        print("|---|---|---|---|---|")
        runs = [(options.items, None, "no vectors"), (options.embedded_items, model, "MiniLM")]
        for asked, embedder, label in [run for run in runs if run[0] > 0]:
            count = min(asked, len(texts))  # the SciFact abstracts are 5,183: no more items than texts
            if count < asked:
                print(f"({label}: {count:,} texts, not {asked:,})")
            folder = root / f"folder-{label}"
            write_folder(folder, texts[:count])
            if "git" in kinds:
                git_run(bench, folder, objects, embedder=embedder, label=label, count=count)
            if "folder" not in kinds:
                continue
            group = new_group(bench, f"folder {label}")
            with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
                source = vera.register_folder(group, f"folder {label}", folder, tier=1)
            report, seconds = run(bench, group, source.source_id, objects, embedder)
            line(f"folder, first run, {label}", report, seconds, count)
            if embedder is None:
                report, seconds = run(bench, group, source.source_id, objects, embedder)
                line("folder, nothing changed", report, seconds, count)
            items = {
                f"ci-{n}": {
                    "id": f"ci-{n}",
                    "name": f"doc-{n}",
                    "team": f"Team {n % 7}",
                    "title": title,
                    "description": text,
                    "updated": f"2026-01-01T00:00:{n % 60:02d}Z",
                }
                for n, (title, text) in enumerate(texts[:count])
            }
            if "cmdb" not in kinds:
                continue
            with running_cmdb(CmdbStandin(items=items)) as cmdb:
                group = new_group(bench, f"cmdb {label}")
                config = {"url": cmdb.url, "fields": {"team": "team"}, "description_field": "description"}
                with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
                    source_id = vera.register_source(group, "cmdb", f"cmdb {label}", 1, token_env=TOKEN_ENV,
                                                     config=config)  # fmt: skip
                report, seconds = run(bench, group, source_id, objects, embedder)
                line(f"cmdb, first run, {label}", report, seconds, count)
                if embedder is None:
                    report, seconds = run(bench, group, source_id, objects, embedder)
                    line("cmdb, nothing changed", report, seconds, count)
        if model.texts:
            rate = model.texts / model.seconds
            print(f"\nembedding: {model.texts} texts in {model.seconds:.1f} s ({rate:.1f} texts/s)")


if __name__ == "__main__":
    main()
