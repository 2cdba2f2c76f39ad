#!/usr/bin/env python3
"""Set up and run VERA from a source checkout, with nothing but python3.

    python3 dev.py demo     # set up, start the embedded PostgreSQL, run the demo
    python3 dev.py test     # set up, then lint, type-check, import contracts, tests
    python3 dev.py setup    # only create/refresh .venv

Idempotent: .venv is (re)installed only when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / "bin"
STAMP = VENV / ".vera-install-stamp"


def run(*command: str | Path, **kwargs: object) -> None:
    print("$", " ".join(str(part) for part in command), flush=True)
    result = subprocess.run([str(part) for part in command], cwd=ROOT, check=False, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        sys.exit(result.returncode)


def setup() -> None:
    if sys.version_info < (3, 11):
        sys.exit("VERA needs Python 3.11 or newer")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted and (BIN / "vera").exists():
        return
    if not (BIN / "python").exists():
        print(f"creating {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    run(BIN / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", ".[all,dev]")
    STAMP.write_text(wanted)


# Neo4j (for the graph contract tests) comes from Maven Central through java/neo4j-launcher;
# the first build downloads ~170 MB into ~/.m2, later ones run offline or not at all.
BUILD_NEO4J_LAUNCHER = """
import sys
from vera_worker.graph.servers.neo4j import build_launcher
from vera_client.domain.errors import GraphServerError
try:
    build_launcher()
except GraphServerError as exc:
    sys.exit(f"dev.py: the Neo4j launcher the graph tests need cannot be built: {exc}")
"""


def build_neo4j_launcher() -> None:
    started = time.monotonic()
    print("$ build java/neo4j-launcher if stale (mvn package; the first build downloads Neo4j)", flush=True)
    if subprocess.run([BIN / "python", "-c", BUILD_NEO4J_LAUNCHER], cwd=ROOT, check=False).returncode != 0:
        sys.exit(1)
    print(f"Neo4j launcher ready in {time.monotonic() - started:.1f}s", flush=True)


def ensure_chromium() -> None:
    """The browser tests of the web console (pg_tests/console) drive the operating system's Chromium:
    install it with apt-get when it is missing and this runs as root (CI does); otherwise the tests
    skip with one line saying so (docs/console.md)."""
    if shutil.which("chromium") or shutil.which("chromium-browser"):
        return
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        print("dev.py: no chromium here and not root with apt-get: the console's browser tests will skip")
        return
    print("$ apt-get install chromium (the console's browser tests)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]):
        done = subprocess.run(command, check=False, env=env, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            print(f"dev.py: {' '.join(command)} failed: the console's browser tests will skip", flush=True)
            return


def test(extra: list[str]) -> None:
    started = time.monotonic()
    ensure_chromium()
    run(BIN / "ruff", "check", ".")
    run(BIN / "ruff", "format", "--check", ".")
    run(BIN / "mypy")
    run(BIN / "lint-imports")
    build_neo4j_launcher()
    run(BIN / "pytest", *extra)
    print(f"dev.py test: all checks passed in {time.monotonic() - started:.1f}s", flush=True)


def main(argv: list[str]) -> None:
    command = argv[0] if argv else "help"
    if command not in {"setup", "demo", "test"}:
        print(__doc__)
        sys.exit(0 if command in {"help", "-h", "--help"} else 2)
    setup()
    if command == "demo":
        os.execv(BIN / "vera", [str(BIN / "vera"), "demo", *argv[1:]])
    elif command == "test":
        test(argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
