"""`vera`: one command line assembled from the parts each package contributes
(the client's database, search, source and key commands; the worker's worker,
ingest and demo; the MCP server's mcp). Each part is a click group of its own, so that a package
adds commands without importing the others; only this module sees them all."""

from __future__ import annotations

import click

from vera_client.entrypoints.cli import commands as client_commands
from vera_client.entrypoints.keys import commands as key_commands
from vera_client.entrypoints.sources import commands as source_commands
from vera_mcp.entrypoints.cli import commands as mcp_commands
from vera_worker.entrypoints.cli import commands as worker_commands

PARTS: tuple[click.Group, ...] = (
    client_commands,
    source_commands,
    key_commands,
    worker_commands,
    mcp_commands,
)


@click.group()
@click.version_option(package_name="vera")
def main() -> None:
    """VERA: a verified, time-aware knowledge memory inside PostgreSQL."""


for part in PARTS:
    for name, command in part.commands.items():
        if name in main.commands:  # two packages claiming one name is a bug, not a choice
            raise RuntimeError(f"`vera {name}` is contributed twice")
        main.add_command(command, name)
