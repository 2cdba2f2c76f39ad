"""A local HTTP server that speaks the hosted providers' wire formats, for tests.

One server answers on 127.0.0.1 for both providers, each under its own prefix
(so adapters are pointed at it through base_url):

    /openai/v1/embeddings         OpenAI embeddings
    /openai/v1/chat/completions   OpenAI chat completions, as an LLM reranker sees them, or
                                  answered by `chat_responder` (extraction, the judges); with
                                  `refuse_json_schema`, a server without structured output
    /voyage/v1/embeddings         Voyage embeddings
    /voyage/v1/rerank             Voyage rerank

Answers are deterministic but meaningful: vectors come from hashing words
(texts sharing words are close), rerank and chat scores from word overlap
with the query, token counts are word counts. Every request is recorded;
`script()` queues replies (an error status, a slow answer, a broken body)
that the next requests get instead of the normal answer.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.providers.chat import forget_servers_without_schema

API_KEY = "sk-standin-key"
_WORD = re.compile(r"\w+")
_NATIVE_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072}
_VOYAGE_DEFAULT_DIM = 1024


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A scripted answer: a status, headers, a body in place of the normal one, a delay before it."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    delay_seconds: float = 0.0

    @classmethod
    def error(cls, status: int, *, retry_after: str | None = None) -> Reply:
        body = json.dumps({"error": {"message": f"scripted {status}", "type": "standin"}}).encode()
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls(status=status, headers=headers, body=body)

    @classmethod
    def slow(cls, seconds: float) -> Reply:
        """The normal answer, after a delay."""
        return cls(delay_seconds=seconds)

    @classmethod
    def json(cls, payload: Any) -> Reply:
        return cls(body=json.dumps(payload).encode())

    @classmethod
    def chat(cls, content: str) -> Reply:
        """A chat completion whose message is content."""
        return cls.json({
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        })  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """A request as the server received it."""

    path: str
    authorization: str | None
    body: Any


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _overlap(query: str, document: str) -> float:
    """The share of the query's distinct words that the document contains."""
    wanted = set(_words(query))
    return len(wanted & set(_words(document))) / len(wanted) if wanted else 0.0


def _embedding_answer(texts: list[str], model: str, dim: int, usage: dict[str, int]) -> dict[str, Any]:
    vectors = DeterministicEmbedder(dim).embed(texts)
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
        "model": model,
        "usage": usage,
    }


def openai_embeddings(body: dict[str, Any]) -> dict[str, Any]:
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    dim = body.get("dimensions") or _NATIVE_DIMS.get(body["model"], 1536)
    tokens = sum(len(_words(t)) for t in texts)
    return _embedding_answer(texts, body["model"], dim, {"prompt_tokens": tokens, "total_tokens": tokens})


def voyage_embeddings(body: dict[str, Any]) -> dict[str, Any]:
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    dim = body.get("output_dimension") or _VOYAGE_DEFAULT_DIM
    tokens = sum(len(_words(t)) for t in texts)
    return _embedding_answer(texts, body["model"], dim, {"total_tokens": tokens})


def voyage_rerank(body: dict[str, Any]) -> dict[str, Any]:
    query, documents = body["query"], body["documents"]
    scored = [{"index": i, "relevance_score": _overlap(query, d)} for i, d in enumerate(documents)]
    scored.sort(key=lambda item: -item["relevance_score"])  # Voyage answers most relevant first
    # Voyage counts the query once per document, plus the documents
    tokens = len(_words(query)) * len(documents) + sum(len(_words(d)) for d in documents)
    return {"object": "list", "data": scored, "model": body["model"], "usage": {"total_tokens": tokens}}


def chat_completion_of(body: dict[str, Any], content: str) -> dict[str, Any]:
    """A chat completion whose message is content, with token counts as word counts."""
    prompt_tokens = sum(len(_words(m["content"])) for m in body["messages"])
    completion_tokens = len(_words(content))
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    """Reads the reranking prompt as a model would: the Query line and the [n] document lines."""
    prompt = body["messages"][-1]["content"]
    query = next((line[len("Query:") :] for line in prompt.splitlines() if line.startswith("Query:")), "")
    documents = re.findall(r"^\[(\d+)\] (.*)$", prompt, flags=re.MULTILINE)
    scores = [round(10 * _overlap(query, text)) for _, text in documents]
    return chat_completion_of(body, json.dumps({"scores": scores}))


# A stand-in for a model that answers structured-output requests: given the request body
# (its messages and response_format), the message content to answer with.
ChatResponder = Callable[[dict[str, Any]], str]

CHAT_PATH = "/openai/v1/chat/completions"

ROUTES = {
    "/openai/v1/embeddings": openai_embeddings,
    "/openai/v1/chat/completions": chat_completion,
    "/voyage/v1/embeddings": voyage_embeddings,
    "/voyage/v1/rerank": voyage_rerank,
}


class StandinServer:
    """The server, its recorded requests and its script of replies; thread-safe."""

    def __init__(self, api_key: str = API_KEY) -> None:
        self.api_key = api_key
        # like a server without structured output (older vLLM, llama.cpp): json_schema gets a 400
        self.refuse_json_schema = False
        # answers chat completions in place of the reranking reader (extraction, judges)
        self.chat_responder: ChatResponder | None = None
        self._lock = threading.Lock()
        self._script: list[Reply] = []
        self._requests: list[Recorded] = []
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> StandinServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests, one each, before normal answers resume."""
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._requests.clear()
        self.refuse_json_schema = False
        self.chat_responder = None

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self._requests.append(recorded)

    def _next_scripted(self) -> Reply | None:
        with self._lock:
            return self._script.pop(0) if self._script else None


def _handler_for(server: StandinServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the hosted APIs do
        # headers and body go out in two writes; Nagle's algorithm would hold the second for an ACK
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet test output

        def handle(self) -> None:
            # a client that stopped reading (a capped answer) closes with bytes unread
            with contextlib.suppress(ConnectionResetError):
                super().handle()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            authorization = self.headers.get("Authorization")
            server._record(Recorded(path=self.path, authorization=authorization, body=body))
            if authorization != f"Bearer {server.api_key}":
                self._send(401, {"error": {"message": "Incorrect API key provided", "type": "auth"}})
                return
            route = ROUTES.get(self.path)
            if route is None:
                self._send(404, {"detail": f"no route {self.path}"})
                return
            scripted = server._next_scripted()
            if scripted is not None:
                time.sleep(scripted.delay_seconds)
                if scripted.body is not None or scripted.status != 200:
                    self._send_raw(scripted.status, scripted.body or b"", scripted.headers)
                    return
            if not isinstance(body, dict):
                self._send(400, {"detail": "the body is not a JSON object"})
                return
            if self.path == CHAT_PATH and self._chat(body):
                return
            self._send(200, route(body))

        def _chat(self, body: dict[str, Any]) -> bool:
            """Answers a chat completion the server was set up for; False: the normal route answers."""
            response_format = body.get("response_format") or {}
            if server.refuse_json_schema and response_format.get("type") == "json_schema":
                message = "response_format: json_schema is not supported by this server"
                self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
                return True
            if server.chat_responder is None:
                return False
            self._send(200, chat_completion_of(body, server.chat_responder(body)))
            return True

        def _send(self, status: int, payload: Any) -> None:
            self._send_raw(status, json.dumps(payload).encode(), {})

        def _send_raw(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test)

    return Handler


@contextmanager
def running_standin(api_key: str = API_KEY) -> Iterator[StandinServer]:
    server = StandinServer(api_key).start()
    try:
        yield server
    finally:
        server.stop()


# The fixtures every test of a provider adapter uses (registered by tests/conftest.py and
# pg_tests/conftest.py): one server per module, reset before each test. A module that wants
# its own chat answers overrides `standin`, asking for this one and setting chat_responder.
@pytest.fixture(scope="module")
def standin_server() -> Iterator[StandinServer]:
    with running_standin() as server:
        yield server


@pytest.fixture
def standin(standin_server: StandinServer) -> StandinServer:
    standin_server.reset()
    forget_servers_without_schema()  # which servers refused json_schema: learnt per process
    return standin_server
