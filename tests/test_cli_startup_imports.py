"""`vera` starts at once: `import vera_cli.main` and `vera --help` import no command, and a
command's module imports neither the worker's nor the server's stacks, nor psycopg, before the
command runs (benchmarks/cli_startup.py times it). Each runs in a fresh interpreter: this one
has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from vera_cli.main import COMMANDS, load

# what a command pays for only when it needs it
HEAVY = ("psycopg", "procrastinate", "mcp", "starlette", "uvicorn", "rich", "numpy", "onnxruntime", "httpx")
NOT_AT_START = (
    *HEAVY, "vera_worker", "vera_mcp", "vera_cli.commands", "vera_client.client", "vera_client.bootstrap"
)  # fmt: skip

# `vera worker` lists the queues it serves and the backlog threshold in its options' help: its
# module imports the worker's queue (Procrastinate) to name them
NEEDS_THE_WORKER_TO_LIST_ITS_OPTIONS = {"vera_cli.commands.worker"}


def _imported_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    ran = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)  # noqa: S603
    return json.loads(ran.stdout.splitlines()[-1])


def _heavy(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == name or m.startswith(f"{name}.") for name in names)]


def test_importing_the_command_imports_no_command() -> None:
    assert _heavy(_imported_after("import vera_cli.main"), NOT_AT_START) == []


def test_help_lists_every_command_without_importing_one() -> None:
    code = (
        "from vera_cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit as done:\n    assert done.code == 0\n"
    )
    assert _heavy(_imported_after(code), NOT_AT_START) == []


@pytest.mark.parametrize("module", sorted({entry.target.partition(":")[0] for entry in COMMANDS.values()}))
def test_a_command_module_imports_heavy_things_only_when_its_command_runs(module: str) -> None:
    if module in NEEDS_THE_WORKER_TO_LIST_ITS_OPTIONS:
        pytest.skip("its options name the worker's queues")
    assert _heavy(_imported_after(f"import {module}"), (*HEAVY, "vera_mcp")) == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_listing_says_what_each_command_says_of_itself(name: str) -> None:
    command = load(name)
    assert command.name == name
    first_paragraph = (command.help or "").split("\n\n")[0]
    assert " ".join(first_paragraph.split()) == COMMANDS[name].help
    assert isinstance(command, click.Command)
