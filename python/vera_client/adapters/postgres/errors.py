"""The one place where psycopg's exceptions become VeraErrors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from vera_client.domain.errors import DatabaseUnavailableError, VeraError, error_for_sqlstate

_PASSWORD_IN_URL = re.compile(r"(://[^:/@]+:)[^@]*@")
_PASSWORD_IN_KV = re.compile(r"(password\s*=\s*)\S+", re.IGNORECASE)


def redact(dsn: str) -> str:
    """A DSN safe to print: any password replaced by ***."""
    return _PASSWORD_IN_KV.sub(r"\1***", _PASSWORD_IN_URL.sub(r"\1***@", dsn))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def translate(exc: psycopg.Error) -> VeraError:
    """The VeraError for a database error, chosen by SQLSTATE."""
    message = exc.diag.message_primary or first_line(exc)
    return error_for_sqlstate(exc.sqlstate, message)


@contextmanager
def translated_errors() -> Iterator[None]:
    """Re-raise psycopg errors as VeraErrors (the original stays as __cause__)."""
    try:
        yield
    except psycopg.OperationalError as exc:
        if exc.sqlstate:
            raise translate(exc) from exc
        raise DatabaseUnavailableError(first_line(exc)) from exc
    except psycopg.Error as exc:
        raise translate(exc) from exc


def connect(dsn: str, *, connect_timeout: int = 10, autocommit: bool = False) -> psycopg.Connection:
    """Open a connection, or raise DatabaseUnavailableError with one readable line."""
    try:
        return psycopg.connect(dsn, connect_timeout=connect_timeout, autocommit=autocommit)
    except psycopg.Error as exc:
        raise DatabaseUnavailableError(f"cannot connect to {redact(dsn)}: {first_line(exc)}") from exc
    except ValueError as exc:  # a DSN psycopg cannot even parse
        raise DatabaseUnavailableError(f"invalid connection string {redact(dsn)}: {exc}") from exc
