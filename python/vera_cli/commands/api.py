"""`vera api serve`: the HTTP API (/v1, /openapi.json, /docs) and the web console (/console) on
its own port. The HTTP stack (vera_mcp) is imported when the server starts, not with this module."""

from __future__ import annotations

import logging
import sys

import click

from vera_cli.commands.mcp import serve_until_stopped
from vera_client.domain.errors import ConfigurationError


@click.group()
def api() -> None:
    """The HTTP API: /v1 for applications in any language, with OpenAPI at /openapi.json."""


@api.command("serve")
@click.option("--host", default=None, help="Address to listen on (VERA_MCP_HOST, default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port to listen on (VERA_MCP_API_PORT, default 8766).")
def serve(host: str | None, port: int | None) -> None:
    """Serve the HTTP API: Bearer tokens (API keys, OIDC), the MCP server's settings (VERA_MCP_*)."""
    from vera_mcp.adapters.logs import configure_json_logging
    from vera_mcp.config import read_settings
    from vera_mcp.entrypoints.wiring import api_settings, run_api, stderr_line

    try:
        overrides = {k: v for k, v in {"host": host, "api_port": port}.items() if v is not None}
        settings, vera = read_settings(**overrides)
    except ConfigurationError as error:
        stderr_line(str(error))
        sys.exit(2)
    configure_json_logging(logging.getLevelNamesMapping()[settings.log_level.upper()], sys.stderr)

    async def serving() -> None:
        base = api_settings(settings).base_url
        click.echo(
            f"vera api: serving {base}/v1 (docs at {base}/docs, web console at {base}/console; Ctrl-C stops)",
            err=True,
        )

    serve_until_stopped(run_api(settings, vera, ready=serving))
