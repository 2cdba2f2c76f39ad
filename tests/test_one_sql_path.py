"""One way from Python into SQL: the executor (python/vera_client/adapters/postgres/executor.py).

Every package module is read (as Python, so a docstring or comment naming a call does not
count) for what opens a database connection of its own: a bare `connect(...)` (psycopg's, or
the operator paths' helper in errors.py), `psycopg.connect`, `Connection.connect` /
`AsyncConnection.connect`, or a psycopg_pool pool. Only the modules below may; anything
else (a job, a route, a connector, a command) runs its calls through an `Executor`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PYTHON = Path(__file__).resolve().parents[1] / "python"

# module (below python/) -> why it may open connections itself
ALLOWED = {
    "vera_client/adapters/postgres/executor.py": "the executor: its pools, and check_reachable's one plain "
    "connection before a pool is built",
    "vera_client/adapters/postgres/errors.py": "defines connect(), the operator paths' connection with one "
    "readable error",
    "vera_client/adapters/postgres/migrations.py": "the migration runner: DDL on the admin connection, "
    "outside the SQL API",
    "vera_client/adapters/postgres/provisioning.py": "operator tasks on the admin connection (CREATE INDEX "
    "CONCURRENTLY needs one connection out of any transaction)",
    "vera_client/adapters/postgres/logins.py": "creates and drops login roles on the admin connection",
}

_CONNECTION_CLASSES = {"psycopg", "Connection", "AsyncConnection"}


def _name(node: ast.expr) -> str:
    """The last name of a callee: `connect` for psycopg.AsyncConnection.connect, and so on."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def opens_connections(source: str) -> list[int]:
    """The lines of source that open a database connection or pool of their own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        bare_connect = isinstance(callee, ast.Name) and callee.id == "connect"
        class_connect = (
            isinstance(callee, ast.Attribute)
            and callee.attr == "connect"
            and _name(callee.value) in _CONNECTION_CLASSES
        )
        pool = _name(callee) in {"ConnectionPool", "AsyncConnectionPool"}
        if bare_connect or class_connect or pool:
            found.append(node.lineno)
    return found


def _modules() -> list[Path]:
    return sorted(PYTHON.rglob("*.py"))


@pytest.mark.parametrize(
    "snippet",
    [
        "connect(dsn)",
        "psycopg.connect(dsn)",
        "psycopg.AsyncConnection.connect(dsn)",
        "Connection.connect(dsn)",
        "psycopg_pool.ConnectionPool(dsn)",
        "AsyncConnectionPool(dsn)",
    ],
)
def test_the_check_sees_each_way_of_opening_a_connection(snippet: str) -> None:
    assert opens_connections(snippet) == [1]


def test_the_executor_and_a_client_connecting_through_it_are_told_apart() -> None:
    assert opens_connections("Executor.connect(dsn)\nAsyncVeraClient.connect(dsn)\npool.disconnect()") == []
    assert opens_connections('"""psycopg.connect(dsn) in a docstring"""') == []


def test_only_the_executor_and_the_operator_paths_open_connections() -> None:
    offenders = []
    for path in _modules():
        relative = path.relative_to(PYTHON).as_posix()
        if relative in ALLOWED:
            continue
        offenders += [f"{relative}:{line}" for line in opens_connections(path.read_text(encoding="utf-8"))]
    assert offenders == [], (
        "these open a connection of their own; run the calls through an Executor "
        "(vera_client/adapters/postgres/executor.py) instead"
    )


def test_every_allowed_module_exists_and_opens_connections() -> None:
    """The list above stays true: a module that no longer opens connections leaves it."""
    for relative in ALLOWED:
        assert opens_connections((PYTHON / relative).read_text(encoding="utf-8")), relative
