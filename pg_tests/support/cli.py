"""The `vera` command line run in-process (click's runner) against a test server's database:
its environment, one run, a one-line error, a tenant's key (pg_tests/platform/test_cli*.py)."""

from __future__ import annotations

import json
import re
import tempfile

from click.testing import CliRunner, Result

from vera_cli.main import main
from vera_client.adapters.postgres.embedded import EmbeddedPostgres

KEY = re.compile(r"vera_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")


def vera_env(server: EmbeddedPostgres, database: str) -> dict[str, str]:
    return {
        "VERA_DB__DATA_DIR": str(server.data_dir),
        "VERA_DB__PORT": str(server.port),
        "VERA_DB__DATABASE": database,
        "VERA_DB__DSN": "",
        "VERA_DB__ADMIN_DSN": "",
        # the folders the tests register live below the temporary directory
        "VERA_WORKER__SOURCE_ROOTS": json.dumps([tempfile.gettempdir()]),
        # explicitly none: a demo's FalkorDB left beside the session's server by one test is
        # not found (and started) by the next (graph_wiring.graph_memory); tests that want it drop this
        "VERA_MEMORY__GRAPH_BACKEND": "none",
    }


def run_vera(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def one_line_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("vera: error: ")
    return lines[0]


def tenant_key(env: dict[str, str]) -> str:
    assert run_vera(["db", "migrate"], env).exit_code == 0
    created = run_vera(["tenant", "create", "Folders Inc", "--owner", "Fay"], env)
    found = KEY.search(created.output)
    assert found, created.output
    return found[0]
