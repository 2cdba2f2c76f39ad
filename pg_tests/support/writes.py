"""Helpers for the write-path tests: sources, episodes and claims through the
application role, inside the caller's open transaction, by the same calls
(vera_client's executor and call mappings) as every other Python caller."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any
from uuid import UUID, uuid4

import psycopg

from vera_client.adapters.postgres.executor import Transaction
from vera_client.api import curation as curation_api
from vera_client.api import sources as sources_api
from vera_client.domain.errors import VeraError

# What a refused call raises: raw SQL, psycopg's error; a helper's call, the VeraError the
# executor translates it to. Both carry the SQLSTATE as .sqlstate.
SQL_ERRORS = (psycopg.Error, VeraError)


def functional_project(conn: psycopg.Connection, organisation: str, name: str) -> str:
    """A new project under the organisation, where 'runs on' is functional (one value at a time)."""
    group = conn.execute("select vera.create_group(%s, 'project', %s)", (organisation, name)).fetchone()
    assert group is not None
    conn.execute("select vera.declare_predicate(%s, 'runs on', 'functional')", (group[0],))
    return str(group[0])


def project_with_source(conn: psycopg.Connection, organisation: str, name: str) -> tuple[str, UUID]:
    """A new project of the organisation (its name made unique) and a tier-1 source in it."""
    row = conn.execute(
        "select vera.create_group(%s, 'project', %s)", (organisation, f"{name} {uuid4().hex[:8]}")
    ).fetchone()
    assert row is not None
    return str(row[0]), register_source(conn, row[0], "notes", 1)


def register_source(
    conn: psycopg.Connection, group: str, name: str, tier: int, kind: str = "markdown"
) -> UUID:
    return Transaction(conn).run(
        sources_api.register_source(group, kind, name, tier, token_env=None, config={}, uri=None)
    )


def record_episode(
    conn: psycopg.Connection, group: str, source: UUID, external_id: str, content: str, **extra: Any
) -> tuple[UUID, int, bool]:
    episode = Transaction(conn).run(
        sources_api.record_episode(
            group,
            source,
            external_id,
            hashlib.sha256(content.encode()).digest(),
            object_key=extra.get("object_key", f"objects/{external_id}"),
            mime="text/markdown",
            observed_at=extra.get("observed_at"),
            title=None,
            uri=None,
        )
    )
    return episode.episode_id, episode.version, episode.created


def publish(
    conn: psycopg.Connection,
    group: str,
    episode: UUID | None,
    claims: list[dict[str, Any]],
    model: str | None = None,
) -> list[dict[str, Any]]:
    published = Transaction(conn).run(curation_api.publish_claims(group, episode, claims, model))
    return [dataclasses.asdict(claim) for claim in published]


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
