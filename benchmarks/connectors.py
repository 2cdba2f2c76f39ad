"""Connector throughput beside the folder connector, on the same texts, through
the real worker: N configuration items served by the local CMDB stand-in
(tests/source_standins.py, pages of 100), N Jira issues, Confluence pages and
Slack messages served by their stand-ins (tests/saas_standins.py, pages of
100), the same N texts as a folder of Markdown files, and those files committed
to a git repository made here (the git kind, read from a local path). Prints items/s for a
first run without vectors, a first run with the local all-MiniLM-L6-v2, and a
re-run with nothing changed, for each; the connector's own overhead is its
no-vector time over the folder's. Each run's CPU seconds (this process, which
is the worker and, for Jira, Confluence and Slack, their stand-in's thread too,
plus PostgreSQL's) are printed beside its wall seconds: on a machine shared
with other work they move far less with the load.

    .venv/bin/python benchmarks/connectors.py [--items 1000] [--embedded-items 200]
        [--kinds folder,cmdb,git,jira,confluence,slack]
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.saas_standins import (
    CONFLUENCE_TOKEN,
    JIRA_EMAIL,
    JIRA_TOKEN,
    SLACK_TOKEN,
    ConfluenceStandin,
    JiraStandin,
    SlackStandin,
    jira_time,
)
from tests.source_standins import CMDB_TOKEN, CmdbStandin, running_cmdb, serving

from _harness import Bench, start
from ingest_throughput import TimedEmbedder, documents, process_cpu, server_cpu, write_folder
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.client import VeraClient
from vera_client.domain.ports import Embedder
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import drain
from vera_worker.connectors.dispatch import SourceRuns
from vera_worker.connectors.events import IngestReport
from vera_worker.connectors.runner import ConnectorIngestion
from vera_worker.domain.jobs import JobName

TOKEN_ENV = "BENCH_CMDB_TOKEN"  # noqa: S105 (the name of a variable, not a secret)
# the names of variables, not secrets
SAAS_ENV = {"jira": "BENCH_JIRA_TOKEN", "confluence": "BENCH_CONFLUENCE_TOKEN", "slack": "BENCH_SLACK_TOKEN"}
ENVIRON = {TOKEN_ENV: CMDB_TOKEN, SAAS_ENV["jira"]: JIRA_TOKEN, SAAS_ENV["confluence"]: CONFLUENCE_TOKEN,
           SAAS_ENV["slack"]: SLACK_TOKEN}  # fmt: skip
KINDS = ("folder", "cmdb", "git", "jira", "confluence", "slack")
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Timed:
    """A run's report, its wall seconds, and the CPU seconds it took of this process (the worker;
    for a SaaS kind its stand-in server's thread too) and of PostgreSQL: on a shared machine the
    CPU seconds move far less with the load than the wall seconds."""

    report: IngestReport
    seconds: float
    cpu: float


def run(bench: Bench, group: str, source_id: object, objects: Path, embedder: Embedder | None) -> Timed:
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        vera.request_ingest(group, source_id)  # type: ignore[arg-type]
    reports: list[IngestReport] = []
    worker_dsn = bench.server.worker_url(bench.database)
    store = LocalObjectStore(objects)
    with closing(Executor.connect(worker_dsn, check=True)) as sql:
        connectors = ConnectorIngestion(sql, objects=store, embedder_for_model=lambda _p: embedder,
                                        environ=ENVIRON, allowed_roots=(objects.parent,),
                                        cache_dir=objects.parent / "cache")  # fmt: skip
        ingestion = SourceRuns(sql, connectors=connectors, on_report=reports.append)
        started, cpu = time.perf_counter(), process_cpu() + server_cpu(bench)
        # the ingest job alone: the facts it publishes queue embed and graph jobs that a run
        # without an embedder or a graph would only fail and retry (not the connector's time)
        drain(build_app(worker_dsn, objects=store, ingestion=ingestion), queues=[JobName.INGEST_SOURCE.queue])
        seconds = time.perf_counter() - started
        return Timed(reports[0], seconds, process_cpu() + server_cpu(bench) - cpu)


def new_group(bench: Bench, name: str) -> str:
    with bench.app() as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', %s)", (bench.organisation, name)
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
    return str(group)


def line(label: str, timed: Timed, items: int) -> None:
    report, seconds = timed.report, timed.seconds
    print(
        f"| {label} | {items:,} | {seconds:.1f} | {timed.cpu:.1f} | {items / seconds:,.1f} | "
        f"{report.ingested} ingested, "
        f"{report.unchanged} unchanged, {report.untouched} untouched; {report.passages} passages, "
        f"{report.claims} claims, {report.embeddings} embeddings |"
    )


def saas_runs(
    bench: Bench,
    kind: str,
    texts: list[tuple[str, str]],
    *,
    label: str,
    objects: Path,
    embedder: Embedder | None,
) -> None:
    """A first run of kind over the texts from its stand-in and, without vectors, a no-change re-run."""
    count = len(texts)
    standin: JiraStandin | ConfluenceStandin | SlackStandin
    if kind == "jira":
        standin = JiraStandin(issues={
            f"DOC-{n}": {"id": str(n), "key": f"DOC-{n}", "fields": {
                "summary": title, "status": {"name": "Open"}, "priority": {"name": "Medium"},
                "components": [{"name": f"Team {n % 7}"}], "created": jira_time(T0),
                "updated": jira_time(T0 + dt.timedelta(minutes=n)),
                "description": {"type": "doc", "version": 1, "content": [
                    {"type": "paragraph", "content": [{"type": "text", "text": text}]}]}}}
            for n, (title, text) in enumerate(texts, start=1)})  # fmt: skip
        config: dict[str, object] = {"project": "DOC", "email": JIRA_EMAIL, "page_size": 100}
        prefix = ""
    elif kind == "confluence":
        standin = ConfluenceStandin(pages={
            str(n): {"id": str(n), "title": f"{title} ({n})", "parentId": None,
                     "version": {"number": 1, "createdAt": (T0 + dt.timedelta(minutes=n)).isoformat(),
                                 "authorId": f"acct-{n % 7}"},
                     "body": {"storage": {"value": f"<h1>{title}</h1><p>{text}</p>"}},
                     "_links": {"webui": f"/spaces/DOC/pages/{n}"}, "labels": [f"team-{n % 7}"]}
            for n, (title, text) in enumerate(texts, start=1)})  # fmt: skip
        config = {"space_id": standin.space_id, "email": JIRA_EMAIL, "page_size": 100}
        prefix = ""
    else:
        standin = SlackStandin(channels={"C0BENCH": [
            {"type": "message", "user": f"U{n % 7}", "text": f"{title}: {text}",
             "ts": f"{1767225600 + n}.000100"}
            for n, (title, text) in enumerate(texts, start=1)]})  # fmt: skip
        config = {"channel": "C0BENCH", "page_size": 100}
        prefix = "/api"
    with serving(standin, prefix):
        group = new_group(bench, f"{kind} {label}")
        with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
            source_id = vera.register_source(group, kind, f"{kind} {label}", 2, token_env=SAAS_ENV[kind],
                                             config={"url": standin.url, **config})  # fmt: skip
        timed = run(bench, group, source_id, objects, embedder)
        line(f"{kind}, first run, {label}", timed, count)
        if embedder is None:
            timed = run(bench, group, source_id, objects, embedder)
            line(f"{kind}, nothing changed", timed, count)


def folder_run(
    bench: Bench, folder: Path, objects: Path, *, embedder: Embedder | None, label: str, count: int
) -> None:
    """The folder connector over the texts' files: a first run, then a re-run with nothing changed."""
    group = new_group(bench, f"folder {label}")
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        source = vera.register_folder(group, f"folder {label}", folder, tier=1)
    timed = run(bench, group, source.source_id, objects, embedder)
    line(f"folder, first run, {label}", timed, count)
    if embedder is None:
        timed = run(bench, group, source.source_id, objects, embedder)
        line("folder, nothing changed", timed, count)


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
    timed = run(bench, group, source_id, objects, embedder)
    line(f"git, first run, {label}", timed, count)
    if embedder is None:
        timed = run(bench, group, source_id, objects, embedder)
        line("git, nothing changed (no new commit; prune lists the tree)", timed, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000, help="items for the runs without vectors")
    parser.add_argument("--embedded-items", type=int, default=200, help="items for the runs with MiniLM")
    parser.add_argument("--kinds", default=",".join(KINDS), help="which kinds to run (comma-separated)")
    options = parser.parse_args()
    kinds = [k.strip() for k in options.kinds.split(",") if k.strip()]
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"unknown kinds: {sorted(unknown)} (known: {', '.join(KINDS)})")
    bench = start("vera_bench_connectors")
    texts = documents(max(options.items, options.embedded_items))
    wanted = max(options.items, options.embedded_items)
    if texts and len(texts) < wanted:  # SciFact has 5,183 abstracts: the rest are numbered repeats
        texts += [(f"{title} ({n})", f"{text} ({n})") for n, (title, text) in
                  zip(range(len(texts), wanted), itertools.cycle(texts), strict=False)]  # fmt: skip
    model = TimedEmbedder(LocalMiniLMEmbedder())
    with tempfile.TemporaryDirectory(prefix="vera-connectors-bench-") as scratch:
        root = Path(scratch)
        objects = root / "objects"
        with bench.admin() as admin:  # as an operator: the organisation's folders may lie here
            admin.execute("select vera.add_source_root(%s, %s)", (bench.organisation, str(root.resolve())))
        print("| run | items | seconds | CPU s | items/s | what happened |")
        print("|---|---|---|---|---|---|")
        runs = [(options.items, None, "no vectors"), (options.embedded_items, model, "MiniLM")]
        for count, embedder, label in [run for run in runs if run[0] > 0]:
            if "folder" in kinds:
                folder = root / f"folder-{label}"
                write_folder(folder, texts[:count])
                folder_run(bench, folder, objects, embedder=embedder, label=label, count=count)
            if "git" in kinds:
                repository = root / f"git-{label}"
                write_folder(repository, texts[:count])
                git_run(bench, repository, objects, embedder=embedder, label=label, count=count)
            for kind in (k for k in ("jira", "confluence", "slack") if k in kinds):
                saas_runs(bench, kind, texts[:count], label=label, objects=objects, embedder=embedder)
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
                timed = run(bench, group, source_id, objects, embedder)
                line(f"cmdb, first run, {label}", timed, count)
                if embedder is None:
                    timed = run(bench, group, source_id, objects, embedder)
                    line("cmdb, nothing changed", timed, count)
        if model.texts:
            rate = model.texts / model.seconds
            print(f"\nembedding: {model.texts} texts in {model.seconds:.1f} s ({rate:.1f} texts/s)")


if __name__ == "__main__":
    main()
