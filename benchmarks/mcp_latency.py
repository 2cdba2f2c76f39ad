"""The MCP round trip of `search` beside the direct client call, on the same data.

Seeds (once; reused on later runs) a tenant with a few thousand published
facts, starts `vera mcp serve --http` as a subprocess on 127.0.0.1 (the
server a deployment runs, with its own pool as vera_gateway), and measures
the same queries (k = 10, by words: the facts carry no vectors, so no model
runs and what is measured is the transport) through:

- the direct call: AsyncVeraClient.search as the tenant's API key, in this process;
- MCP: the SDK's ClientSession over streamable HTTP with the key as a Bearer token;
- raw: the same tools/call as a plain JSON-RPC POST (httpx, kept-alive connection), which
  leaves out the client SDK's own cost (its session, output-schema validation);

each with one client and with 8 concurrent clients, and prints p50/p95 and the
overhead of MCP at p50 (the issue's target: at most 5 ms for one client).

    .venv/bin/python benchmarks/mcp_latency.py [--facts 3000] [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.config import PoolSettings

DATABASE = "vera_bench_mcp_latency"
CONCURRENT = 8
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


def serve(bench: Bench, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "VERA_DB__DATA_DIR": str(bench.server.data_dir),
        "VERA_DB__PORT": str(bench.server.port),
        "VERA_DB__DATABASE": bench.database,
        "VERA_DB__DSN": "",
        "VERA_DB__ADMIN_DSN": "",
        "VERA_EMBEDDER__PROVIDER": "deterministic",
        "VERA_MCP_PORT": str(port),
        "VERA_MCP_API_KEY_CACHE_S": "30",
        # the benchmark's one principal calls far more often than an agent may: the quota is
        # still counted on every call (in process), only its limit is out of the way
        "VERA_MCP_QUOTAS__READ": "1000000/min",
        "VERA_MCP_LOG_LEVEL": "warning",
    }
    vera = Path(sys.executable).with_name("vera")
    server = subprocess.Popen([str(vera), "mcp", "serve", "--http"], env=env)  # noqa: S603
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.terminate()
    raise SystemExit("the MCP server did not become ready within 60 s")


async def timed(calls: list[str], one: Callable[[str], Awaitable[object]]) -> list[float]:
    latencies = []
    for query in calls:
        started = time.perf_counter()
        await one(query)
        latencies.append(time.perf_counter() - started)
    return latencies


async def direct(bench: Bench, queries: list[str], clients: int) -> list[float]:
    dsn = bench.server.url("vera_gateway", bench.database)
    client = await AsyncVeraClient.connect(dsn, pool=PoolSettings(min_size=clients, max_size=clients))
    try:
        view = client.as_caller(bench.api_key)
        await view.search(queries[0], k=10)  # warm the pool and the pins memo
        shares = [queries[i::clients] for i in range(clients)]
        results = await asyncio.gather(*(timed(share, lambda q: view.search(q, k=10)) for share in shares))
        return [latency for share in results for latency in share]
    finally:
        await client.close()


async def over_mcp(url: str, key: str, queries: list[str], clients: int) -> list[float]:
    async def one_client(share: list[str]) -> list[float]:
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("search", {"query": share[0], "k": 10})  # warm the connection

            async def call(query: str) -> object:
                result = await session.call_tool("search", {"query": query, "k": 10})
                if result.is_error:
                    raise RuntimeError(result.content)
                return result

            return await timed(share, call)

    shares = [queries[i::clients] for i in range(clients)]
    results = await asyncio.gather(*(one_client(share) for share in shares))
    return [latency for share in results for latency in share]


async def raw_json_rpc(url: str, key: str, queries: list[str], clients: int) -> list[float]:
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }

    async def one_client(share: list[str]) -> list[float]:
        async with httpx.AsyncClient(headers=headers, timeout=60) as http:

            async def call(query: str) -> object:
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "search", "arguments": {"query": query, "k": 10}}}  # fmt: skip
                answer = await http.post(url, json=body)
                if answer.status_code != 200 or "error" in answer.json():
                    raise RuntimeError(answer.text[:300])
                return answer

            await call(share[0])
            return await timed(share, call)

    shares = [queries[i::clients] for i in range(clients)]
    results = await asyncio.gather(*(one_client(share) for share in shares))
    return [latency for share in results for latency in share]


def percentile(values: list[float], p: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1] if len(values) > 1 else values[0]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=3000)
    parser.add_argument("--calls", type=int, default=300, help="calls per measurement")
    args = parser.parse_args()
    random.seed(13)
    bench = start(DATABASE, fresh=False)
    queries = seed(bench, args.facts)
    sample = [random.choice(queries) for _ in range(args.calls)]
    port = free_port()
    server = serve(bench, port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        rows = []
        for clients in (1, CONCURRENT):
            base = asyncio.run(direct(bench, sample, clients))
            mcp = asyncio.run(over_mcp(url, bench.api_key, sample, clients))
            raw = asyncio.run(raw_json_rpc(url, bench.api_key, sample, clients))
            rows.append((clients, base, mcp, raw))
    finally:
        server.terminate()
        server.wait(timeout=15)
    print(f"\nsearch, k = 10, {args.facts} facts, {args.calls} calls per row (latency per call)")
    print("| clients | direct p50 / p95 ms | MCP (SDK client) p50 / p95 ms | raw JSON-RPC p50 / p95 ms "
          "| overhead p50 ms: MCP, raw |")  # fmt: skip
    print("|---|---|---|---|---|")
    for clients, base, mcp, raw in rows:
        b50, m50, r50 = percentile(base, 50), percentile(mcp, 50), percentile(raw, 50)
        print(f"| {clients} | {b50 * 1000:.2f} / {percentile(base, 95) * 1000:.2f} "
              f"| {m50 * 1000:.2f} / {percentile(mcp, 95) * 1000:.2f} "
              f"| {r50 * 1000:.2f} / {percentile(raw, 95) * 1000:.2f} "
              f"| {(m50 - b50) * 1000:.2f}, {(r50 - b50) * 1000:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
