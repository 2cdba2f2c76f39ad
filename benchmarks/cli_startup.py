"""How long `vera` takes to start: the wall time of `vera --help`, and the time a `vera search`
spends in the interpreter before it reaches the network (its first connection attempt).

Both run the venv's installed console script as a subprocess, as a user's shell would. The
search connects to a listener of this script's own on a free local port, which notes the
instant the connection arrives and closes it: no instrumentation inside the measured process
(libpq opens its sockets in C, so a Python audit hook on socket.connect would not see them).
CLOCK_MONOTONIC is one clock for the whole machine, so the child's start and the arrival are
compared directly. The search then ends with its one-line error, as against a server that hangs up.

    .venv/bin/python benchmarks/cli_startup.py [--runs 10] [--importtime]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

from _harness import bench_server, cpu_reference

VERA = Path(sys.executable).with_name("vera")
TARGETS = {"help": 0.3, "network": 0.5}  # seconds (issue 26)


def _env(workdir: str, dsn: str | None = None) -> dict[str, str]:
    """The environment of a measured run: no VERA_ settings but these, and a working directory
    without a .env file (pydantic-settings would read one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERA_")}
    env["HOME"] = workdir
    if dsn is not None:
        env |= {"VERA_DB__DSN": dsn, "VERA_API_KEY": "vera_benchmark_0000000000000000"}
    return env


def time_help(runs: int, workdir: str) -> list[float]:
    seconds = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run([VERA, "--help"], check=True, capture_output=True, env=_env(workdir), cwd=workdir)  # noqa: S603
        seconds.append(time.monotonic() - started)
    return seconds


def time_to_network(runs: int, workdir: str) -> tuple[list[float], list[float]]:
    """(seconds from spawn to the first connection's arrival, seconds from spawn to exit) per run."""
    to_network, to_exit = [], []
    for _ in range(runs):
        with socket.create_server(("127.0.0.1", 0)) as listener:
            port = listener.getsockname()[1]
            arrived: list[float] = []

            def accept(server: socket.socket = listener, seen: list[float] = arrived) -> None:
                server.settimeout(60)
                conn, _ = server.accept()
                seen.append(time.monotonic())
                conn.close()  # the client reads "server closed the connection" and gives up

            thread = threading.Thread(target=accept, daemon=True)
            thread.start()
            dsn = f"postgresql://vera@127.0.0.1:{port}/vera?sslmode=disable"
            started = time.monotonic()
            done = subprocess.run(  # noqa: S603
                [VERA, "search", "x"], check=False, capture_output=True, text=True,
                env=_env(workdir, dsn), cwd=workdir,
            )  # fmt: skip
            ended = time.monotonic()
            thread.join(5)
        if not arrived:
            raise SystemExit(f"`vera search` never connected: {done.stderr.strip()}")
        to_network.append(arrived[0] - started)
        to_exit.append(ended - started)
    return to_network, to_exit


def heaviest_imports(workdir: str, count: int = 12) -> list[str]:
    """The imports of one `vera search` that took longest (cumulative, -X importtime)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:  # refuses nothing: the kernel queues it
        dsn = f"postgresql://vera@127.0.0.1:{listener.getsockname()[1]}/vera?connect_timeout=1"
        done = subprocess.run(  # noqa: S603
            [sys.executable, "-X", "importtime", VERA, "search", "x"],
            check=False, capture_output=True, text=True, env=_env(workdir, dsn), cwd=workdir,
        )  # fmt: skip
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
            rows.append((int(cumulative), name))
    return [f"  {us / 1e6:6.3f} s  {name}" for us, name in sorted(rows, reverse=True)[:count]]


def _line(what: str, seconds: list[float], target: float) -> str:
    best, median = min(seconds), statistics.median(seconds)
    verdict = "meets" if median <= target else "misses"
    return f"{what:<44} best {best:.3f} s, median {median:.3f} s ({verdict} the target {target:.1f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each command")
    parser.add_argument("--importtime", action="store_true", help="also list a search's heaviest imports")
    args = parser.parse_args()
    server = bench_server()
    with psycopg.connect(server.admin_url("postgres"), autocommit=True) as conn:
        print(cpu_reference(conn))
    with tempfile.TemporaryDirectory() as workdir:
        time_help(1, workdir)  # the first run reads the files from disk; the others find them cached
        print(f"{VERA}, {args.runs} runs each, load average {os.getloadavg()[0]:.2f}")
        print(_line("vera --help", time_help(args.runs, workdir), TARGETS["help"]))
        to_network, to_exit = time_to_network(args.runs, workdir)
        print(_line("vera search: start to first connection", to_network, TARGETS["network"]))
        exited = statistics.median(to_exit)
        print(f"{'vera search: start to exit (server hung up)':<44} median {exited:.3f} s")
        if args.importtime:
            print("heaviest imports of one `vera search` (cumulative):")
            print("\n".join(heaviest_imports(workdir)))


if __name__ == "__main__":
    main()
