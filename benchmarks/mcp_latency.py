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
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start, start_server
from _latency import Call, Paths, compare, direct_path, free_port, seed, server_env

DATABASE = "vera_bench_mcp_latency"
CONCURRENT = 8
HANDSHAKE_VERSION = "2025-06-18"
PER_REQUEST_VERSION = "2026-07-28"


def serve(bench: Bench, port: int) -> subprocess.Popen[bytes]:
    env = server_env(
        bench,
        {
            "VERA_MCP_PORT": str(port),
            # the benchmark's one principal calls far more often than an agent may: the quota is
            # still counted on every call (in process), only its limit is out of the way
            "VERA_MCP_QUOTAS__READ": "1000000/min",
        },
    )
    return start_server(["mcp", "serve", "--http"], env, port, "MCP server")


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


PATHS: Paths = {
    "direct": direct_path,
    f"raw {PER_REQUEST_VERSION}": _raw_path(PER_REQUEST_VERSION),
    f"raw {HANDSHAKE_VERSION}": _raw_path(HANDSHAKE_VERSION),
    f"SDK Client ({PER_REQUEST_VERSION})": sdk_client_path,
    f"SDK ClientSession ({HANDSHAKE_VERSION})": sdk_session_path,
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
    compare(bench, server, f"http://127.0.0.1:{port}/mcp", queries=sample, paths=PATHS, clients=CONCURRENT,
            what=f"search, k = 10, {args.facts} facts")  # fmt: skip


if __name__ == "__main__":
    main()
