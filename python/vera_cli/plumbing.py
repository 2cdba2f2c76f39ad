"""What every `vera` command shares: a user's mistake ends in one line on stderr and a non-zero
exit, never a traceback; --api-key; the database and the client as the environment configures
them. Light to import: the settings, psycopg and the client are imported when a command asks
for them, so that `vera ... --help` and a command's start do not pay for them."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, ParamSpec, TypeVar

import click

from vera_client.domain.errors import ConfigurationError, VeraError

if TYPE_CHECKING:
    from vera_client.bootstrap import Database
    from vera_client.client import VeraClient

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str) -> NoReturn:
    click.echo(f"vera: error: {message}", err=True)
    sys.exit(1)


def friendly_errors(command: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except VeraError as exc:
            fail(str(exc))
        except Exception as exc:
            # a ValidationError comes from pydantic, which has been imported by then (the settings)
            from pydantic import ValidationError

            if not isinstance(exc, ValidationError):
                raise
            problem = exc.errors()[0]
            where = "__".join(str(part) for part in problem["loc"]).upper()
            fail(f"invalid setting VERA_{where}: {problem['msg']}")
        raise AssertionError("unreachable")  # pragma: no cover

    return wrapper


MISSING_KEY = "set VERA_API_KEY or pass --api-key"


def _require_api_key(_context: click.Context, _param: click.Parameter, value: str | None) -> str:
    if not value:
        fail(MISSING_KEY)
    return value


def api_key_option(purpose: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """--api-key (or VERA_API_KEY) of a command that acts as a caller; missing, one line says so."""
    return click.option("--api-key", envvar="VERA_API_KEY", callback=_require_api_key, help=purpose)


def database_from_env(tcp: bool | None = None) -> Database:
    from vera_client.bootstrap import build_database
    from vera_client.config import read_settings

    settings = read_settings()
    if tcp is not None and tcp != settings.db.tcp:
        settings = settings.model_copy(update={"db": settings.db.model_copy(update={"tcp": tcp})})
    database = build_database(settings)
    if database.server is not None:  # what the embedded server did beyond its data: one line on stderr
        database.server.notice = lambda message: click.echo(f"vera: {message}", err=True)
    return database


def require_embedded(database: Database) -> None:
    if database.server is None:
        raise ConfigurationError(
            "VERA_DB__DSN points at an external PostgreSQL; the embedded server is not used"
        )


def start_if_embedded(database: Database) -> None:
    if database.server is not None:
        database.server.start()


def ensure_local_app_login(database: Database) -> None:
    """The embedded server's application login, created (or given its limits) after a migrate."""
    if database.server is not None:
        from vera_client.adapters.postgres import embedded, provisioning

        provisioning.create_app_login(
            database.admin_dsn, embedded.APP_ROLE, embedded.APP_LIMITS, exists_ok=True
        )


def client_from_env(api_key: str, database: Database | None = None) -> VeraClient:
    """The typed client as the environment configures it (the embedded server started if it is used).

    One plain connection first: a wrong or unreachable DSN is one line at once, rather than a
    connection pool retrying (and logging each attempt) until its timeout."""
    if database is None:
        database = database_from_env()
        start_if_embedded(database)
    check_reachable(database, database.app_dsn)
    from vera_client.client import VeraClient

    return VeraClient.from_settings(api_key, database.settings)


def check_reachable(database: Database, dsn: str) -> None:
    """DatabaseUnavailableError, in one line, unless one plain connection to dsn opens (before a
    pool is built on it: a pool retries and logs each failed attempt until its timeout)."""
    from vera_client.adapters.postgres.executor import check_reachable as reachable

    reachable(dsn, connect_timeout=database.settings.db.connect_timeout)
