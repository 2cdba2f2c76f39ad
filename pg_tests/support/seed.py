"""Two tenants with overlapping data: the same source names, entity names,
predicates and texts, so that any leak between them would show."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from uuid import UUID

import psycopg

from pg_tests.support.databases import INSPECTOR, Database

# Tables whose rows belong to a group, and so to a tenant.
KNOWLEDGE_TABLES = (
    "sources", "episodes", "chunks", "entities", "entity_aliases", "predicates",
    "facts", "feedback", "ranking_weights", "snapshots", "snapshot_items",
)  # fmt: skip
# Everything the application role may select from.
READABLE_TABLES = (*KNOWLEDGE_TABLES, "groups", "memberships", "principals", "audit_log")


@dataclass
class SeededTenant:
    organisation: str
    workspace: str
    owner: UUID
    owner_personal: str
    owner_key: str
    viewer: UUID
    viewer_key: str
    service: UUID
    groups: list[str] = field(default_factory=list)


def _one(conn: psycopg.Connection, sql: str, params: dict[str, object] | None = None) -> object:
    row = conn.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


# the folders the tests register live below the temporary directory
TEST_FOLDERS = (os.path.realpath(tempfile.gettempdir()),)


def allow_folders(conn: psycopg.Connection, organisation: str, *folders: str) -> None:
    """As an operator: the organisation's folder sources may lie below these folders (real paths)."""
    for folder in folders:
        conn.execute("select vera.add_source_root(%s, %s)", (organisation, os.path.realpath(folder)))


def seed_tenant(conn: psycopg.Connection, name: str) -> SeededTenant:
    """As the superuser (RLS does not apply): one organisation, fully populated."""
    org, owner, owner_key = conn.execute(
        "select * from vera.create_tenant(%s, 'Owner of ' || %s)", (name, name)
    ).fetchone()  # type: ignore[misc]
    owner_personal = _one(
        conn,
        "select personal_group_id from vera.principals where principal_id = %(p)s",
        {"p": owner},
    )
    allow_folders(conn, org, *TEST_FOLDERS)
    workspace = _one(
        conn,
        "insert into vera.groups (group_id, kind, parent_group_id, name) "
        "values (vera.new_group_id('workspace'), 'workspace', %(org)s, 'Engineering') returning group_id",
        {"org": org},
    )
    viewer = _one(conn, "select vera.insert_principal('user', 'Viewer of ' || %(n)s, null)", {"n": name})
    conn.execute(
        "insert into vera.memberships (group_id, principal_id, role) values (%s, %s, 'viewer')",
        (org, viewer),
    )
    viewer_key = _one(conn, "select api_key from vera.issue_api_key(%s, 'viewer key', null)", (viewer,))
    service = _one(
        conn,
        "select vera.insert_principal('service', 'ingest bot of ' || %(n)s, null)",
        {"n": name},
    )
    conn.execute(
        "insert into vera.memberships (group_id, principal_id, role) values (%s, %s, 'member')",
        (workspace, service),
    )

    for group in (org, workspace):
        _populate(conn, group, owner)
    conn.execute(
        "insert into vera.audit_log (group_id, principal_id, action) values (%s, %s, 'test.seed')",
        (org, owner),
    )
    return SeededTenant(
        organisation=str(org), workspace=str(workspace), owner=owner, owner_personal=str(owner_personal),
        owner_key=str(owner_key), viewer=viewer, viewer_key=str(viewer_key), service=service,  # type: ignore[arg-type]
        groups=[str(org), str(workspace), str(owner_personal)],
    )  # fmt: skip


def _populate(conn: psycopg.Connection, group: object, principal: object) -> None:
    """One row in every knowledge table, with texts shared across tenants."""
    p = {"g": group, "p": principal}
    source = _one(
        conn,
        "insert into vera.sources (group_id, kind, name, trust_tier) values (%(g)s, 'markdown', 'docs', 1) returning source_id",
        p,
    )
    p["s"] = source
    episode = _one(
        conn,
        "insert into vera.episodes (group_id, source_id, external_id, content_sha256) values (%(g)s, %(s)s, 'runbook.md', sha256('x')) returning episode_id",
        p,
    )
    p["e"] = episode
    chunk = _one(
        conn,
        "insert into vera.chunks (group_id, episode_id, ordinal, text) values (%(g)s, %(e)s, 0, 'payments-api runs on cluster blue') returning chunk_id",
        p,
    )
    p["c"] = chunk
    entity = _one(
        conn,
        "insert into vera.entities (group_id, canonical_name) values (%(g)s, 'payments-api') returning entity_id",
        p,
    )
    p["en"] = entity
    conn.execute(
        "insert into vera.entity_aliases (group_id, entity_id, alias, alias_norm) values (%(g)s, %(en)s, 'payments-api', vera.normalize_name('payments-api'))",
        p,
    )
    conn.execute(
        "insert into vera.predicates (group_id, name, cardinality) values (%(g)s, 'RUNS_ON', 'functional')",
        p,
    )
    fact = _one(
        conn,
        """insert into vera.facts (group_id, subject_entity_id, predicate, object_value, fact_text,
                 tier, authority, verification, lifecycle, source_id, episode_id, chunk_id)
                 values (%(g)s, %(en)s, 'RUNS_ON', 'cluster blue', 'payments-api runs on cluster blue',
                 1, 1.0, 'auto', 'published', %(s)s, %(e)s, %(c)s) returning fact_id""",
        p,
    )
    p["f"] = fact
    conn.execute(
        """insert into vera.feedback (group_id, principal_id, item_kind, item_id, query_text, query_sha256, vote, signals)
                    values (%(g)s, %(p)s, 'fact', %(f)s, 'where does payments-api run', sha256('q'), 1, '{1,1,1,1,1,1,NULL}')""",
        p,
    )
    weights = _one(
        conn,
        """insert into vera.ranking_weights (group_id, relevance, authority, verification, recency, feedback, confidence, active)
                            values (%(g)s, 0.40, 0.18, 0.12, 0.12, 0.08, 0.10, true) returning weight_set_id""",
        p,
    )
    p["w"] = weights
    snapshot = _one(
        conn,
        "insert into vera.snapshots (group_id, name, search_version, weight_set_id) values (%(g)s, 'nightly', 'v1', %(w)s) returning snapshot_id",
        p,
    )
    p["sn"] = snapshot
    conn.execute(
        """insert into vera.snapshot_items (group_id, snapshot_id, item_kind, item_id, text, tsv, recorded_at, episode_id)
                    values (%(g)s, %(sn)s, 'fact', %(f)s, 'payments-api runs on cluster blue',
                    to_tsvector('simple', 'payments-api runs on cluster blue'), now(), %(e)s)""",
        p,
    )


@dataclass
class World:
    db: Database
    a: SeededTenant
    b: SeededTenant
    revoked_key: str
    expired_key: str
    disabled_key: str


def seed_world(db: Database) -> World:
    """Two tenants, plus a revoked key, an expired key and a disabled principal's key."""
    with db.admin(autocommit=False) as conn:
        a = seed_tenant(conn, "Acme")
        b = seed_tenant(conn, "Bravo")
        revoked = conn.execute(
            "select api_key from vera.issue_api_key(%s, 'to revoke', null)", (a.owner,)
        ).fetchone()[0]  # type: ignore[index]
        conn.execute("update vera.api_keys set revoked_at = now() where name = 'to revoke'")
        expired = conn.execute(
            "select api_key from vera.issue_api_key(%s, 'to expire', now() + interval '1 hour')",
            (a.owner,),
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "update vera.api_keys set created_at = now() - interval '2 days', "
            "expires_at = now() - interval '1 day' where name = 'to expire'"
        )
        disabled_principal = conn.execute("select vera.insert_principal('user', 'Gone', null)").fetchone()[0]  # type: ignore[index]
        disabled = conn.execute(
            "select api_key from vera.issue_api_key(%s, 'of a disabled principal', null)",
            (disabled_principal,),
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "update vera.principals set disabled_at = now() where principal_id = %s",
            (disabled_principal,),
        )
        conn.commit()
    return World(db=db, a=a, b=b, revoked_key=revoked, expired_key=expired, disabled_key=disabled)


@contextmanager
def caller(database: Database, key: str | None, role: str = INSPECTOR) -> Iterator[psycopg.Connection]:
    """A connection of `role`, in a transaction authenticated with `key`, rolled back after.

    By default the inspector: the application's privileges, plus reading the
    tables to check what the calls wrote (see databases.INSPECTOR).
    """
    with database.connect(role) as conn:
        if key is not None:
            conn.execute("select vera.authenticate(%s)", (key,))
        try:
            yield conn
        finally:
            conn.rollback()


def create_project(world: World, name: str) -> str:
    """A new project group under tenant A's organisation, created by its owner (committed)."""
    with caller(world.db, world.a.owner_key) as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', %s)", (world.a.organisation, name)
        ).fetchone()
        conn.commit()
    assert group is not None
    return str(group[0])
