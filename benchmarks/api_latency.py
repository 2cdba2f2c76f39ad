"""The HTTP API's `/v1/search` beside the direct client call, on the same data.

Seeds (once; reused on later runs) a tenant with published facts (_latency.seed), starts
`vera api serve` as a subprocess on 127.0.0.1 (the server a deployment runs, its own pool as
vera_gateway), and measures the same queries (k = 10, by words: no model runs, so what is
measured is the HTTP layer: routing, the bearer token, the parameters' model, JSON) through:

- direct: AsyncVeraClient.search as the tenant's API key, in this process (_latency.direct_path);
- HTTP: GET /v1/search?q=...&k=10 with httpx on a kept-alive connection;

with one client (the two paths taking turns in a random order per query) and with 16 concurrent
clients (one path at a time), and prints p50/p95 and the overhead over the direct call at p50
(the issue's target: at most 3 ms for one client).

    .venv/bin/python benchmarks/api_latency.py [--facts 3000] [--calls 300]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start, start_server
from _latency import Call, Paths, compare, direct_path, free_port, seed, server_env

DATABASE = "vera_bench_api_latency"
CONCURRENT = 16


def serve(bench: Bench, port: int) -> subprocess.Popen[bytes]:
    env = server_env(
        bench,
        {
            "VERA_MCP_API_PORT": str(port),
            "VERA_MCP_QUOTAS__READ": "1000000/min",
            "VERA_MCP_QUOTAS__ORGANISATION__READ": "1000000/min",
        },
    )
    return start_server(["api", "serve"], env, port, "API server")


@asynccontextmanager
async def http_path(bench: Bench, clients: int, url: str) -> AsyncIterator[Call]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {bench.api_key}"}, timeout=60) as http:

        async def call(query: str) -> object:
            answer = await http.get(url + "/v1/search", params={"q": query, "k": 10})
            if answer.status_code != 200:
                raise RuntimeError(answer.text[:300])
            return answer

        yield call


PATHS: Paths = {
    # each client its own connection (16 clients: 16 connections, not a pool of 16 apiece)
    "direct": lambda bench, _clients, url: direct_path(bench, 1, url),
    "HTTP GET /v1/search": http_path,
}


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
    compare(bench, server, f"http://127.0.0.1:{port}", queries=sample, paths=PATHS, clients=CONCURRENT,
            what=f"/v1/search, k = 10, {args.facts} facts")  # fmt: skip


if __name__ == "__main__":
    main()
