"""The MCP round trip of `search` beside the direct client call, on the same data.

Seeds (once; reused on later runs) a tenant with a few thousand published
facts, starts `vera mcp serve --http` as a subprocess on 127.0.0.1 (the
server a deployment runs, with its own pool as vera_gateway), and measures
the same queries (k = 10, by words: the facts carry no vectors, so no model
runs and what is measured is the transport) through:

- direct: AsyncVeraClient.search as the tenant's API key, in this process, with the providers
  the server builds from the same settings (an application's client, from_settings, has them
  too): both then do the same work per search, the embedding pins of the searched scopes
  included;
- raw 2026-07-28 / raw 2025-06-18: the same tools/call as a plain JSON-RPC POST (httpx,
  kept-alive connection), in the per-request protocol revision (one self-contained POST,
  which the SDK answers in the request's own task) and in the handshake-era one (which the
  SDK answers through a server session built per stateless request); what any HTTP client
  sends, without a client SDK's own work;
- SDK Client: `mcp.Client` as an agent opens it (it discovers the server and speaks
  2026-07-28), and the SDK's ClientSession after an initialize handshake (2025-06-18);
  both validate each structured result against the tool's output schema;

with one client (the paths taking turns query by query, in a random order each time, so that
the noise of a shared machine falls on all alike) and with 8 concurrent clients (one path at a
time), and prints p50/p95 and the overhead over the direct call at p50 (the issue's target: at
most 5 ms for one client).

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
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start, start_server
from vera_client.bootstrap import build_providers
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.config import DbSettings, EmbedderSettings, PoolSettings, VeraSettings

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


# the server's embedder, and the direct client's: the facts carry no vectors, so none runs
EMBEDDER = "deterministic"


def serve(bench: Bench, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "VERA_DB__DATA_DIR": str(bench.server.data_dir),
        "VERA_DB__PORT": str(bench.server.port),
        "VERA_DB__DATABASE": bench.database,
        "VERA_DB__DSN": "",
        "VERA_DB__ADMIN_DSN": "",
        "VERA_EMBEDDER__PROVIDER": EMBEDDER,
        "VERA_MCP_PORT": str(port),
        "VERA_MCP_API_KEY_CACHE_S": "30",
        # the benchmark's one principal calls far more often than an agent may: the quota is
        # still counted on every call (in process), only its limit is out of the way
        "VERA_MCP_QUOTAS__READ": "1000000/min",
        "VERA_MCP_LOG_LEVEL": "warning",
    }
    return start_server(["mcp", "serve", "--http"], env, port, "MCP server")


# The paths a call can take, each a factory: given the shared state, an async context that yields
# one function answering a query. A client of each path is opened once and kept (as an agent keeps
# its session or connection), so what is timed is the call, not the connect.
Call = Callable[[str], Awaitable[object]]
HANDSHAKE_VERSION = "2025-06-18"
PER_REQUEST_VERSION = "2026-07-28"


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


def _checked(result: CallToolResult) -> CallToolResult:
    if result.is_error:
        raise RuntimeError(result.content)
    return result


@asynccontextmanager
async def sdk_session_path(bench: Bench, clients: int, url: str) -> AsyncIterator[Call]:
    """The SDK's ClientSession with the initialize handshake (protocol 2025-06-18; stateless server)."""
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {bench.api_key}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield lambda query: _then(session.call_tool("search", {"query": query, "k": 10}), _checked)


@asynccontextmanager
async def sdk_client_path(bench: Bench, clients: int, url: str) -> AsyncIterator[Call]:
    """The SDK's Client as an agent opens it (mode auto: it discovers and speaks 2026-07-28, one
    self-contained POST per request, no session)."""
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {bench.api_key}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        if client.protocol_version != PER_REQUEST_VERSION:
            raise RuntimeError(f"the SDK client negotiated {client.protocol_version}")
        yield lambda query: _then(client.call_tool("search", {"query": query, "k": 10}), _checked)


def _raw_path(version: str) -> Callable[[Bench, int, str], AbstractAsyncContextManager[Call]]:
    """A plain JSON-RPC POST per call (httpx, kept-alive connection): what any HTTP client sends,
    without the client SDK's own work (its session, output-schema validation)."""

    @asynccontextmanager
    async def path(bench: Bench, clients: int, url: str) -> AsyncIterator[Call]:
        headers = {
            "Authorization": f"Bearer {bench.api_key}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": version,
        }
        meta: dict[str, object] = {}
        if version == PER_REQUEST_VERSION:  # the per-request envelope: routing headers and _meta
            headers |= {"Mcp-Method": "tools/call", "Mcp-Name": "search"}
            meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": version,
                              "io.modelcontextprotocol/clientCapabilities": {}}}  # fmt: skip
        async with httpx.AsyncClient(headers=headers, timeout=60) as http:

            async def call(query: str) -> object:
                params = {"name": "search", "arguments": {"query": query, "k": 10}, **meta}
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
                answer = await http.post(url, json=body)
                if answer.status_code != 200 or "error" in answer.json():
                    raise RuntimeError(answer.text[:300])
                return answer

            yield call

    return path


async def _then(call: Awaitable[CallToolResult], check: Callable[[CallToolResult], object]) -> object:
    return check(await call)


PATHS: dict[str, Callable[[Bench, int, str], AbstractAsyncContextManager[Call]]] = {
    "direct": direct_path,
    f"raw {PER_REQUEST_VERSION}": _raw_path(PER_REQUEST_VERSION),
    f"raw {HANDSHAKE_VERSION}": _raw_path(HANDSHAKE_VERSION),
    f"SDK Client ({PER_REQUEST_VERSION})": sdk_client_path,
    f"SDK ClientSession ({HANDSHAKE_VERSION})": sdk_session_path,
}


Paths = dict[str, Callable[[Bench, int, str], AbstractAsyncContextManager[Call]]]


async def interleaved(
    bench: Bench, url: str, queries: list[str], paths: Paths | None = None
) -> dict[str, list[float]]:
    """One client: every path answers every query, the paths taking turns query by query, so a
    burst of load on this shared machine falls on all paths alike. Their order is drawn anew for
    each query: in a fixed rotation each path always follows the same one, and a path that
    follows another over MCP meets the server still finishing that call (a bias of 0.5-1 ms
    seen at load 4)."""
    paths = paths or PATHS
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
    bench: Bench, url: str, queries: list[str], clients: int, paths: Paths | None = None
) -> dict[str, list[float]]:
    """Several clients at once, one path at a time: interleaving paths here would make the direct
    calls share this process's CPU with the other paths' client work."""
    latencies: dict[str, list[float]] = {}
    for name, path in (paths or PATHS).items():

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
    # the machine's load beside the figures: a busy shared machine makes every hop wait for a core
    load_before = os.getloadavg()[0]
    try:
        rows = [
            (1, asyncio.run(interleaved(bench, url, sample))),
            (CONCURRENT, asyncio.run(concurrent(bench, url, sample, CONCURRENT))),
        ]
    finally:
        server.terminate()
        server.wait(timeout=15)
    print(
        f"\nsearch, k = 10, {args.facts} facts, {args.calls} calls per path and row"
        f" (one client: the paths interleaved); load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print("| clients | path | p50 / p95 ms | overhead over direct at p50, ms |")
    print("|---|---|---|---|")
    for clients, latencies in rows:
        base = percentile(latencies["direct"], 50)
        for name, values in latencies.items():
            p50 = percentile(values, 50)
            extra = "" if name == "direct" else f"{(p50 - base) * 1000:.2f}"
            print(
                f"| {clients} | {name} | {p50 * 1000:.2f} / {percentile(values, 95) * 1000:.2f} | {extra} |"
            )


if __name__ == "__main__":
    main()
