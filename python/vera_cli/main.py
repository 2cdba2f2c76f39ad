"""`vera`: one command line assembled from the parts each package contributes
(the client's database, search and source commands; the worker's worker,
ingest, demo and graph; the MCP server's mcp). Each part is a click group of its own, so that a package
adds commands without importing the others; only this module sees them all."""

from __future__ import annotations

import click

from vera_client.entrypoints.cli import commands as client_commands
from vera_mcp.entrypoints.cli import commands as mcp_commands
from vera_worker.entrypoints.cli import commands as worker_commands
from vera_worker.entrypoints.graph_cli import graph as graph_commands

PARTS: tuple[click.Group, ...] = (client_commands, worker_commands, mcp_commands)
# groups that are one command of their own (`vera graph ...`)
COMMAND_GROUPS: tuple[click.Group, ...] = (graph_commands,)


@click.group()
@click.version_option(package_name="vera")
def main() -> None:
    """VERA: a verified, time-aware knowledge memory inside PostgreSQL."""


for part in PARTS:
    for name, command in part.commands.items():
        if name in main.commands:  # two packages claiming one name is a bug, not a choice
            raise RuntimeError(f"`vera {name}` is contributed twice")
        main.add_command(command, name)
for group in COMMAND_GROUPS:
    if group.name in main.commands:
        raise RuntimeError(f"`vera {group.name}` is contributed twice")
    main.add_command(group)
