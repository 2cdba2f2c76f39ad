"""`vera`: one command line assembled from the parts each package contributes
(the client's database, search, source and key commands; the worker's worker,
ingest, demo and graph; the MCP server's mcp). Each part is a click group of its own, so that a package
adds commands without importing the others; only this module sees them all.

The worker's and the server's parts need their extras ([worker], [server]); a
slim install of the client has the client's commands, and naming a command of
a missing part says which extra adds it, in one line."""

from __future__ import annotations

import importlib

import click

from vera_client.distribution import DISTRIBUTION, install_hint
from vera_client.entrypoints.cli import commands as client_commands
from vera_client.entrypoints.keys import commands as key_commands
from vera_client.entrypoints.sources import commands as source_commands

# (module contributing `commands`, the extra that installs what it imports)
OPTIONAL_PARTS = (
    ("vera_worker.entrypoints.cli", "worker"),
    ("vera_worker.entrypoints.graph_cli", "worker"),
    ("vera_mcp.entrypoints.cli", "server"),
)


def _parts() -> tuple[list[click.Group], list[tuple[str, str]]]:
    """The parts that import here, and (missing module, extra) for those that do not."""
    found, missing = [client_commands, source_commands, key_commands], []
    for module, extra in OPTIONAL_PARTS:
        try:
            found.append(importlib.import_module(module).commands)
        except ModuleNotFoundError as exc:
            if (exc.name or "").startswith("vera_"):  # our own code missing is a bug, not an extra
                raise
            missing.append((exc.name or "?", extra))
    return found, missing


PARTS, MISSING = _parts()


class _Vera(click.Group):
    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and MISSING:
            extras = " or ".join(dict.fromkeys(install_hint(extra) for _, extra in MISSING))  # each once
            ctx.fail(
                f"no command `vera {cmd_name}` here; the worker's and the server's commands need: {extras}"
            )
        return command


@click.group(cls=_Vera)
@click.version_option(package_name=DISTRIBUTION)
def main() -> None:
    """VERA: a verified, time-aware knowledge memory inside PostgreSQL."""


for part in PARTS:
    for name, command in part.commands.items():
        if name in main.commands:  # two packages claiming one name is a bug, not a choice
            raise RuntimeError(f"`vera {name}` is contributed twice")
        main.add_command(command, name)
