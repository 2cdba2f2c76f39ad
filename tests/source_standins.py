"""Local stand-ins of the servers the HTTP connectors read, on 127.0.0.1.

The CMDB stand-in speaks the wire format python/vera_worker/connectors/cmdb/
connector.py documents:

    GET /cmdb/v1/items?updated_since=ISO&cursor=TOKEN&limit=N
        -> {"items": [...], "next_cursor": TOKEN | null}   (cursor pagination,
           ordered by (updated, id); updated_since is inclusive)
    GET /cmdb/v1/ids?cursor=TOKEN&limit=N -> {"ids": [...], "next_cursor": ...}

Auth: `Authorization: Bearer <token>`; any other token is a 401 with
{"error": {"message": "invalid or expired token"}}, as a real API answers.
Rate limiting and failures are scripted: `script(path_prefix, Reply)` queues an
answer (429 with Retry-After, 503, a crash of the test's own making) for the
next request under that prefix. Every request is recorded (path, query and
headers), so a test can check what was asked and that the token was only ever
sent in the header.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from tests.standins import Reply

CMDB_TOKEN = "cmdb-standin-secret-7f3a9c"


@dataclass(frozen=True, slots=True)
class SeenRequest:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class CmdbStandin:
    """Configuration items keyed by id; tests change them between runs."""

    token: str = CMDB_TOKEN
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[SeenRequest] = field(default_factory=list)
    scripted: list[tuple[str, Reply]] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, prefix: str, reply: Reply) -> None:
        """The next request whose path starts with prefix gets reply instead."""
        with self.lock:
            self.scripted.append((prefix, reply))

    def _scripted(self, path: str) -> Reply | None:
        with self.lock:
            for index, (prefix, reply) in enumerate(self.scripted):
                if path.startswith(prefix):
                    del self.scripted[index]
                    return reply
        return None

    def answer(
        self, path: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        self.requests.append(SeenRequest(path, query, headers))
        scripted = self._scripted(path)
        if scripted is not None:
            return scripted.status, scripted.headers, scripted.body or b"{}"
        if headers.get("authorization") != f"Bearer {self.token}":
            return 401, {}, json.dumps({"error": {"message": "invalid or expired token"}}).encode()
        limit = max(1, min(int(query.get("limit", "100")), 1000))
        start = int(query.get("cursor", "0") or 0)
        if path == "/cmdb/v1/items":
            since = query.get("updated_since")
            found = sorted(
                (
                    i
                    for i in self.items.values()
                    if since is None or _instant(i["updated"]) >= _instant(since)
                ),
                key=lambda i: (i["updated"], str(i["id"])),
            )
            page = found[start : start + limit]
            following = str(start + limit) if start + limit < len(found) else None
            return 200, {}, json.dumps({"items": page, "next_cursor": following}).encode()
        if path == "/cmdb/v1/ids":
            ids = sorted(str(i) for i in self.items)
            following = str(start + limit) if start + limit < len(ids) else None
            return 200, {}, json.dumps({"ids": ids[start : start + limit], "next_cursor": following}).encode()
        return 404, {}, json.dumps({"error": {"message": f"no route {path}"}}).encode()


def _instant(text: str) -> str:
    """ISO times compared as UTC text (the stand-in stores Z times; the connector sends +00:00)."""
    return text.replace("+00:00", "Z")


class Answering(Protocol):
    """A stand-in's state: it answers a GET and learns the url it is served at."""

    url: str

    def answer(
        self, path: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]: ...


@contextmanager
def serving(standin: Answering, prefix: str) -> Iterator[None]:
    """standin on 127.0.0.1 (an ephemeral port); its url is the server's address plus prefix."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, body = standin.answer(parts.path, query, headers)
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    standin.url = f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def running_cmdb(standin: CmdbStandin | None = None) -> Iterator[CmdbStandin]:
    server_state = standin or CmdbStandin()
    with serving(server_state, "/cmdb/v1"):
        yield server_state
