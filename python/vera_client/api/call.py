"""A call of the SQL API, described without running it: which named query (in the
area's .sql file beside its module), with which parameters, read by column name
into which result. The executor (adapters/postgres/executor.py) runs calls; this
module imports no database driver, so the rows and calls of every area can be
read by domain code and tested without a database.

Parameters are plain Python values; the few that PostgreSQL needs in a form of
its own are wrapped in a marker that the executor adapts: `Json` (jsonb),
`Embedding` (a pgvector vector, sent in binary) and `Period` (a tstzrange).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from vera_client.domain.time_scopes import TimeRange

T = TypeVar("T")
Rows = list[tuple[Any, ...]]
Reader = Callable[[Sequence[str], Rows], T]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One SQL API call: run `query` with `params` in an authenticated transaction, then `read`
    the rows. `repeatable_read`: the call needs one view of the data for all it reads."""

    query: str
    params: Mapping[str, Any]
    read: Reader[T]
    repeatable_read: bool = False


@dataclass(frozen=True, slots=True)
class Json:
    """A jsonb parameter."""

    value: Any


@dataclass(frozen=True, slots=True)
class Embedding:
    """A vector parameter (pgvector's binary format: float32)."""

    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Period:
    """A tstzrange parameter: [start, end), either end open when None."""

    start: datetime | None
    end: datetime | None


def json_or_none(value: Any) -> Json | None:
    return Json(value) if value is not None else None


def embedding(values: Sequence[float] | None) -> Embedding | None:
    return Embedding(tuple(float(v) for v in values)) if values is not None else None


def period(during: TimeRange | None) -> Period | None:
    """The period asked about as vera.search's during: days from midnight UTC, end exclusive."""
    if during is None:
        return None
    start, end = (
        datetime(d.year, d.month, d.day, tzinfo=UTC) if d is not None else None
        for d in (during.start, during.end)
    )
    return Period(start, end)


def listed(groups: Sequence[str] | None) -> list[str] | None:
    """A text[] parameter that may be null (null: every group the caller reads)."""
    return list(groups) if groups is not None else None


# --- readers: rows -> results. A reader that reads columns by name says which (`expects`), so
# that one test (pg_tests/client/test_api_rows.py) holds every query's result columns, as the catalog
# describes them, against the rows that read them: a spelling cannot drift.


@dataclass(frozen=True, slots=True)
class Columns:
    """The result columns a reader reads: those it needs, and all it may take."""

    required: frozenset[str]
    allowed: frozenset[str]


def row_columns(cls: type[Any], *, without: Iterable[str] = (), plus: Iterable[str] = ()) -> Columns:
    """The columns of a row dataclass: its fields without a default are needed; `without` are
    fields the reader fills itself, `plus` columns it reads into them."""
    left_out = set(without)
    kept = [f for f in fields(cls) if f.name not in left_out]
    required = {f.name for f in kept if f.default is MISSING and f.default_factory is MISSING}
    return Columns(frozenset(required | set(plus)), frozenset({f.name for f in kept} | set(plus)))


def expects(reader: Reader[T], columns: Columns) -> Reader[T]:
    """The reader, marked with the columns it reads."""
    reader.columns = columns  # type: ignore[attr-defined]
    return reader


def expected_columns(reader: Reader[Any]) -> Columns | None:
    """The columns a reader reads by name (None: it reads by position, or reads nothing)."""
    columns: Columns | None = getattr(reader, "columns", None)
    return columns


def scalar(_columns: Sequence[str], rows: Rows) -> Any:
    return rows[0][0] if rows else None


def nothing(_columns: Sequence[str], _rows: Rows) -> None:
    return None


def column(_columns: Sequence[str], rows: Rows) -> list[Any]:
    return [row[0] for row in rows]


def records(cls: type[T]) -> Reader[list[T]]:
    """Each row as cls, its fields by column name (the catalog test checks they match)."""

    def read(columns: Sequence[str], rows: Rows) -> list[T]:
        return [cls(**dict(zip(columns, row, strict=True))) for row in rows]

    return expects(read, row_columns(cls))


def record(cls: type[T]) -> Reader[T]:
    """The one row as cls."""
    many = records(cls)

    def read(columns: Sequence[str], rows: Rows) -> T:
        return many(columns, rows)[0]

    return expects(read, row_columns(cls))


def optional_record(cls: type[T]) -> Reader[T | None]:
    """The row as cls, or None when there is none."""
    many = records(cls)

    def read(columns: Sequence[str], rows: Rows) -> T | None:
        return many(columns, rows)[0] if rows else None

    return expects(read, row_columns(cls))
