"""The planner's statistics in tests: forgotten, as in a database never
analyzed, with autovacuum kept off the tables meanwhile so that it cannot
analyze them under a test (it wakes once a minute, and a clone's freshly
written tables are due)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg


@contextmanager
def without_autovacuum(admin: psycopg.Connection, tables: list[str]) -> Iterator[None]:
    """Autovacuum off for these tables (schema-qualified) until the block ends."""
    for table in tables:
        admin.execute(f"alter table {table} set (autovacuum_enabled = false)")
    try:
        yield
    finally:
        for table in tables:
            admin.execute(f"alter table {table} reset (autovacuum_enabled)")


def clear_statistics(admin: psycopg.Connection, table: str) -> None:
    """What the planner knows of a table (schema-qualified) and of its indexes, forgotten."""
    indexes = admin.execute(
        "select indexrelid::regclass::text from pg_index where indrelid = %s::regclass", (table,)
    ).fetchall()
    for relation in [table, *(row[0] for row in indexes)]:
        schema, name = relation.split(".")
        admin.execute("select pg_clear_relation_stats(%s, %s)", (schema, name))
        admin.execute(
            """select pg_clear_attribute_stats(%s, %s, attname, false)
                 from pg_attribute where attrelid = %s::regclass and attnum > 0 and not attisdropped""",
            (schema, name, relation),
        )
