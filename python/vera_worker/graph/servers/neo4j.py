"""Neo4j 5.26 Community for the tests and for a deployment without a Neo4j of
its own, run by the small Java launcher in java/neo4j-launcher.

Neo4j is on no Python registry, so it comes from Maven Central: `build()`
compiles the launcher (`mvn package`, offline once the first resolution has
filled ~/.m2) when its jar is missing or older than its sources, and `start()`
runs it with `java -jar`, the Bolt connector on 127.0.0.1 only and the store in
`data_dir`. Like the embedded FalkorDB it outlives the command that started it
and is found again through the state file in `data_dir`. Its URL has the form
`bolt://127.0.0.1:PORT`; authentication is off unless a password is given (the
user is then `neo4j`), and the password reaches Java through its environment,
never its command line.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from vera_client.domain.errors import GraphServerError, GraphServerMissingError
from vera_worker.graph.servers.local import HOST, LocalServer, accepts_connections

# java/neo4j-launcher of the source checkout this module sits in (python/vera_worker/graph/servers/)
LAUNCHER_DIR = Path(__file__).resolve().parents[4] / "java" / "neo4j-launcher"
JAR_NAME = "neo4j-launcher.jar"
# Printed by the launcher (Launcher.java): ready means a ready line after the last starting line.
STARTING_LINE = "neo4j-launcher starting"
READY_PREFIX = "neo4j-launcher ready "
PASSWORD_VARIABLE = "NEO4J_LAUNCHER_PASSWORD"  # noqa: S105 - the variable's name, not a password
# ~40 s on two idle cores; the tests start it while other tests keep those cores busy
START_TIMEOUT_SECONDS = 240.0
# The first build downloads ~170 MB of jars.
BUILD_TIMEOUT_SECONDS = 1800.0
_PROGRAM = JAR_NAME


def required_program(name: str, purpose: str) -> str:
    """The path of `name` on PATH, or a clear error saying what it is needed for."""
    found = shutil.which(name)
    if found is None:
        raise GraphServerMissingError(
            f"{name} is not installed: {purpose} (Debian: apt-get install openjdk-17-jdk-headless maven)"
        )
    return found


def check_memory_size(value: str, what: str) -> str:
    """A JVM/Neo4j memory size such as 512m or 2g."""
    number, unit = value[:-1], value[-1:].lower()
    if not number.isdigit() or unit not in {"k", "m", "g"} or int(number) == 0:
        raise GraphServerError(f"{what} must be a size such as 512m or 2g, not {value!r}")
    return value


def launcher_sources(launcher_dir: Path) -> list[Path]:
    return [launcher_dir / "pom.xml", *sorted((launcher_dir / "src").rglob("*"))]


def needs_build(launcher_dir: Path) -> bool:
    """Whether the jar is missing, its dependencies were never copied, or a source is newer."""
    target = launcher_dir / "target"
    jar = target / JAR_NAME
    if not jar.is_file() or not (target / "lib").is_dir():
        return True
    built = jar.stat().st_mtime
    return any(path.is_file() and path.stat().st_mtime > built for path in launcher_sources(launcher_dir))


def is_ready(log_text: str) -> bool:
    """Whether the launcher's output says the current run is ready."""
    started = log_text.rfind(STARTING_LINE)
    return started >= 0 and log_text.find(READY_PREFIX, started) >= 0


@contextlib.contextmanager
def _build_lock(launcher_dir: Path) -> Iterator[None]:
    target = launcher_dir / "target"
    target.mkdir(exist_ok=True)
    with (target / ".build.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_launcher(launcher_dir: Path = LAUNCHER_DIR) -> Path:
    """The launcher's jar, built first when missing or stale; returns its path.

    Tries Maven offline first (fast, and no network once ~/.m2 holds everything),
    then online when something is missing there.
    """
    if not (launcher_dir / "pom.xml").is_file():
        raise GraphServerMissingError(
            f"the Neo4j launcher's sources are not at {launcher_dir}: run from a source checkout, "
            "or point VERA at a Neo4j server of your own"
        )
    jar = launcher_dir / "target" / JAR_NAME
    with _build_lock(launcher_dir):
        if not needs_build(launcher_dir):
            return jar
        required_program("java", "the Neo4j launcher runs on Java 17 or newer")
        mvn = required_program("mvn", "Maven builds the Neo4j launcher")
        output = ""
        for offline in (["-o"], []):
            try:
                result = subprocess.run(  # noqa: S603 - Maven with our own arguments
                    [mvn, "-q", "-B", *offline, "package"],
                    cwd=launcher_dir,
                    capture_output=True,
                    text=True,
                    timeout=BUILD_TIMEOUT_SECONDS,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise GraphServerError(
                    f"building the Neo4j launcher took more than {BUILD_TIMEOUT_SECONDS:.0f}s"
                ) from exc
            if result.returncode == 0 and jar.is_file():
                # Maven leaves the old jar's time when nothing changed in the classes: mark it built now
                jar.touch()
                return jar
            output = (result.stdout + result.stderr).strip()
        last_lines = "\n".join(output.splitlines()[-15:])
        raise GraphServerError(
            f"building the Neo4j launcher failed (mvn package in {launcher_dir}):\n{last_lines}"
        )


class Neo4jLauncher(LocalServer):
    """One Neo4j server with its home (store, logs) in `data_dir`, Bolt on `port` (a free one when None)."""

    name = "Neo4j"
    start_timeout_seconds = START_TIMEOUT_SECONDS

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        password: str | None = None,
        heap: str = "1g",
        page_cache: str = "256m",
        launcher_dir: Path = LAUNCHER_DIR,
    ) -> None:
        super().__init__(data_dir, port, program_marker=_PROGRAM, log_name="neo4j-launcher.log")
        self.heap = check_memory_size(heap, "the Java heap")
        self.page_cache = check_memory_size(page_cache, "the page cache")
        self.launcher_dir = launcher_dir
        self._password = password or None
        self._jar = launcher_dir / "target" / JAR_NAME

    def url(self, port: int) -> str:
        return f"bolt://{HOST}:{port}"

    def _prepare(self) -> None:
        self._jar = build_launcher(self.launcher_dir)

    def _launch(self, port: int) -> subprocess.Popen[bytes]:
        java = required_program("java", "Neo4j runs on Java 17 or newer")
        environment = {name: value for name, value in os.environ.items() if name != PASSWORD_VARIABLE}
        if self._password is not None:
            environment[PASSWORD_VARIABLE] = self._password
        command = [
            java,
            f"-Xmx{self.heap}",
            "-jar",
            str(self._jar),
            "--port",
            str(port),
            "--data",
            str(self.data_dir),
            "--pagecache",
            self.page_cache,
        ]
        return self.files.spawn(command, environment=environment)

    def _answers(self, port: int) -> bool:
        """Ready: the launcher printed its ready line for the current run, and Bolt accepts connections."""
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return False
        return is_ready(text) and accepts_connections(port)
