"""`vera`: one command line over the client (database, search, sources, keys, tenants), the
worker (worker, ingest, reprocess, demo, graph) and the MCP server (mcp).

The command starts at once: this module names each command, its one-line help and where it
lives, and imports a command's module only when that command runs, so `vera --help` imports
none of them and `vera search` none of the worker's or the server's code. The worker's and the
server's commands need their extras ([worker], [server]); on an install without one, its
commands are not listed, and naming one says which extra adds it, in one line."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

import click

from vera_client.distribution import DISTRIBUTION, install_hint


@dataclass(frozen=True, slots=True)
class Entry:
    """A command as `vera --help` lists it, and the "module:attribute" of its click command."""

    target: str
    help: str  # the first paragraph of the command's help (tests/test_cli_startup_imports.py checks it)
    extra: str | None = None  # the extra its modules need, when the base install lacks them


# the top-level imports an extra brings, probed (not imported) to tell whether it is installed
EXTRA_MODULES = {
    "worker": ("procrastinate", "yaml", "charset_normalizer", "rich", "markdown_it", "prometheus_client"),
    "server": ("mcp", "starlette", "uvicorn", "joserfc", "opentelemetry", "prometheus_client"),
}

_SEARCH = "vera_cli.commands.search"
COMMANDS = {
    "api": Entry(
        "vera_cli.commands.api:api",
        "The HTTP API: /v1 for applications in any language, with OpenAPI at /openapi.json.",
        "server",
    ),
    "calibrate": Entry(
        f"{_SEARCH}:calibrate_command",
        "Derive GROUP's blend weights from its votes (the mean-difference rule).",
    ),
    "db": Entry("vera_cli.commands.db:db", "The database: embedded server lifecycle and migrations."),
    "demo": Entry(
        "vera_cli.commands.demo:demo",
        "Start the embedded PostgreSQL, ingest the example corpus through the worker, and ask it questions.",
        "worker",
    ),
    "eval": Entry(
        f"{_SEARCH}:eval_command", "Score a golden set with the real vera.search: hit@k, MRR, nDCG@10."
    ),
    "extract": Entry(
        "vera_cli.commands.extract:extract_command",
        "Send a group's passages no model has been through to the extraction model, after an estimate.",
        "worker",
    ),
    "feedback": Entry(
        f"{_SEARCH}:feedback_command", "Vote on a hit (KIND ITEM_ID from `vera search --json`) of a query."
    ),
    "graph": Entry(
        "vera_cli.commands.graph:graph",
        "The graph projection of published knowledge: rebuild, check, explore, serve.",
    ),
    "ingest": Entry(
        "vera_cli.commands.ingest:ingest_command",
        "Read a registered source (PATH or --source: its name), or the part of one at PATH, incrementally.",
        "worker",
    ),
    "key": Entry("vera_cli.commands.keys:key", "Your API keys: create, list, revoke, rotate."),
    "member": Entry(
        "vera_cli.commands.members:member",
        "Offboarding: disable or enable a member, list and revoke a member's keys (admins).",
    ),
    "mcp": Entry(
        "vera_cli.commands.mcp:mcp",
        "The MCP server: agents reach VERA over stdio or streamable HTTP.",
        "server",
    ),
    "reprocess": Entry(
        "vera_cli.commands.ingest:reprocess_command",
        "Extract the group's passages again with the configured extraction model.",
        "worker",
    ),
    "search": Entry(
        f"{_SEARCH}:search_command",
        "Ranked, cited hits for QUERY (hybrid when the groups' pinned embedder runs here); a period its words"
        ' state ("from 1811 to 1827") is asked about, and said.',
    ),
    "source": Entry(
        "vera_cli.commands.sources:source", "Sources: where knowledge comes from, and how far it is trusted."
    ),
    "tenant": Entry("vera_cli.commands.tenant:tenant", "Tenants (organisations), for operators."),
    "weights": Entry(
        "vera_cli.commands.weights:weights",
        "A group's blend weights: the calibrated sets' history, and rollback to an earlier set.",
    ),
    "worker": Entry(
        "vera_cli.commands.worker:worker_command",
        "Run the worker: ingestion runs, embeddings, graph projection, judges, cleanup after retraction.",
        "worker",
    ),
}


def installed(extra: str | None) -> bool:
    return extra is None or all(importlib.util.find_spec(name) is not None for name in EXTRA_MODULES[extra])


def load(name: str) -> click.Command:
    """The click command of `vera name` (its module imported now)."""
    module, _, attribute = COMMANDS[name].target.partition(":")
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command)
    return command


class _Vera(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, entry in COMMANDS.items() if installed(entry.extra))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is not None and installed(entry.extra):
            return load(cmd_name)
        missing = [extra for extra in EXTRA_MODULES if not installed(extra)]
        if missing:
            extras = " or ".join(install_hint(extra) for extra in missing)
            ctx.fail(
                f"no command `vera {cmd_name}` here; the worker's and the server's commands need: {extras}"
            )
        return None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their one-line help, as click lists them, without importing them."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, click.Command(name, help=COMMANDS[name].help).get_short_help_str(limit)) for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_Vera)
@click.version_option(package_name=DISTRIBUTION)
def main() -> None:
    """VERA: a verified, time-aware knowledge memory inside PostgreSQL."""
