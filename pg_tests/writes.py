"""Helpers for the write-path tests: sources, episodes and claims through the
application role, inside the caller's transaction."""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb


def register_source(
    conn: psycopg.Connection, group: str, name: str, tier: int, kind: str = "markdown"
) -> UUID:
    row = conn.execute("select vera.register_source(%s, %s, %s, %s)", (group, kind, name, tier)).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def record_episode(
    conn: psycopg.Connection, group: str, source: UUID, external_id: str, content: str, **extra: Any
) -> tuple[UUID, int, bool]:
    row = conn.execute(
        "select * from vera.record_episode(%(g)s, %(s)s, %(x)s, %(h)s, %(k)s, 'text/markdown', coalesce(%(at)s, now()))",
        {
            "g": group,
            "s": source,
            "x": external_id,
            "h": hashlib.sha256(content.encode()).digest(),
            "k": extra.get("object_key", f"objects/{external_id}"),
            "at": extra.get("observed_at"),
        },
    ).fetchone()
    assert row is not None
    return row[0], row[1], row[2]


def publish(
    conn: psycopg.Connection,
    group: str,
    episode: UUID | None,
    claims: list[dict[str, Any]],
    model: str | None = None,
) -> list[dict[str, Any]]:
    cursor = conn.execute(
        "select * from vera.publish_claims(%s, %s, %s, %s)", (group, episode, Jsonb(claims), model)
    )
    names = [column.name for column in cursor.description or []]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def claim(subject: str, predicate: str, obj: str, **extra: Any) -> dict[str, Any]:
    return {"subject": subject, "predicate": predicate, "object": obj, **extra}


def facts_of(
    conn: psycopg.Connection, where: str = "true", params: tuple[Any, ...] = ()
) -> list[dict[str, Any]]:
    cursor = conn.execute(
        "select f.*, e.canonical_name as subject from vera.facts f "  # type: ignore[arg-type]
        "join vera.entities e on e.group_id = f.group_id and e.entity_id = f.subject_entity_id "
        f"where {where} order by f.valid_from, f.recorded_at",
        params,
    )
    names = [column.name for column in cursor.description or []]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
