"""What the two local graph servers (FalkorDB, Neo4j) share: a process that
outlives the command that started it, found again through a small state file
in its data directory. `LocalServer` is their start/stop/status; each server
says only how it is launched, how it is seen to answer, and its URL.

The state file (`server.state`, "pid port" on one line) is written under an
exclusive lock on `server.lock` before the server is waited for, so a second
`start()` (another command, another test session) finds the server that is
starting or running instead of launching a second one on the same data. A pid
alone is not trusted: the process must still run and its command line must be
the expected program's, so a stale file whose pid the kernel reused is ignored.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from vera_client.adapters.postgres.embedded import process_alive
from vera_client.domain.errors import GraphServerError, PortInUseError

HOST = "127.0.0.1"
STATE_FILE = "server.state"
LOCK_FILE = "server.lock"
STOP_TIMEOUT_SECONDS = 60.0
_CMDLINE_READS = 20


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """The pid and port a started server was given."""

    pid: int
    port: int

    def render(self) -> str:
        return f"{self.pid} {self.port}\n"

    @classmethod
    def parse(cls, text: str) -> ServerRecord | None:
        """The record in `text`, or None when it is not one (empty, half written, edited by hand)."""
        parts = text.split()
        if len(parts) != 2 or not all(part.isdigit() for part in parts):
            return None
        pid, port = (int(part) for part in parts)
        if pid <= 0 or not 0 < port <= 65535:
            return None
        return cls(pid=pid, port=port)


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphServerStatus:
    """What `status()` of a local graph server reports."""

    running: bool
    data_dir: Path
    log_file: Path
    pid: int | None = None
    port: int | None = None
    url: str | None = None


def check_port(port: int | None) -> int | None:
    """`port` if it is a TCP port number (or None); a clear error otherwise."""
    if port is None:
        return None
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port <= 65535:
        raise GraphServerError(f"the port must be a number from 1 to 65535, not {port!r}")
    return port


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def ensure_port_free(port: int, what: str) -> None:
    """Raise PortInUseError when another program holds `port` on 127.0.0.1 (or on every address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # a closed connection's TIME_WAIT must not count as taken; a listener still does
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            raise PortInUseError(
                f"port {port} on {HOST} is taken by another program: cannot start {what}"
            ) from exc


def accepts_connections(port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def process_runs(pid: int, program_marker: str) -> bool:
    """Whether `pid` is a live (not zombie) process whose command line contains `program_marker`."""
    if not Path("/proc").is_dir():
        # no /proc (macOS): the pid's liveness is all we can see
        return process_alive(pid)
    for _ in range(_CMDLINE_READS):
        seen = _proc_state_and_cmdline(pid)
        if seen is None or seen[0] in {"Z", "X"}:
            return False
        # redis-server blanks its command line for an instant while it rewrites it as its title
        if seen[1].strip():
            return program_marker in seen[1]
        time.sleep(0.01)
    return False


def _proc_state_and_cmdline(pid: int) -> tuple[str, str] | None:
    proc = Path("/proc") / str(pid)
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError):
        return None
    return state, cmdline


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class ServerFiles:
    """The data directory of one local server: its state file, lock and log."""

    def __init__(self, data_dir: Path, *, program_marker: str, log_name: str) -> None:
        self.data_dir = data_dir.expanduser().absolute()
        self.program_marker = program_marker
        self.state_file = self.data_dir / STATE_FILE
        self.log_file = self.data_dir / log_name
        self._lock_file = self.data_dir / LOCK_FILE

    def prepare(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise GraphServerError(
                f"cannot create the data directory {self.data_dir}: {exc.strerror}"
            ) from exc

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held while a start or stop decides and acts, so two never race on one data directory."""
        self.prepare()
        with self._lock_file.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def read(self) -> ServerRecord | None:
        """The record of a server that still runs; None (and the stale file removed) otherwise."""
        try:
            record = ServerRecord.parse(self.state_file.read_text())
        except FileNotFoundError:
            return None
        if record is None or not process_runs(record.pid, self.program_marker):
            self.state_file.unlink(missing_ok=True)
            return None
        return record

    def write(self, record: ServerRecord) -> None:
        partial = self.state_file.with_suffix(".partial")
        partial.write_text(record.render())
        partial.replace(self.state_file)

    def clear(self) -> None:
        self.state_file.unlink(missing_ok=True)

    def spawn(
        self, command: list[str], *, environment: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start `command` in a session of its own (so it outlives this process and its terminal),
        its output appended to the log."""
        with self.log_file.open("ab") as log:
            try:
                return subprocess.Popen(  # noqa: S603 - our own program and arguments
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.data_dir,
                    env=environment,
                    start_new_session=True,
                )
            except OSError as exc:
                raise GraphServerError(f"cannot run {command[0]}: {exc.strerror}") from exc

    def wait_until(
        self,
        ready: Callable[[], bool],
        *,
        record: ServerRecord,
        what: str,
        timeout: float,
        process: subprocess.Popen[bytes] | None,
    ) -> None:
        """Poll `ready` until it holds; an error naming the log when the server exits or takes too long."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            # our own child is watched through its handle; one another command started, by its pid
            exited = (
                process.poll() is not None
                if process is not None
                else not process_runs(record.pid, self.program_marker)
            )
            if exited:
                self.clear()
                raise GraphServerError(
                    f"{what} exited while starting (log: {self.log_file}):\n{tail(self.log_file)}"
                )
            time.sleep(0.1)
        raise GraphServerError(
            f"{what} did not become ready within {timeout:.0f}s "
            f"(log: {self.log_file}):\n{tail(self.log_file)}"
        )

    def terminate(self, record: ServerRecord, process: subprocess.Popen[bytes] | None) -> None:
        """SIGTERM (a clean shutdown: both servers save on it), then SIGKILL if it lingers."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                break
            if process is None and not process_runs(record.pid, self.program_marker):
                break
            time.sleep(0.05)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
            if process is not None:
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
        self.clear()


class LocalServer(ABC):
    """A server with its data in `data_dir`, on `port` (a free one when None), listening on 127.0.0.1."""

    name: ClassVar[str]
    start_timeout_seconds: ClassVar[float]

    def __init__(self, data_dir: Path, port: int | None, *, program_marker: str, log_name: str) -> None:
        self.files = ServerFiles(data_dir, program_marker=program_marker, log_name=log_name)
        self.data_dir = self.files.data_dir
        self.log_file = self.files.log_file
        self.port = check_port(port)
        self._process: subprocess.Popen[bytes] | None = None

    @abstractmethod
    def url(self, port: int) -> str:
        """How a client reaches the server on `port`."""

    def _prepare(self) -> None:
        """What must be done before a port is picked (a slow build, say); nothing by default."""
        return

    @abstractmethod
    def _launch(self, port: int) -> subprocess.Popen[bytes]:
        """Start the server's process (through `self.files.spawn`) on `port`, which is free."""

    @abstractmethod
    def _answers(self, port: int) -> bool:
        """Whether the server on `port` is ready for clients."""

    def start(self) -> str:
        """Start the server (a no-op when it runs already) and return its URL once it answers."""
        with self.files.locked():
            record = self.files.read()
            if record is not None:
                if self.port is not None and record.port != self.port:
                    raise GraphServerError(
                        f"{self.name} already runs from {self.data_dir} on port {record.port}, "
                        f"not {self.port}: stop it first"
                    )
                process = None
            else:
                self._prepare()
                port = self.port if self.port is not None else free_port()
                ensure_port_free(port, self.name)
                process = self._process = self._launch(port)
                record = ServerRecord(pid=process.pid, port=port)
                self.files.write(record)
            port = record.port
            self.files.wait_until(
                lambda: self._answers(port),
                record=record,
                what=self.name,
                timeout=self.start_timeout_seconds,
                process=process,
            )
            return self.url(port)

    def stop(self) -> GraphServerStatus:
        """Stop the server cleanly (SIGTERM: both save and shut down on it) if it runs."""
        with self.files.locked():
            record = self.files.read()
            if record is not None:
                started_here = self._process is not None and self._process.pid == record.pid
                self.files.terminate(record, self._process if started_here else None)
                self._process = None
        return self.status()

    def status(self) -> GraphServerStatus:
        record = self.files.read()
        if record is None or not self._answers(record.port):
            return GraphServerStatus(running=False, data_dir=self.data_dir, log_file=self.log_file)
        return GraphServerStatus(
            running=True,
            data_dir=self.data_dir,
            log_file=self.log_file,
            pid=record.pid,
            port=record.port,
            url=self.url(record.port),
        )
