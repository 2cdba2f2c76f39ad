"""`vera mcp serve`: the MCP server over stdio (one local agent) or streamable HTTP. The MCP
SDK and the HTTP stack (vera_mcp) are imported when the server starts, not with this module."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from types import FrameType
from typing import Any

import click

from vera_client.domain.errors import ConfigurationError, VeraError


class Terminated(Exception):
    """SIGTERM arrived: unwind, so that every `finally` of the server runs (the pool closed, the
    spans not yet exported flushed), then end of that signal."""


def _unwind(_signal: int, _frame: FrameType | None) -> None:
    raise Terminated


def _run(main: Coroutine[Any, Any, None]) -> None:
    """Run the server on uvloop where it is installed (a dependency except on Windows): its event
    loop takes about 2 ms off each HTTP round trip at p50 (docs/mcp.md, Latency); uvicorn would
    pick it by itself, but only for a loop of its own making, and this one is ours."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)


@click.group()
def mcp() -> None:
    """The MCP server: agents reach VERA over stdio or streamable HTTP."""


@mcp.command("serve")
@click.option(
    "--stdio", "transport", flag_value="stdio", help="One local agent client on stdin/stdout (VERA_API_KEY)."
)
@click.option(
    "--http", "transport", flag_value="http", help="Streamable HTTP at /mcp, Bearer tokens (API keys, OIDC)."
)
@click.option("--host", default=None, help="Address to listen on (VERA_MCP_HOST, default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port to listen on (VERA_MCP_PORT, default 8765).")
def serve(transport: str | None, host: str | None, port: int | None) -> None:
    """Serve VERA's tools to MCP clients: --stdio or --http."""
    if transport is None:
        raise click.UsageError("choose a transport: --stdio or --http")
    from vera_mcp.adapters.logs import configure_json_logging
    from vera_mcp.config import read_settings
    from vera_mcp.entrypoints.wiring import run_http, run_stdio, stderr_line

    try:
        overrides = {k: v for k, v in {"host": host, "port": port}.items() if v is not None}
        settings, vera = read_settings(**overrides)
    except ConfigurationError as error:
        stderr_line(str(error))
        sys.exit(2)
    # JSON lines on stderr: over stdio, stdout carries the protocol and nothing else
    configure_json_logging(logging.getLevelNamesMapping()[settings.log_level.upper()], sys.stderr)
    if transport == "stdio":
        serve_until_stopped(run_stdio(settings, vera, os.environ.get("VERA_API_KEY")))
        return

    async def serving() -> None:
        click.echo(f"vera mcp: serving {settings.base_url}/mcp (Ctrl-C stops)", err=True)

    serve_until_stopped(run_http(settings, vera, ready=serving))


def serve_until_stopped(main: Coroutine[Any, Any, None]) -> None:
    """Run a server (`vera mcp serve`, `vera api serve`) until Ctrl-C or SIGTERM, each failure to
    start as one line on stderr and its exit status (2: configuration, 1: VERA refused)."""
    from vera_mcp.entrypoints.wiring import StartupError, stderr_line

    # uvicorn shuts down gracefully on SIGTERM, then raises it again with the handler it found:
    # with the default one the process would die before the server's cleanup ran
    signal.signal(signal.SIGTERM, _unwind)
    try:
        _run(main)
    except StartupError as error:
        stderr_line(str(error))
        sys.exit(error.exit_code)
    except ConfigurationError as error:
        stderr_line(str(error))
        sys.exit(2)
    except VeraError as error:
        stderr_line(str(error))
        sys.exit(1)
    except KeyboardInterrupt:
        pass
    except Terminated:
        # cleaned up: now end as SIGTERM ends a process, so the exit status says why
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
