"""A new user's first hour, scripted: the README's steps in a temporary home folder, each step's
wall time and its result line, and the whole run.

    vera demo                                  (dev.py demo runs this after building .venv)
    vera search "who owns ledger-db?" --explain
    vera eval examples/lumen/golden.toml
    vera source add handbook ~/notes --tier 2  (a small notes folder: two .md and a .csv)
    vera ingest ~/notes
    vera graph check                           (after the post-demo ingest, with no graph setting)
    a base-install search                      (a slim venv built by uv, as test_slim_install does)
    vera db stop                               (PostgreSQL and the demo's FalkorDB)

Every step runs `vera` as a subprocess with no VERA_ setting but the database's data folder
(in the temporary folder, world-traversable when run as root) and a free port, so nothing of
this machine's own VERA is touched. The key is the one the demo prints.

    .venv/bin/python benchmarks/first_hour.py [--no-slim] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERA_SCRIPT = Path(sys.executable).with_name("vera")
UV = Path(sys.executable).with_name("uv")
KEY = re.compile(r"vera_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")
NOTES = {
    "oncall.md": "# On-call\n\nThe on-call engineer for parcel-router is Mai Tran this week.\n",
    "queues.md": "# Queues\n\nWhen the parcel queue backs up, scale parcel-router to eight replicas.\n",
    "services.csv": "Service,runs on,owned by\nparcel-router,k8s-hanoi-1,Routing Team\n",
}
SLIM_SEARCH = """
import sys
from vera_client.client import VeraClient
with VeraClient(sys.argv[1], sys.argv[2]) as vera:
    hits = vera.search("who owns ledger-db?", k=3)
first = " ".join(hits[0].text.split())[:80] if hits else "-"
print(f"{len(hits)} hits (words only: no embedder in the base install); first: {first}")
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _vera() -> list[str]:
    if VERA_SCRIPT.exists():
        return [str(VERA_SCRIPT)]
    return [sys.executable, "-c", "from vera_cli.main import main; main()"]


class Run:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("VERA_")}
        self.env |= {
            "HOME": str(home),
            "VERA_DB__DATA_DIR": str(home / "vera" / "postgres"),
            "VERA_DB__PORT": str(_free_port()),
        }
        self.started = time.monotonic()
        self.failed = 0

    def step(self, name: str, command: list[str], pick: str | None = None, *, first: bool = False) -> str:
        began = time.monotonic()
        done = subprocess.run(  # noqa: S603 - our own commands
            command, capture_output=True, text=True, env=self.env, cwd=self.home, timeout=1800, check=False
        )
        seconds = time.monotonic() - began
        lines = [line.rstrip() for line in done.stdout.splitlines() if line.strip()]
        chosen = [line for line in lines if pick and pick in line] or lines
        result = chosen[0 if first else -1].strip() if chosen else "(no output)"
        if done.returncode != 0:
            self.failed += 1
            errors = [line for line in done.stderr.splitlines() if line.strip()]
            result = f"exit {done.returncode}: {errors[-1] if errors else result}"
        print(f"{seconds:7.1f}s  {name:<22} {result}", flush=True)
        return done.stdout

    def total(self) -> None:
        print(f"{time.monotonic() - self.started:7.1f}s  {'the whole run':<22} {self.failed} steps failed")


def _slim_python(workdir: Path) -> Path:
    env = {**os.environ, "UV_NO_PROGRESS": "1"}
    target = workdir / "slim"
    subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(target)], check=True, env=env)  # noqa: S603
    python = target / "bin" / "python"
    install = [str(UV), "pip", "install", "-q", "--python", str(python), str(ROOT)]
    subprocess.run(install, check=True, env=env)  # noqa: S603
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-slim", action="store_true", help="skip the base-install search")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (and its servers)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="vera-first-hour-"))
    home.chmod(0o755)  # as root the embedded server's own OS user must traverse it
    notes = home / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    run = Run(home)
    vera = _vera()
    try:
        demo = run.step("vera demo", [*vera, "demo"], pick="graph:")
        key = KEY.search(demo)
        if key is None:
            print("the demo printed no key: stopping here")
            return
        run.env["VERA_API_KEY"] = key[0]
        search = [*vera, "search", "who owns ledger-db?", "--explain"]
        run.step("vera search --explain", search, pick="ledger-db", first=True)
        run.step("vera eval", [*vera, "eval", str(ROOT / "examples/lumen/golden.toml")])
        run.step("vera source add", [*vera, "source", "add", "handbook", str(notes), "--tier", "2"])
        run.step("vera ingest ~/notes", [*vera, "ingest", str(notes)], pick="file")
        run.step("vera graph check", [*vera, "graph", "check"])
        if not args.no_slim and UV.exists():
            began = time.monotonic()
            python = _slim_python(home)
            print(f"{time.monotonic() - began:7.1f}s  {'slim venv (uv)':<22} base install of this checkout")
            url = subprocess.run(  # noqa: S603
                [*vera, "db", "url"], capture_output=True, text=True, env=run.env, check=True
            ).stdout.strip()
            run.step("base-install search", [str(python), "-c", SLIM_SEARCH, url, key[0]])
    finally:
        if not args.keep:  # also after a failed step: nothing of the run is left running
            run.step("vera db stop", [*vera, "db", "stop"], pick="graph:")
        run.total()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
