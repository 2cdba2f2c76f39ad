"""What the latency benchmarks of a serving path share (benchmarks/mcp_latency.py,
benchmarks/api_latency.py): the seeded facts and their queries, the served process's settings,
the direct client call they are compared with, and the measuring loop: one client with the
paths interleaved, then N concurrent clients one path at a time, printed as p50/p95 and the
overhead over the direct call at p50."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import socket
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from _harness import Bench
from vera_client.bootstrap import build_providers
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.config import DbSettings, EmbedderSettings, PoolSettings, VeraSettings

SERVICES = [
    "billing",
    "ledger",
    "route",
    "tracking",
    "pricing",
    "invoice",
    "customs",
    "fleet",
    "depot",
    "quote",
]
CLUSTERS = ["k8s-hanoi-1", "k8s-hanoi-2", "k8s-saigon-1", "vm-cluster-1", "vm-cluster-2"]
TEAMS = ["green", "blue", "red", "amber", "violet"]


def seed(bench: Bench, facts: int) -> list[str]:
    """Published tier-1 facts about synthetic services; the queries ask about them."""
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        org = bench.organisation
        names = [f"{SERVICES[i % len(SERVICES)]}-api-{i}" for i in range(facts // 2)]
        if not any(s.name == "bench-cmdb" for s in vera.list_sources(org)):
            source = vera.register_source(org, "cmdb", "bench-cmdb", 1)
            for start_at in range(0, len(names), 500):
                batch = names[start_at : start_at + 500]
                episode = vera.record_episode(org, source, f"services-{start_at}",
                                              hashlib.sha256(str(start_at).encode()).digest())  # fmt: skip
                claims = [
                    claim
                    for n, name in enumerate(batch)
                    for claim in (
                        {"subject": name, "predicate": "runs on", "object": CLUSTERS[n % len(CLUSTERS)],
                         "functional": True},
                        {"subject": name, "predicate": "owned by", "object": f"team {TEAMS[n % len(TEAMS)]}"},
                    )
                ]  # fmt: skip
                vera.publish(org, episode.episode_id, claims)
    return [f"which cluster does {name} run on?" for name in names]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# the server's embedder, and the direct client's: the facts carry no vectors, so none runs
EMBEDDER = "deterministic"


def server_env(bench: Bench, settings: Mapping[str, str]) -> dict[str, str]:
    """The served process's environment: the benchmark's database (the embedded server's, no
    DSN), the embedder, warning logs, and the server's own `settings` (its port, quotas)."""
    return {
        **os.environ,
        "VERA_DB__DATA_DIR": str(bench.server.data_dir),
        "VERA_DB__PORT": str(bench.server.port),
        "VERA_DB__DATABASE": bench.database,
        "VERA_DB__DSN": "",
        "VERA_DB__ADMIN_DSN": "",
        "VERA_EMBEDDER__PROVIDER": EMBEDDER,
        "VERA_MCP_API_KEY_CACHE_S": "30",
        "VERA_MCP_LOG_LEVEL": "warning",
        **settings,
    }


# The paths a call can take, each a factory: given the shared state, an async context that yields
# one function answering a query. A client of each path is opened once and kept (as an agent keeps
# its session or connection), so what is timed is the call, not the connect.
Call = Callable[[str], Awaitable[object]]
Paths = Mapping[str, Callable[[Bench, int, str], AbstractAsyncContextManager[Call]]]


@asynccontextmanager
async def direct_path(bench: Bench, clients: int, url: str) -> AsyncIterator[Call]:
    dsn = bench.server.url("vera_gateway", bench.database)
    settings = VeraSettings(
        db=DbSettings(data_dir=bench.server.data_dir), embedder=EmbedderSettings(provider=EMBEDDER)
    )
    pool = PoolSettings(min_size=clients, max_size=clients)
    client = await AsyncVeraClient.connect(dsn, pool=pool, providers=build_providers(settings))
    try:
        view = client.as_caller(bench.api_key)
        yield lambda query: view.search(query, k=10)
    finally:
        await client.close()


async def interleaved(bench: Bench, url: str, queries: list[str], paths: Paths) -> dict[str, list[float]]:
    """One client: every path answers every query, the paths taking turns query by query, so a
    burst of load on this shared machine falls on all paths alike. Their order is drawn anew for
    each query: in a fixed rotation each path always follows the same one, and a path that
    follows another over MCP meets the server still finishing that call (a bias of 0.5-1 ms
    seen at load 4)."""
    names = list(paths)
    order = random.Random(17)
    latencies: dict[str, list[float]] = {name: [] for name in names}
    async with AsyncExitStack() as stack:
        calls = {name: await stack.enter_async_context(paths[name](bench, 1, url)) for name in names}
        for name in names:  # warm each path: its connection, the server's caches
            await calls[name](queries[0])
        for query in queries:
            for name in order.sample(names, len(names)):
                started = time.perf_counter()
                await calls[name](query)
                latencies[name].append(time.perf_counter() - started)
    return latencies


async def concurrent(
    bench: Bench, url: str, queries: list[str], clients: int, paths: Paths
) -> dict[str, list[float]]:
    """Several clients at once, one path at a time: interleaving paths here would make the direct
    calls share this process's CPU with the other paths' client work."""
    latencies: dict[str, list[float]] = {}
    for name, path in paths.items():

        async def one_client(share: list[str]) -> list[float]:
            async with path(bench, clients, url) as call:  # noqa: B023 - awaited within this iteration
                await call(share[0])
                timed = []
                for query in share:
                    started = time.perf_counter()
                    await call(query)
                    timed.append(time.perf_counter() - started)
                return timed

        shares = [queries[i::clients] for i in range(clients)]
        results = await asyncio.gather(*(one_client(share) for share in shares))
        latencies[name] = [latency for share in results for latency in share]
    return latencies


def percentile(values: list[float], p: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1] if len(values) > 1 else values[0]
    )


def compare(
    bench: Bench,
    server: subprocess.Popen[bytes],
    url: str,
    *,
    queries: list[str],
    paths: Paths,
    clients: int,
    what: str,
) -> None:
    """Measures `paths` (the first is the direct call the others are compared with) on `queries`
    against the served process, which it stops at the end, and prints the table."""
    # the machine's load beside the figures: a busy shared machine makes every hop wait for a core
    load_before = os.getloadavg()[0]
    try:
        rows = [
            (1, asyncio.run(interleaved(bench, url, queries, paths))),
            (clients, asyncio.run(concurrent(bench, url, queries, clients, paths))),
        ]
    finally:
        server.terminate()
        server.wait(timeout=15)
    print(
        f"\n{what}, {len(queries)} calls per path and row"
        f" (one client: the paths interleaved); load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print("| clients | path | p50 / p95 ms | overhead over direct at p50, ms |")
    print("|---|---|---|---|")
    direct = next(iter(paths))
    for count, latencies in rows:
        base = percentile(latencies[direct], 50)
        for name, values in latencies.items():
            p50 = percentile(values, 50)
            extra = "" if name == direct else f"{(p50 - base) * 1000:.2f}"
            print(f"| {count} | {name} | {p50 * 1000:.2f} / {percentile(values, 95) * 1000:.2f} | {extra} |")
