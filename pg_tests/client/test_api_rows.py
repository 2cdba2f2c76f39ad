"""Each row is spelled once: every named query's result columns, as PostgreSQL describes the
prepared statement (nothing runs), hold the columns its reader reads (vera_client/api/call.py
`expects`): a column renamed in SQL, or a field added to a row dataclass, fails here.

The calls are found by introspection: every function of the API's areas that returns a `Call`
is called with placeholder arguments, and every named query must be made by one of them (or
be one of the few the executor and the operator's tools run themselves)."""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest

from pg_tests.support.databases import Database
from vera_client.api import (
    access,
    call,
    context,
    curation,
    health,
    idempotency,
    jobs,
    operator,
    reads,
    search,
    snapshots,
    sources,
    weights,
)
from vera_client.api.call import Call, expected_columns
from vera_client.api.queries import all_queries

AREAS = (
    access,
    sources,
    curation,
    search,
    snapshots,
    reads,
    context,
    jobs,
    operator,
    weights,
    idempotency,
    health,
)
# run by the executor (authentication) and by adapters/postgres/logins.py on an operator
# connection, not through a Call
RUN_DIRECTLY = {"authenticate", "authenticate_principal", "app_login_exists", "app_logins",
                "end_app_login_sessions", "app_login_databases"}  # fmt: skip
SKIP = object()


def _placeholder(annotation: Any) -> Any:  # noqa: PLR0911 (one return per kind of type reads best)
    """A value of the annotated type, or SKIP when none is simple to make."""
    if annotation is Any:
        return None
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        hints = typing.get_type_hints(annotation)
        values = {f.name: _placeholder(hints[f.name]) for f in dataclasses.fields(annotation) if f.init}
        return SKIP if SKIP in values.values() else annotation(**values)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return None if type(None) in typing.get_args(annotation) else SKIP
    origin = typing.get_origin(annotation) or annotation
    simple = {str: "x", int: 1, float: 1.0, bool: False, bytes: b"x", datetime: datetime.now(UTC)}
    if origin in simple:
        return simple[origin]
    if origin.__name__ == "UUID":
        return uuid4()
    if origin in (list, Sequence, tuple):
        return []
    if origin in (dict, Mapping):
        return {}
    return SKIP


def _calls() -> Iterator[tuple[str, Call[Any]]]:
    for area in AREAS:
        for name, function in inspect.getmembers(area, inspect.isfunction):
            if function.__module__ != area.__name__:
                continue
            hints = typing.get_type_hints(function)
            if typing.get_origin(hints.get("return")) is not Call:
                continue
            arguments = {}
            for parameter in inspect.signature(function).parameters.values():
                if parameter.default is inspect.Parameter.empty:
                    arguments[parameter.name] = _placeholder(hints[parameter.name])
            assert SKIP not in arguments.values(), f"{name}: teach _placeholder its arguments' types"
            yield f"{area.__name__.rsplit('.', 1)[-1]}.{name}", function(**arguments)


CALLS = dict(_calls())


def _result_columns(conn: Any, sql: str) -> list[str]:
    """The columns of a query's result as the server describes its prepared statement."""
    names: list[str] = []

    def numbered(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    statement = re.sub(r"%\((\w+)\)s", numbered, sql).encode()
    prepared = conn.pgconn.prepare(b"api_rows", statement)
    assert prepared.status == 1, prepared.error_message.decode()  # PGRES_COMMAND_OK
    described = conn.pgconn.describe_prepared(b"api_rows")
    conn.pgconn.exec_(b"deallocate api_rows")
    return [described.fname(i).decode() for i in range(described.nfields)]


@pytest.fixture(scope="module")
def described(db: Database) -> dict[str, list[str]]:
    with db.admin() as conn:
        return {name: _result_columns(conn, sql) for name, sql in all_queries().items()}


def test_every_named_query_is_made_by_a_call_or_run_directly() -> None:
    made = {c.query for c in CALLS.values()}
    assert set(all_queries()) - made == RUN_DIRECTLY, (
        f"queries no call makes: {set(all_queries()) - made - RUN_DIRECTLY}"
    )
    assert made <= set(all_queries()), "calls of queries that do not exist"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_call_reads_the_columns_its_query_returns(name: str, described: dict[str, list[str]]) -> None:
    made = CALLS[name]
    columns = expected_columns(made.read)
    returned = described[made.query]
    if columns is None:
        # read by position (a scalar, a list of values, or nothing): at most one column, or the
        # pairs explore_starts reads
        assert len(returned) <= 1 or made.query == "explore_starts", returned
        return
    assert len(returned) == len(set(returned)), f"{made.query} names a column twice: {returned}"
    missing = columns.required - set(returned)
    unread = set(returned) - columns.allowed
    assert not missing and not unread, f"{made.query}: not returned {missing}, not read {unread}"


def test_the_markers_reach_sql_as_their_types(db: Database) -> None:
    """What the executor adapts (api/call.py's markers) arrives as jsonb, vector and tstzrange."""
    from vera_client.adapters.postgres.executor import parameters  # noqa: PLC0415

    marked = Call(
        "x",
        {"j": call.Json({"a": [1]}), "v": call.Embedding((1.0, 2.5)),
         "p": call.period(None), "r": call.Period(datetime(2026, 1, 1, tzinfo=UTC), None)},
        call.scalar,
    )  # fmt: skip
    with db.admin() as conn:
        from pgvector.psycopg import register_vector  # noqa: PLC0415

        register_vector(conn)
        row = conn.execute(
            "select pg_typeof(%(j)s)::text, %(j)s ->> 'a', pg_typeof(%(v)s)::text, %(v)s::text,"
            " %(p)s::tstzrange is null, lower(%(r)s::tstzrange) = '2026-01-01Z', upper_inf(%(r)s::tstzrange)",
            parameters(marked),
        ).fetchone()
    assert row == ("jsonb", "[1]", "vector", "[1,2.5]", True, True, True)
