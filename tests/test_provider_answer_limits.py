"""Answers from providers are read up to a limit, counted as received and after decompression.

A decompression bomb (a gzip body of a few hundred kilobytes that expands to 256 MiB) is
served by the local stand-in with Content-Encoding: gzip; every HTTP provider stops at its
1 MiB cap with ProviderAnswerTooLargeError, in well under a second and without the memory
the expanded body would take. The S3 object store reads bodies through the same capped read.
"""

from __future__ import annotations

import gzip
import json
import threading
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.standins import API_KEY, Reply, StandinServer, voyage_embeddings
from vera_client.adapters.embedders.openai import OpenAIEmbedder
from vera_client.adapters.embedders.voyage import VoyageEmbedder
from vera_client.adapters.objects.s3 import S3ObjectStore
from vera_client.adapters.providers.bounded import DEFAULT_MAX_RESPONSE_BYTES
from vera_client.adapters.providers.chat import ChatModel
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.adapters.rerankers.llm import LlmReranker
from vera_client.adapters.rerankers.voyage import VoyageReranker
from vera_client.config import ObjectStoreSettings, ResilienceSettings
from vera_client.domain.errors import ProviderAnswerTooLargeError, ProviderResponseError

CAP = 1024 * 1024
EXPANDED = 256 * 1024 * 1024
# what a capped read may allocate at its peak: the cap, a decoder's chunk, the JSON of a normal answer
PEAK_BOUND = 24 * 1024 * 1024
SMALL = ResilienceSettings(
    max_retries=2, retry_base_seconds=0.001, timeout_seconds=10.0, max_response_bytes=CAP
)


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """EXPANDED zero bytes, gzipped (about 250 KB)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    chunk = bytes(1024 * 1024)
    parts = [packer.compress(chunk) for _ in range(EXPANDED // len(chunk))]
    return b"".join([*parts, packer.flush()])


def _chain(provider: str) -> ResilienceChain:
    return ResilienceChain(provider, SMALL)


CALLS: dict[str, Callable[[StandinServer], Any]] = {
    "openai embedder": lambda s: OpenAIEmbedder(
        api_key=API_KEY, base_url=f"{s.url}/openai/v1", chain=_chain("openai")
    ).embed(["a text"]),
    "voyage embedder": lambda s: VoyageEmbedder(
        api_key=API_KEY, base_url=f"{s.url}/voyage/v1", chain=_chain("voyage")
    ).embed(["a text"]),
    "voyage reranker": lambda s: VoyageReranker(
        api_key=API_KEY, base_url=f"{s.url}/voyage/v1", chain=_chain("voyage")
    ).rerank("q", ["a", "b"]),
    "llm reranker": lambda s: LlmReranker(
        api_key=API_KEY, base_url=f"{s.url}/openai/v1", chain=_chain("llm")
    ).rerank("q", ["a", "b"]),
    "chat model": lambda s: ChatModel(
        base_url=f"{s.url}/openai/v1", model="m", api_key=API_KEY, chain=_chain("llm")
    ).complete_json(system="s", user="u", schema={"type": "object"}, schema_name="x", operation="extract"),
}
PROVIDERS = {"openai embedder": "openai", "voyage embedder": "voyage", "voyage reranker": "voyage",
             "llm reranker": "llm", "chat model": "llm"}  # fmt: skip


def _peak_of(call: Callable[[], Any]) -> tuple[Exception | None, int]:
    """What call raised, and the peak of Python allocations while it ran."""
    tracemalloc.start()
    try:
        call()
    except Exception as exc:
        return exc, tracemalloc.get_traced_memory()[1]
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return None, peak


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_decompression_bomb_stops_at_the_cap(standin: StandinServer, bomb: bytes, name: str) -> None:
    standin.script(Reply(body=bomb, headers={"Content-Encoding": "gzip"}))
    error, peak = _peak_of(lambda: CALLS[name](standin))
    assert peak < PEAK_BOUND, f"{name} allocated {peak} bytes for a {len(bomb)}-byte gzip body"
    assert isinstance(error, ProviderAnswerTooLargeError), repr(error)
    assert str(error).startswith(f"{PROVIDERS[name]}: ") and str(CAP) in str(error)
    assert len(standin.requests) == 1  # refused, not retried


def test_a_body_declared_past_the_cap_is_refused_before_it_is_read(standin: StandinServer) -> None:
    standin.script(Reply(body=b" " * (CAP + 1)))
    with pytest.raises(ProviderAnswerTooLargeError, match="1048576-byte limit"):
        CALLS["openai embedder"](standin)


def test_an_answer_within_the_cap_is_read_as_usual(standin: StandinServer) -> None:
    assert len(CALLS["voyage embedder"](standin)[0]) == 1024


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("encoding", "pack"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", _raw_deflate)],
    ids=["gzip", "zlib-deflate", "raw-deflate"],
)
def test_an_encoded_answer_within_the_cap_is_decoded(
    standin: StandinServer, encoding: str, pack: Callable[[bytes], bytes]
) -> None:
    answer = json.dumps(voyage_embeddings({"input": ["a text"], "model": "voyage-3.5"})).encode()
    standin.script(Reply(body=pack(answer), headers={"Content-Encoding": encoding}))
    assert len(CALLS["voyage embedder"](standin)[0]) == 1024


@pytest.mark.parametrize(("encoding", "body"), [("gzip", b"not gzip at all"), ("br", b"\x0b\x02\x80ab")])
def test_a_corrupt_or_unasked_encoding_is_an_unusable_answer(
    standin: StandinServer, encoding: str, body: bytes
) -> None:
    standin.script(Reply(body=body, headers={"Content-Encoding": encoding}))
    with pytest.raises(ProviderResponseError, match="unusable answer"):
        CALLS["voyage embedder"](standin)
    assert standin.requests[-1].path.endswith("/embeddings")


def test_the_caps_have_documented_defaults() -> None:
    assert ResilienceSettings().max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 64 * 1024 * 1024
    assert ObjectStoreSettings().max_object_bytes == 256 * 1024 * 1024


# --- the S3 object store -------------------------------------------------------------------------


@contextmanager
def _s3_standin(length: int, *, declare: bool) -> Iterator[str]:
    """An S3 endpoint whose every object is `length` bytes, with Content-Length or chunked."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            if declare:
                self.send_header("Content-Length", str(length))
            else:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            block = bytes(64 * 1024)
            try:
                for _ in range(length // len(block)):
                    self.wfile.write(block if declare else b"%x\r\n%s\r\n" % (len(block), block))
                if not declare:
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the reader stopped at its cap

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("declare", [True, False], ids=["content-length", "chunked"])
def test_an_s3_object_past_the_cap_is_refused(declare: bool) -> None:
    with _s3_standin(64 * 1024 * 1024, declare=declare) as url:
        store = S3ObjectStore(
            "bucket", endpoint_url=url, region="us-east-1", access_key_id="a", secret_access_key="b",
            max_object_bytes=CAP,
        )  # fmt: skip
        error, peak = _peak_of(lambda: store.get("big"))
    assert isinstance(error, ProviderAnswerTooLargeError), repr(error)
    assert str(error).startswith("s3: ") and str(CAP) in str(error)
    assert peak < PEAK_BOUND
