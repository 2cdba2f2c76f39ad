"""Times before the year 1 read from PostgreSQL.

VERA stores world times from 4714 BC (a claim valid from 15 March 44 BC, docs/time.md),
but Python's datetime starts at 0001-01-01, and psycopg refuses a BC timestamptz with a
DataError: one ancient fact among the hits would fail a whole search or read. These loaders
read such a time as `EARLIEST` (datetime.min in UTC): "before the year 1", which still sorts
before every time Python can hold. The exact time is in SQL (`valid_from::text`, or
`extract(year from valid_from)`); a program that needs BC dates reads them there. Later
times are read as psycopg reads them. Registered on every connection the executor opens."""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.datetime import TimestamptzBinaryLoader, TimestamptzLoader

EARLIEST = datetime.min.replace(tzinfo=UTC)

_INT8 = struct.Struct("!q")


class AncientTimestamptzLoader(TimestamptzLoader):
    """timestamptz in text form; a time before the year 1 ("... BC") reads as EARLIEST."""

    def load(self, data: Any) -> datetime:
        try:
            return super().load(data)
        except psycopg.DataError:
            if bytes(data).rstrip().endswith(b" BC"):
                return EARLIEST
            raise


class AncientTimestamptzBinaryLoader(TimestamptzBinaryLoader):
    """timestamptz in binary form (microseconds from 2000); a time before the year 1 reads as
    EARLIEST."""

    def load(self, data: Any) -> datetime:
        try:
            return super().load(data)
        except psycopg.DataError:
            if _INT8.unpack(bytes(data))[0] < 0:
                return EARLIEST
            raise


def register_ancient_times(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    """Read BC times on conn as EARLIEST instead of failing (ranges of them too: a range's
    loader reads its bounds with the loaders registered here)."""
    conn.adapters.register_loader("timestamptz", AncientTimestamptzLoader)
    conn.adapters.register_loader("timestamptz", AncientTimestamptzBinaryLoader)
