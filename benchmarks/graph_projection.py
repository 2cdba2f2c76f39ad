"""The graph projection's figures (issue 14), both backends side by side in one run:

- projection throughput: a real Procrastinate worker drains the project_to_graph jobs
  that publishing N facts deferred (one job per episode), into each backend (edges/s);
- `vera graph check` (counts + edge digest, both sides) and `vera graph rebuild` times;
- explore at depth 2 and 3 through the graph (VeraClient.explore_graph: start in SQL,
  walk in Cypher, rows and rights in SQL) p50/p95, beside SQL's own vera.explore, and how
  many sampled answers the two agree on;
- Graphiti's own hybrid search (search_ with EDGE_HYBRID_SEARCH_RRF, the query vector
  passed in, as ../shared/BASELINES.md measured it) on the same graph, and vera.search
  on the same facts.

The facts: N claims `<entity> <predicate> <entity>` among E entities (entity objects, so
the graph is one connected web), with 384-dim vectors from VERA's deterministic embedder
(offline; texts that share words get close vectors), published in episodes of
--per-episode claims into one group. They are published once into a template database;
each backend gets a copy of it with the same queue of jobs, so both drain the same work.
The graph servers are the tests' (an embedded FalkorDB from its wheel, Neo4j 5.26 through
java/neo4j-launcher), in a temporary folder, stopped at the end.

    .venv/bin/python benchmarks/graph_projection.py [--facts 100000] [--per-episode 1000] \\
        [--entities 25000] [--queries 100] [--searches 20] [--backends falkordb,neo4j] [--reuse] \\
        [--drain-only] [--warm-up FACTS]

--drain-only measures the drain and its check alone (for iterating at 10,000-20,000 facts).
Beside the wall time each run reports the worker's, the graph server's and PostgreSQL's CPU
per 1,000 edges and the load average, since the machine is shared; docs/graph.md has the
runs side by side and what changed between them. The graph server's CPU is also split by
thread: on a freshly started Neo4j about half of it is the JVM's JIT compiling Neo4j's own
code, once per server start. --warm-up FACTS projects that many facts into throwaway groups
first (untimed, then dropped), so that the drain runs on a warm server, as a deployment's
that has run for a while would.

With the read-ahead pipeline (graph/ahead.py) and Neo4j's eventually consistent full-text
indexes, before one-transaction pages, on 2026-12-02 05:20-05:55 (defaults but --queries 60
--searches 10, as below; 34 min; load average 4-12, 6-8 during FalkorDB's drain, 4-6 during
Neo4j's):

                                          FalkorDB             Neo4j
    worker drain, 100,000 edges           111 s, 900 edges/s   205 s, 489 edges/s
      worker / server / PostgreSQL CPU    198 / 215 / 158 ms   234 / 1,568 / 154 ms
        per 1,000 edges
    check (counts + digest)               15.2 s               42.0 s
    rebuild (of it the drop)              61 s (0.0 s)         168 s (51.6 s)
      rebuild's upsert                    1,640 edges/s        858 edges/s
    explore depth 2, graph p50/p95        29 / 54 ms           57 / 165 ms
      SQL vera.explore depth 2            496 / 743 ms         654 / 872 ms
    explore depth 3, graph p50/p95        149 / 335 ms         214 / 419 ms
      SQL vera.explore depth 3            2,266 / 3,198 ms     2,316 / 3,848 ms
    answers equal (graph = SQL)           60/60 at both depths on both
    Graphiti hybrid search p50/p95        3,322 / 4,017 ms     8,127 / 20,015 ms
    vera.search k=10 (same facts)         59 / 110 ms

With the final code (a page's nodes and edges one transaction on Neo4j), --drain-only --reuse
on the same 100,000 facts, 2026-12-02 06:04-06:08 (4 min; load average 2.6-3.0 during
FalkorDB's drain, 3.4-5.0 during Neo4j's: a quieter machine than the runs below):

                                          FalkorDB             Neo4j
    worker drain, 100,000 edges           38.6 s, 2,594 edges/s  105.3 s, 950 edges/s
      worker / server / PostgreSQL CPU    154 / 174 / 124 ms   199 / 918 / 138 ms
        per 1,000 edges
    check (counts + digest)               8.0 s                30.5 s

The second round (a job's connection kept for the next; the server's CPU split by thread),
--drain-only on the same 100,000 facts, 2026-12-02 08:04-08:10 (load average 2.6-4.2, another
session's CI on the machine); the warm column with --reuse --backends neo4j --warm-up 60000:

                                          FalkorDB        Neo4j, fresh     Neo4j, warm
    worker drain, 100,000 edges           28.8 s          82.7 s           62.5 s
                                          3,471 edges/s   1,209 edges/s    1,600 edges/s
      worker / server / PostgreSQL CPU    139 / 151 / 97  186 / 852 / 113  158 / 446 / 95 ms
        per 1,000 edges
      of the server's, the JIT compiler   -               425 ms           158 ms
    check (counts + digest)               8.7 s           31.2 s           34.4 s

After vectors left SQL spelled (graph/vectors.py) and Neo4j's instants as text, on 2026-12-02
(defaults but --queries 60 --searches 10; 41 min; load average 7-12):

                                          FalkorDB             Neo4j
    worker drain, 100,000 edges           134 s, 746 edges/s   137 s, 730 edges/s
      worker / server CPU per 1,000 edges 212 / 222 ms         208 / 922 ms
    check (counts + digest)               25.2 s               79.5 s
    rebuild                               84 s, 1,185 edges/s  290 s, 345 edges/s
    explore depth 2, graph p50/p95        81 / 136 ms          148 / 245 ms
      SQL vera.explore depth 2            1,048 / 1,576 ms     1,637 / 2,052 ms
    explore depth 3, graph p50/p95        319 / 433 ms         324 / 512 ms
      SQL vera.explore depth 3            3,918 / 5,806 ms     3,855 / 5,434 ms
    answers equal (graph = SQL)           60/60 at both depths on both
    Graphiti hybrid search p50/p95        2,246 / 2,724 ms     10,623 / 15,787 ms
    vera.search k=10 (same facts)         81 / 105 ms

Before, a run on 2026-12-02 (defaults but --queries 60 --searches 10; 37 min in all, most of it
the HNSW build and SQL explore; the machine's load average was 4-10 from other runs):

                                          FalkorDB             Neo4j
    worker drain, 100,000 edges           175 s, 572 edges/s   249 s, 401 edges/s
    check (counts + digest)               11.3 s               68.7 s
    rebuild                               115 s, 870 edges/s   147 s, 682 edges/s
    explore depth 2, graph p50/p95        76 / 134 ms          73 / 182 ms
      SQL vera.explore depth 2            1,185 / 1,558 ms     748 / 1,060 ms
    explore depth 3, graph p50/p95        256 / 370 ms         180 / 317 ms
      SQL vera.explore depth 3            3,292 / 4,602 ms     2,044 / 3,412 ms
    answers equal (graph = SQL)           60/60 at both depths on both
    Graphiti hybrid search p50/p95        4,701 / 6,664 ms     6,924 / 13,081 ms
    vera.search k=10 (same facts)         32 / 146 ms
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.postgres.provisioning import build_missing_vector_indexes
from vera_client.api import jobs as jobs_api
from vera_client.client import VeraClient
from vera_client.domain.callers import Operator
from vera_client.domain.ports import GraphStore
from vera_worker.adapters.queue import build_app
from vera_worker.graph.graphiti_model import graph_group_id
from vera_worker.graph.graphiti_search import open_graphiti
from vera_worker.graph.projection import JOB_PAGE, GraphProjection, graph_piece
from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB
from vera_worker.graph.servers.local import LocalServer
from vera_worker.graph.servers.neo4j import Neo4jLauncher
from vera_worker.graph.stores import open_graph_store

TEMPLATE = "vera_bench_graph"
DIM = 384
PREDICATES = ["depends on", "calls", "reads from", "writes to", "deployed with", "monitored by"]
WORDS = [
    "billing", "payments", "search", "gateway", "ledger", "identity", "catalog", "pricing", "checkout",
    "invoice", "shipping", "inventory", "fraud", "risk", "ranking", "feed", "profile", "session",
    "notify", "email", "audit", "report", "export", "scheduler", "router", "cache", "storage", "backup",
]  # fmt: skip
KINDS = ["api", "db", "queue", "worker", "web", "job", "cache", "stream"]


def entity_name(index: int) -> str:
    """Distinct, readable names: billing-ledger-api-17."""
    first = WORDS[index % len(WORDS)]
    second = WORDS[(index // len(WORDS)) % len(WORDS)]
    kind = KINDS[(index // len(WORDS) ** 2) % len(KINDS)]
    return f"{first}-{second}-{kind}-{index // (len(WORDS) ** 2 * len(KINDS))}"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(samples: list[float]) -> str:
    if not samples:
        return "-"
    return f"{percentile(samples, 0.5) * 1000:,.1f} / {percentile(samples, 0.95) * 1000:,.1f}"


def timed(samples: list[float], call: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = call()
    samples.append(time.perf_counter() - started)
    return result


# -- the facts -----------------------------------------------------------------------------------


def load(bench: Bench, *, facts: int, per_episode: int, entities: int, rng: random.Random) -> float:
    """`facts` published facts and their project_to_graph jobs (one per episode of `per_episode`
    facts, args as publishing defers them: the group, the publishing principal, the fact ids);
    seconds taken.

    The rows go straight into the tables, as benchmarks/search_latency.py loads its corpus:
    through vera.publish_claims this machine published 59 claims/s while loaded (its own
    figures are benchmarks/write_throughput.py's), which would spend the run on seeding.
    The episodes and the source are made through the API."""
    started = time.perf_counter()
    group = bench.organisation
    embedder = DeterministicEmbedder(DIM)
    names = [entity_name(index) for index in range(entities)]
    with bench.app() as conn:
        source = conn.execute(
            "select vera.register_source(%s, 'cmdb', 'graph-bench-cmdb', 1)", (group,)
        ).fetchone()[0]  # type: ignore[index]
        episodes = [
            conn.execute(
                "select episode_id from vera.record_episode(%s, %s, %s, sha256(%s::bytea))",
                (group, source, f"export-{first}", f"export-{first}".encode()),
            ).fetchone()[0]  # type: ignore[index]
            for first in range(0, facts, per_episode)
        ]
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
        conn.commit()
    with bench.admin() as admin:
        admin.execute(
            "update vera.groups set embedding_model = %s, embedding_dim = %s where group_id = %s",
            (embedder.model, DIM, group),
        )
        admin.execute(
            "insert into vera.predicates (group_id, name, cardinality) "
            "select %s, p, 'multi' from unnest(%s::text[]) p on conflict do nothing",
            (group, [predicate.upper().replace(" ", "_") for predicate in PREDICATES]),
        )
        admin.execute(
            "create temporary table bench_entities (position int primary key, entity_id uuid, name text)"
        )
        with admin.cursor().copy("copy bench_entities (position, name) from stdin") as copy:
            for position, name in enumerate(names):
                copy.write_row((position, name))
        admin.execute("update bench_entities set entity_id = gen_random_uuid()")
        admin.execute(
            "insert into vera.entities (group_id, entity_id, canonical_name) "
            "select %s, entity_id, name from bench_entities",
            (group,),
        )
        admin.execute(
            "insert into vera.entity_aliases (group_id, entity_id, alias, alias_norm) "
            "select %s, entity_id, name, vera.normalize_name(name) from bench_entities",
            (group,),
        )
        admin.execute(
            "create temporary table bench_facts (subject int, predicate text, object int, "
            "fact_text text, embedding vector, episode int)"
        )
        with admin.cursor().copy("copy bench_facts from stdin") as copy:
            for first in range(0, facts, per_episode):
                rows = []
                for _ in range(min(per_episode, facts - first)):
                    subject, target = rng.sample(range(entities), 2)
                    predicate = rng.choice(PREDICATES)
                    rows.append((subject, predicate, target, f"{names[subject]} {predicate} {names[target]}"))
                vectors = embedder.embed([row[3] for row in rows])
                for (subject, predicate, target, text), vector in zip(rows, vectors, strict=True):
                    embedding = "[" + ",".join(f"{x:.6f}" for x in vector) + "]"
                    copy.write_row(
                        (
                            subject,
                            predicate.upper().replace(" ", "_"),
                            target,
                            text,
                            embedding,
                            first // per_episode,
                        )
                    )
        admin.execute(
            "insert into vera.facts (group_id, subject_entity_id, predicate, object_entity_id, object_value, "
            "fact_text, embedding, tier, authority, verification, confidence, lifecycle, source_id, "
            "episode_id, proposed_by) "
            "select %s, s.entity_id, f.predicate, o.entity_id, o.name, f.fact_text, f.embedding, 1, 1.0, "
            "'auto', 0.9, 'published', %s, (%s::uuid[])[f.episode + 1], %s "
            "from bench_facts f join bench_entities s on s.position = f.subject "
            "join bench_entities o on o.position = f.object",
            (group, source, episodes, principal),
        )
        # the jobs publishing would have deferred in the same transactions
        admin.execute(
            "select vera.enqueue_job('vera.project_to_graph', jsonb_build_object("
            "'group_id', %s::text, 'principal_id', %s::uuid, 'fact_ids', jsonb_agg(fact_id))) "
            "from vera.facts where group_id = %s group by episode_id",
            (group, principal, group),
        )
    return time.perf_counter() - started


def copy_database(bench: Bench, name: str) -> None:
    """A copy of the seeded template, with its queue of jobs not yet run."""
    with bench.admin() as admin:
        admin.execute(f'drop database if exists "{name}" with (force)')
        # a template must have no other connection while it is copied
        admin.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity "
            "where datname = %s and pid <> pg_backend_pid()",
            (TEMPLATE,),
        )
        admin.execute(f'create database "{name}" template "{TEMPLATE}"')


# -- the graph servers -----------------------------------------------------------------------------


@contextmanager
def graph_servers(backends: list[str]) -> Iterator[dict[str, tuple[Future[str], LocalServer]]]:
    """Each backend's server, started in the background (Neo4j takes tens of seconds) under a
    temporary folder; each one's URL as a future, beside the server. Stopped and removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="vera-bench-graph-"))
    servers: dict[str, LocalServer] = {}
    if "falkordb" in backends:
        servers["falkordb"] = EmbeddedFalkorDB(folder / "falkordb")
    if "neo4j" in backends:
        # room for 100,000 edges with their vectors and the walks over them
        servers["neo4j"] = Neo4jLauncher(folder / "neo4j", heap="2g", page_cache="1g")
    pool = ThreadPoolExecutor(max_workers=len(servers) or 1)
    started_at = time.perf_counter()

    def start_timed(server: LocalServer) -> str:
        url = server.start()
        print(f"  {server.name} ready in {time.perf_counter() - started_at:.1f}s at {url}", flush=True)
        return url

    try:
        yield {name: (pool.submit(start_timed, server), server) for name, server in servers.items()}
    finally:
        pool.shutdown(wait=True)
        for server in servers.values():
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


# -- one backend -----------------------------------------------------------------------------------


def server_cpu_seconds(server: LocalServer) -> float:
    """CPU time the graph server's process (and its children) has used so far: beside the wall
    time, what the drain cost on a machine others share."""
    record = server.files.read()
    if record is None:
        return 0.0
    process = psutil.Process(record.pid)
    total = 0.0
    for each in (process, *process.children(recursive=True)):
        times = each.cpu_times()
        total += times.user + times.system
    return total


def server_thread_cpu_seconds(server: LocalServer) -> dict[str, float]:
    """CPU time so far of each of the graph server's threads, by kind (Linux: /proc/PID/task;
    empty elsewhere). For Neo4j "jit" is the JVM's compiler threads, which compile Neo4j's
    own code while a freshly started server warms up: a cost per server start, not per edge."""
    record = server.files.read()
    tasks = Path(f"/proc/{record.pid}/task") if record is not None else None
    if tasks is None or not tasks.is_dir():
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    kinds: dict[str, float] = {}
    for task in tasks.iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        kind = "jit" if "CompilerThre" in name else "other"
        kinds[kind] = kinds.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return kinds


def postgres_cpu_seconds(bench: Bench) -> float:
    """CPU time PostgreSQL has used so far: the postmaster, the backends it has reaped (a job's
    connection ends with it) and those still running."""
    pid = bench.server.status().pid
    if not pid:
        return 0.0
    postmaster = psutil.Process(pid)
    times = postmaster.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in postmaster.children(recursive=True):
        try:
            each = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += each.user + each.system
    return total


@dataclass
class Figures:
    backend: str
    edges: int = 0
    project_seconds: float = 0.0
    worker_cpu_seconds: float = 0.0
    server_cpu_seconds: float = 0.0
    server_jit_cpu_seconds: float = 0.0
    postgres_cpu_seconds: float = 0.0
    load_average: float = 0.0
    check_seconds: float = 0.0
    rebuild_seconds: float = 0.0
    rebuild_drop_seconds: float = 0.0
    rebuilt_check_seconds: float = 0.0
    drift: str | None = None
    explore: dict[int, list[float]] = field(default_factory=dict)
    sql_explore: dict[int, list[float]] = field(default_factory=dict)
    agree: dict[int, int] = field(default_factory=dict)
    reached: dict[int, list[int]] = field(default_factory=dict)
    graphiti: list[float] = field(default_factory=list)
    graphiti_hits: list[int] = field(default_factory=list)


def measured_drain(
    figures: Figures,
    bench: Bench,
    server: LocalServer,
    projection: GraphProjection,
    *,
    dsn: str,
    objects: Path,
) -> None:
    """Drain the queue; its wall time, and the CPU the worker, the graph server (and of it its
    JIT compiler) and PostgreSQL spent on it."""
    server_cpu, postgres_cpu = server_cpu_seconds(server), postgres_cpu_seconds(bench)
    server_jit = server_thread_cpu_seconds(server).get("jit", 0.0)
    started, worker_cpu = time.perf_counter(), time.process_time()
    drain_projection(dsn, projection, objects)
    figures.project_seconds = time.perf_counter() - started
    figures.worker_cpu_seconds = time.process_time() - worker_cpu
    figures.server_cpu_seconds = server_cpu_seconds(server) - server_cpu
    figures.server_jit_cpu_seconds = server_thread_cpu_seconds(server).get("jit", 0.0) - server_jit
    figures.postgres_cpu_seconds = postgres_cpu_seconds(bench) - postgres_cpu


def warm_up_server(store: GraphStore, sql: Executor, group: str, facts: int) -> None:
    """Project `facts` of the group's facts, in job-sized pages, into throwaway groups (one per
    pass over the facts, so that every edge is a new one, as in the drain), dropping each after:
    a freshly started JVM spends its first minutes compiling Neo4j's own code (tens of seconds of
    CPU, see server_thread_cpu_seconds), which a server that has been running for a while has
    done already. Untimed; the measured drain starts on an empty group."""
    started = time.perf_counter()
    written = 0
    for attempt in itertools.count():
        throwaway, after, before = f"{group}-warm-up-{attempt}", None, written
        while written < facts:
            rows = sql.run(
                Operator(), jobs_api.graph_group_facts(group, after, min(JOB_PAGE, facts - written))
            )
            if not rows:
                break
            after = rows[-1].fact_id
            nodes, edges = graph_piece([replace(row, group_id=throwaway) for row in rows])
            written += store.upsert(throwaway, nodes, edges)
        store.drop_group(throwaway)
        if written >= facts or written == before:
            break
    print(f"  warmed up with {written:,} edges in {time.perf_counter() - started:.1f}s (dropped)", flush=True)


def drain_projection(dsn: str, projection: GraphProjection, objects: Path) -> None:
    """A real Procrastinate worker runs every due project_to_graph job, then returns."""
    app = build_app(dsn, objects=LocalObjectStore(objects), projection=projection, graph_check_cron=None)

    async def work() -> None:
        async with app.open_async():
            await app.run_worker_async(
                queues=["project_to_graph"], wait=False, install_signal_handlers=False, listen_notify=False
            )

    asyncio.run(work())


def graphiti_search(
    backend: str, url: str, group: str, queries: list[tuple[str, list[float]]]
) -> tuple[list[float], list[int]]:
    """Graphiti's own hybrid search (BM25 + cosine over edges, RRF) on the projected graph."""
    from graphiti_core.search.search_config_recipes import EDGE_HYBRID_SEARCH_RRF  # noqa: PLC0415
    from graphiti_core.search.search_filters import SearchFilters  # noqa: PLC0415

    graph_group = graph_group_id(group)

    async def run() -> tuple[list[float], list[int]]:
        # VERA's embedder; its LLM and cross-encoder slots refuse calls (RRF search makes none)
        graphiti = open_graphiti(backend, url, DeterministicEmbedder(DIM))
        config = EDGE_HYBRID_SEARCH_RRF.model_copy(update={"limit": 10})
        samples: list[float] = []
        hits: list[int] = []
        try:
            for index, (text, vector) in enumerate(queries):
                started = time.perf_counter()
                results = await graphiti.search_(
                    text, config=config, group_ids=[graph_group], search_filter=SearchFilters(),
                    query_vector=vector,
                )  # fmt: skip
                if index > 0:  # the first one pays for connections and index checks
                    samples.append(time.perf_counter() - started)
                    hits.append(len(results.edges))
        finally:
            # Graphiti's FalkorDB driver builds its indexes in tasks of its own (one per graph it
            # is cloned for): let them finish before the connection closes under them
            pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            await asyncio.gather(*pending, return_exceptions=True)
            await graphiti.close()
        return samples, hits

    return asyncio.run(run())


def measure_backend(
    bench: Bench,
    backend: str,
    url: str,
    *,
    server: LocalServer,
    group: str,
    names: list[str],
    searches: list[tuple[str, list[float]]],
    workdir: Path,
    drain_only: bool = False,
    warm_up: int = 0,
) -> Figures:
    figures = Figures(backend)
    database = f"{TEMPLATE}_{backend}"
    copy_database(bench, database)
    worker_dsn = bench.server.worker_url(database)
    store: GraphStore = open_graph_store(backend, url)
    # the worker's pool, as `vera worker` builds it (Database.worker_executor)
    projection = GraphProjection(Executor.connect(worker_dsn, check=True), store)
    try:
        store.drop_group(group)
        if warm_up:
            warm_up_server(store, projection.sql, group, warm_up)
        print(f"[{backend}] draining the project_to_graph queue ...", flush=True)
        measured_drain(
            figures, bench, server, projection, dsn=worker_dsn, objects=workdir / f"objects-{backend}"
        )
        figures.load_average = os.getloadavg()[0]
        check = projection.check(group, record=False)
        figures.check_seconds, figures.edges, figures.drift = (
            check.seconds, check.result.graph_edges, check.result.drift,
        )  # fmt: skip
        print(f"[{backend}] {figures.edges:,} edges in {figures.project_seconds:.1f}s; "
              f"check {figures.check_seconds:.2f}s: {figures.drift or 'in step'}", flush=True)  # fmt: skip
        if drain_only:
            return figures
        rebuilt = projection.rebuild(group)
        figures.rebuild_seconds = rebuilt.seconds
        figures.rebuild_drop_seconds = rebuilt.drop_seconds
        again = projection.check(group, record=False)
        figures.rebuilt_check_seconds = again.seconds
        if again.result.drift is not None:
            figures.drift = f"after rebuild: {again.result.drift}"
        print(f"[{backend}] rebuild {rebuilt.edges:,} edges in {rebuilt.seconds:.1f}s "
              f"({rebuilt.drop_seconds:.1f}s of it dropping the old graph); "
              f"check {again.seconds:.2f}s: {again.result.drift or 'in step'}", flush=True)  # fmt: skip
        with VeraClient(bench.server.app_url(database), bench.api_key) as vera:
            vera.explore_graph(store, names[0], depth=1)  # connections, plans
            for depth in (2, 3):
                graph_times: list[float] = []
                sql_times: list[float] = []
                agree = 0
                reached: list[int] = []
                for name in names:
                    walked = timed(graph_times, lambda n=name, d=depth: vera.explore_graph(store, n, depth=d))
                    answered = timed(sql_times, lambda n=name, d=depth: vera.explore(n, depth=d))
                    agree += walked == answered
                    reached.append(len(walked))
                figures.explore[depth], figures.sql_explore[depth] = graph_times, sql_times
                figures.agree[depth], figures.reached[depth] = agree, reached
                print(f"[{backend}] explore depth {depth}: graph {ms(graph_times)} ms, "
                      f"SQL {ms(sql_times)} ms, {agree}/{len(names)} answers equal", flush=True)  # fmt: skip
    finally:
        projection.sql.close()
        store.close()
    print(f"[{backend}] Graphiti hybrid search x{len(searches)} ...", flush=True)
    figures.graphiti, figures.graphiti_hits = graphiti_search(backend, url, group, searches)
    print(f"[{backend}] Graphiti hybrid search {ms(figures.graphiti)} ms", flush=True)
    return figures


def vera_search(bench: Bench, searches: list[tuple[str, list[float]]]) -> list[float]:
    samples: list[float] = []
    with bench.app() as conn:
        for index, (text, vector) in enumerate(searches):
            started = time.perf_counter()
            conn.execute(
                "select count(*) from vera.search(%s, %s::vector, 10)", (text, str(vector))
            ).fetchone()
            if index > 0:
                samples.append(time.perf_counter() - started)
        conn.rollback()
    return samples


def report(args: argparse.Namespace, results: list[Figures], search: list[float]) -> None:
    print()
    print(f"{args.facts:,} facts among {args.entities:,} entities, episodes of {args.per_episode:,} "
          f"(one project_to_graph job each); explore over {args.queries} entities, "
          f"searches x{args.searches}")  # fmt: skip
    header = f"{'':<44}" + "".join(f"{figures.backend:>22}" for figures in results)
    print(header)
    rows: list[tuple[str, Callable[[Figures], str]]] = [
        ("edges projected", lambda f: f"{f.edges:,}"),
        ("worker drain, edges/s", lambda f: f"{f.edges / f.project_seconds:,.0f}"),
        ("worker drain, s", lambda f: f"{f.project_seconds:.1f}"),
        ("  worker CPU, ms per 1,000 edges", lambda f: f"{f.worker_cpu_seconds / f.edges * 1e6:,.0f}"),
        ("  graph server CPU, ms per 1,000 edges", lambda f: f"{f.server_cpu_seconds / f.edges * 1e6:,.0f}"),
        (
            "    of it the JIT compiler's threads",
            lambda f: f"{f.server_jit_cpu_seconds / f.edges * 1e6:,.0f}",
        ),
        ("  PostgreSQL CPU, ms per 1,000 edges", lambda f: f"{f.postgres_cpu_seconds / f.edges * 1e6:,.0f}"),
        ("  load average (1 min) after the drain", lambda f: f"{f.load_average:.1f}"),
        ("check, s", lambda f: f"{f.check_seconds:.2f}"),
        ("drift", lambda f: f.drift or "none"),
    ]
    if args.drain_only:
        for label, cell in rows:
            print(f"{label:<44}" + "".join(f"{cell(figures):>22}" for figures in results))
        return
    rows += [
        ("rebuild, s", lambda f: f"{f.rebuild_seconds:.1f}"),
        ("  of it dropping the old graph, s", lambda f: f"{f.rebuild_drop_seconds:.1f}"),
        (
            "rebuild's upsert, edges/s",
            lambda f: f"{f.edges / (f.rebuild_seconds - f.rebuild_drop_seconds):,.0f}",
        ),
        ("check after rebuild, s", lambda f: f"{f.rebuilt_check_seconds:.2f}"),
    ]
    for depth in (2, 3):
        rows += [
            (f"explore depth {depth} on the graph p50/p95 ms", lambda f, d=depth: ms(f.explore[d])),
            (f"  SQL vera.explore depth {depth} p50/p95 ms", lambda f, d=depth: ms(f.sql_explore[d])),
            ("  answers equal (graph = SQL)", lambda f, d=depth: f"{f.agree[d]}/{len(f.explore[d])}"),
            ("  facts per answer (median)", lambda f, d=depth: f"{statistics.median(f.reached[d]):.0f}"),
        ]
    rows.append(("Graphiti hybrid search p50/p95 ms", lambda f: ms(f.graphiti)))
    rows.append(
        ("  edges per search (median of 10 asked)", lambda f: f"{statistics.median(f.graphiti_hits):.0f}")
    )
    for label, cell in rows:
        print(f"{label:<44}" + "".join(f"{cell(figures):>22}" for figures in results))
    print(f"{'vera.search (k=10, same facts) p50/p95 ms':<44}{ms(search):>22}")


def main() -> None:
    # the Neo4j driver logs a warning for every query that names a property no edge has yet
    # (Graphiti's reference_time, an open invalid_at): noise in a benchmark's output
    logging.getLogger("neo4j").setLevel(logging.ERROR)
    # a SIGTERM ends the run through the finally blocks, so the graph servers are stopped too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--per-episode", type=int, default=1000, help="claims per episode (= per job)")
    parser.add_argument("--entities", type=int, default=25_000)
    parser.add_argument("--queries", type=int, default=100, help="entities explored at each depth")
    parser.add_argument("--searches", type=int, default=20, help="hybrid searches per backend")
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument(
        "--warm-up", type=int, default=0, metavar="FACTS",
        help="project this many facts into a throwaway group first (untimed): a warm server",
    )  # fmt: skip
    parser.add_argument("--reuse", action="store_true", help="keep the seeded template of an earlier run")
    parser.add_argument(
        "--drain-only", action="store_true",
        help="measure the worker drain and its check only (no rebuild, explore or searches): for iterating",
    )  # fmt: skip
    args = parser.parse_args()
    backends = [name for name in args.backends.split(",") if name]
    unknown = set(backends) - {"falkordb", "neo4j"}
    if unknown:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    if args.warm_up < 0:
        parser.error(f"--warm-up must be a number of facts, 0 or more (got {args.warm_up})")
    rng = random.Random(14)
    workdir = Path(tempfile.mkdtemp(prefix="vera-bench-graph-work-"))
    try:
        with graph_servers(backends) as urls:
            bench = start(TEMPLATE, fresh=not args.reuse)
            with bench.admin() as admin:
                existing = admin.execute("select count(*) from vera.facts").fetchone()[0]  # type: ignore[index]
            if existing and existing != args.facts:
                # a kept template of another size would be drained whole (or grown): the figures
                # would not be those of --facts
                parser.error(
                    f"the kept template holds {existing:,} facts, not {args.facts:,}:"
                    f" pass --facts {existing} or leave out --reuse to rebuild it"
                )
            if existing:
                print(f"reusing {existing:,} facts in {TEMPLATE}", flush=True)
            else:
                print(f"loading {args.facts:,} facts and their jobs ...", flush=True)
                seconds = load(
                    bench, facts=args.facts, per_episode=args.per_episode, entities=args.entities, rng=rng
                )
                print(f"  loaded in {seconds:.1f}s", flush=True)
                build_missing_vector_indexes(bench.server.admin_url(TEMPLATE))
                with bench.admin() as admin:
                    admin.execute("vacuum analyze")
            names = [entity_name(index) for index in rng.sample(range(args.entities), args.queries)]
            embedder = DeterministicEmbedder(DIM)
            texts = [
                f"{entity_name(rng.randrange(args.entities)).rsplit('-', 1)[0].replace('-', ' ')} "
                f"{rng.choice(PREDICATES)}"
                for _ in range(args.searches + 1)
            ]
            searches = list(zip(texts, embedder.embed(texts), strict=True))
            results = [
                measure_backend(
                    bench,
                    backend,
                    urls[backend][0].result(),
                    server=urls[backend][1],
                    group=bench.organisation,
                    names=names,
                    searches=searches,
                    workdir=workdir,
                    drain_only=args.drain_only,
                    warm_up=args.warm_up,
                )
                for backend in backends
            ]
            search = [] if args.drain_only else vera_search(bench, searches)
        report(args, results, search)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
