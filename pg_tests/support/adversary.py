"""The adversarial suite's arena (pg_tests/security/test_adversary.py): three tenants
with overlapping data, every role of each, stale keys, and the oracle that
says whether anything an attacker got back belongs to another tenant.

Every tenant holds the same subject names, predicates, source names,
external ids, query words and snapshot names as the others, plus a unique
marker word in its texts, titles, configs and descriptions; the oracle
scans everything a call returned (rows and error messages) for the other
tenants' markers, group ids, row ids, principal ids and key prefixes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from pg_tests.support.databases import APP_LOGIN_LIMITS, Database
from pg_tests.support.searching import MODEL, embed, vector_literal
from vera_client.adapters.postgres.logins import app_login_role, create_app_login

TENANT_NAMES = ("Acme", "Bravo", "Corvo")
# The roles an attacker plays; "project_admin" is admin of the project only (no role in the organisation).
ROLES = ("owner", "admin", "member", "viewer", "service", "project_admin")
SHARED_TEXT = "payments-api runs on cluster blue"
SHARED_QUERY = "where does payments-api run cluster blue"
SNAPSHOT = "nightly"

UUID_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
GROUP_PATTERN = re.compile(r"[owpu]:[0-9a-f]{16}")


@dataclass
class Tenant:
    index: int
    name: str
    marker: str
    org: str = ""
    project: str = ""
    principals: dict[str, UUID] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    personal: dict[str, str] = field(default_factory=dict)
    # stale keys: revoked, expired, of a removed member, of a disabled principal
    stale_keys: dict[str, str] = field(default_factory=dict)
    # ids by kind: source, episode, chunk, fact, proposal, entity, snapshot, weight_set, feedback, key, principal
    ids: dict[str, list[UUID]] = field(default_factory=dict)
    key_prefixes: list[str] = field(default_factory=list)
    jobs: list[int] = field(default_factory=list)
    snapshot_names: list[str] = field(default_factory=list)
    seeded_at: Any = None

    @property
    def groups(self) -> list[str]:
        return [self.org, self.project, *self.personal.values()]

    def tokens(self) -> set[str]:
        """Everything that identifies this tenant's data: found in an answer to another tenant, a leak."""
        found = {self.marker, *self.groups, *self.key_prefixes}
        for values in self.ids.values():
            found.update(str(value) for value in values)
        found.update(str(principal) for principal in self.principals.values())
        return found


@dataclass
class Arena:
    db: Database
    tenants: list[Tenant]

    def others(self, tenant: Tenant) -> list[Tenant]:
        return [other for other in self.tenants if other is not tenant]

    def foreign_tokens(self, tenant: Tenant) -> set[str]:
        found: set[str] = set()
        for other in self.others(tenant):
            found |= other.tokens()
        return found


def login_role(tenant: Tenant) -> str:
    """The login role a tenant's application connects as: each its own (build_arena creates them)."""
    return app_login_role(f"adversary_{tenant.name.lower()}")


def _one(conn: psycopg.Connection, query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


@contextmanager
def acting(db: Database, key: str, isolation: str = "read committed") -> Iterator[psycopg.Connection]:
    """An application connection authenticated with `key` in one transaction, committed at the end."""
    with db.connect(autocommit=True) as conn:
        conn.execute(f"begin isolation level {isolation}")  # type: ignore[arg-type]
        conn.execute("select vera.authenticate(%s)", (key,))
        yield conn
        conn.execute("commit")


def _claims(tenant: Tenant, where: str) -> Jsonb:
    fact = f"{SHARED_TEXT} {tenant.marker} {where}"
    return Jsonb(
        [
            {
                "subject": "payments-api",
                "predicate": "runs on",
                "object": f"cluster {tenant.marker}",
                "functional": True,
                "fact_text": fact,
                "chunk": 0,
                "embedding": embed(fact),
                "subject_embedding": embed("payments-api"),
            },
            {
                "subject": "payments-api",
                "predicate": "owned by",
                "object": "team payments",
                "object_is_entity": True,
                "fact_text": f"payments-api owned by team payments {tenant.marker}",
                "chunk": 0,
            },
        ]
    )


def _chunks(tenant: Tenant, where: str) -> Jsonb:
    text = f"{SHARED_TEXT}; runbook {tenant.marker} {where}"
    return Jsonb([{"text": text, "heading": f"Runbook {tenant.marker}", "embedding": embed(text)}])


def _episode(conn: psycopg.Connection, group: str, source: UUID, external_id: str, tenant: Tenant) -> UUID:
    return _one(  # type: ignore[no-any-return]
        conn,
        "select episode_id from vera.record_episode(%s, %s, %s, %s, %s, 'text/markdown', null, %s, %s)",
        (
            group,
            source,
            external_id,
            hashlib.sha256(f"{external_id}/{tenant.marker}/{group}".encode()).digest(),
            f"objects/{tenant.marker}/{external_id}",
            f"Runbook {tenant.marker}",
            f"https://wiki.example/{tenant.marker}/{external_id}",
        ),
    )


def _source(conn: psycopg.Connection, group: str, name: str, tier: int, tenant: Tenant) -> UUID:
    return _one(  # type: ignore[no-any-return]
        conn,
        "select vera.register_source(%s, 'markdown', %s, %s, null, %s, %s)",
        (
            group,
            name,
            tier,
            Jsonb({"root": f"/srv/{tenant.marker}/{name}"}),
            f"file:///srv/{tenant.marker}/{name}",
        ),
    )


def _seed_tenant(db: Database, tenant: Tenant) -> None:
    with db.admin() as admin:
        org, owner, owner_key = admin.execute(
            "select * from vera.create_tenant(%s, %s, %s)",
            (tenant.name, f"Owner of {tenant.name}", f"owner@{tenant.name.lower()}.example"),
        ).fetchone()  # type: ignore[misc]
        # the folder sources' roots below (never read: no worker runs here)
        admin.execute("select vera.add_source_root(%s, %s)", (org, f"/srv/{tenant.marker}"))
    tenant.org = org
    tenant.principals["owner"] = owner
    tenant.keys["owner"] = owner_key

    with acting(db, owner_key) as conn:
        tenant.project = _one(conn, "select vera.create_group(%s, 'project', 'Payments')", (org,))
        for role, group, kind, grant in (
            ("admin", org, "user", "admin"),
            ("member", org, "user", "member"),
            ("viewer", org, "user", "viewer"),
            ("service", org, "service", "member"),
            ("project_admin", tenant.project, "user", "admin"),
            ("leaver", org, "user", "member"),
            ("disabled", org, "user", "member"),
        ):
            tenant.principals[role] = _one(
                conn,
                "select vera.create_principal(%s, %s, %s, %s, %s)",
                (group, kind, f"{role} of {tenant.name}", grant, f"{role}@{tenant.name.lower()}.example"),
            )

    with db.admin() as admin:
        for role, principal in tenant.principals.items():
            if role != "owner":
                tenant.keys[role] = _one(
                    admin, "select api_key from vera.issue_api_key(%s, 'attacker key', null)", (principal,)
                )
            tenant.personal[role] = _one(
                admin, "select personal_group_id from vera.principals where principal_id = %s", (principal,)
            )
        tenant.stale_keys["revoked"] = _one(
            admin,
            "select api_key from vera.issue_api_key(%s, 'revoked', null)",
            (tenant.principals["member"],),
        )
        admin.execute("update vera.api_keys set revoked_at = now() where name = 'revoked'")
        tenant.stale_keys["expired"] = _one(
            admin,
            "select api_key from vera.issue_api_key(%s, 'expired', now() + interval '1 hour')",
            (tenant.principals["viewer"],),
        )
        admin.execute(
            "update vera.api_keys set created_at = now() - interval '2 days', expires_at = now() - interval '1 day'"
            " where name = 'expired'"
        )
        tenant.stale_keys["disabled"] = tenant.keys.pop("disabled")
        admin.execute(
            "update vera.principals set disabled_at = now() where principal_id = %s",
            (tenant.principals["disabled"],),
        )

    # knowledge: as the owner, the same names everywhere
    org, project = tenant.org, tenant.project
    with acting(db, owner_key) as conn:
        conn.execute(
            "select vera.declare_predicate(%s, 'runs on', 'functional', %s)",
            (org, f"placement {tenant.marker}"),
        )
        conn.execute(
            "select vera.set_setting(%s, 'retract.cleanup_delay_seconds', %s)",
            (org, Jsonb(100 + tenant.index)),
        )
        for group in (org, project):
            docs = _source(conn, group, "docs", 1, tenant)
            episode = _episode(conn, group, docs, "runbook.md", tenant)
            conn.execute(
                "select vera.store_chunks(%s, %s, %s, %s)", (group, episode, _chunks(tenant, group), MODEL)
            )
            conn.execute(
                "select vera.publish_claims(%s, %s, %s, %s)", (group, episode, _claims(tenant, group), MODEL)
            )
            tickets = _source(conn, group, "tickets", 3, tenant)
            pending = _episode(conn, group, tickets, "runbook.md", tenant)
            conn.execute(
                "select vera.store_chunks(%s, %s, %s, %s)",
                (group, pending, _chunks(tenant, "pending"), MODEL),
            )
            conn.execute(
                "select vera.publish_claims(%s, %s, %s, %s)",
                (group, pending, _claims(tenant, "pending"), MODEL),
            )
        _source(conn, org, "wiki", 4, tenant)
        org_docs = _one(conn, "select source_id from vera.list_sources(%s) where name = 'docs'", (org,))
        old = _episode(conn, org, org_docs, "old.md", tenant)
        tenant.jobs.append(
            _one(conn, "select vera.retract_episode(%s, %s, %s)", (org, old, f"gone {tenant.marker}"))
        )
        owner_personal = tenant.personal["owner"]
        conn.execute(
            "select vera.publish_claims(%s, null, %s, %s)",
            (
                owner_personal,
                Jsonb([{k: v for k, v in c.items() if k != "chunk"} for c in _claims(tenant, "mine").obj]),
                MODEL,
            ),
        )

    # a member proposes (tier 4: a proposal in its u: scope, a proposed passage beside its episode)
    with acting(db, tenant.keys["member"]) as conn:
        wiki = _one(conn, "select source_id from vera.list_sources(%s) where name = 'wiki'", (org,))
        ideas = _episode(conn, org, wiki, "runbook.md", tenant)
        conn.execute(
            "select vera.store_chunks(%s, %s, %s, %s)", (org, ideas, _chunks(tenant, "proposed"), MODEL)
        )
        conn.execute(
            "select vera.publish_claims(%s, %s, %s, %s)", (org, ideas, _claims(tenant, "proposed"), MODEL)
        )
        docs = _one(conn, "select source_id from vera.list_sources(%s) where name = 'docs'", (org,))
        tenant.jobs.append(_one(conn, "select vera.request_ingest(%s, %s, null)", (org, docs)))

    # a viewer votes; the owner snapshots
    with acting(db, tenant.keys["viewer"]) as conn:
        hit = conn.execute(
            "select kind, item_id from vera.search(%s, %s::vector, k => 1, groups => array[%s])",
            (SHARED_QUERY, vector_literal(embed(SHARED_QUERY)), org),
        ).fetchone()
        assert hit is not None
        conn.execute("select vera.record_feedback(%s, %s, %s, 'up')", (hit[0], hit[1], SHARED_QUERY))
    tenant.snapshot_names = [SNAPSHOT, f"release {tenant.marker}"]
    with acting(db, owner_key, "repeatable read") as conn:
        for group in (org, project):
            for name in tenant.snapshot_names:
                conn.execute("select vera.create_snapshot(%s, %s)", (group, name))

    # a member who leaves keeps a key, which now reaches only its personal scope
    with acting(db, owner_key) as conn:
        conn.execute("select vera.remove_member(%s, %s)", (org, tenant.principals["leaver"]))
    tenant.stale_keys["removed_member"] = tenant.keys.pop("leaver")


# Each table's rows of a tenant: how to select them as the superuser.
def _tenant_rows_filter(table: str, columns: set[str]) -> str:
    if "group_id" in columns:
        return "group_id = any(%(groups)s)"
    if table in {"principals", "external_identities"}:
        return "principal_id = any(%(principals)s)"
    if table in {"api_keys", "api_key_usage"}:
        return "key_id in (select key_id from vera.api_keys where principal_id = any(%(principals)s))"
    raise AssertionError(f"no tenant filter for vera.{table}")


def table_columns(conn: psycopg.Connection, schema: str = "vera") -> dict[str, list[str]]:
    rows = conn.execute(
        """select c.relname, array_agg(a.attname::text order by a.attnum)
             from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
            where c.relnamespace = %s::regnamespace and c.relkind in ('r', 'p')
            group by c.relname order by c.relname""",
        (schema,),
    ).fetchall()
    return {name: list(columns) for name, columns in rows}


# Columns that change without any attacker: a key's last use is stamped when its own holder authenticates.
VOLATILE_COLUMNS = {"api_key_usage": {"last_used_at"}}
# Tables that are no tenant's rows: the per-backend context of the transaction in progress, and
# the transactions whose BM25 statistic changes apply at their commit (rows gone once committed).
UNFINGERPRINTED = {"auth_context", "term_stat_transactions"}


def fingerprint(db: Database, tenant: Tenant) -> dict[str, str]:
    """The superuser's digest of every row of every vera table that belongs to the tenant."""
    digests: dict[str, str] = {}
    with db.admin() as conn:
        principals = list(tenant.principals.values())
        for table, columns in table_columns(conn).items():
            if table in UNFINGERPRINTED:
                continue
            kept = [c for c in columns if c not in VOLATILE_COLUMNS.get(table, set())]
            where = _tenant_rows_filter(table, set(columns))
            row_text = (
                sql.SQL("({})::text").format(sql.SQL(", ").join(sql.Identifier(c) for c in kept))
                if len(kept) > 1
                else sql.SQL("({})::text").format(sql.Identifier(kept[0]))
            )
            query = sql.SQL(
                "select count(*), md5(coalesce(string_agg({row}, E'\\n' order by {row}), '')) from vera.{table} where {where}"
            ).format(row=row_text, table=sql.Identifier(table), where=sql.SQL(where))  # type: ignore[arg-type]
            count, digest = conn.execute(
                query, {"groups": tenant.groups, "principals": principals}
            ).fetchone()  # type: ignore[misc]
            digests[table] = f"{count}:{digest}"
        jobs = conn.execute(
            "select count(*), md5(coalesce(string_agg((id, status, args)::text, ',' order by id), ''))"
            " from procrastinate.procrastinate_jobs where args ->> 'group_id' = any(%s)",
            (tenant.groups,),
        ).fetchone()
        digests["procrastinate_jobs"] = f"{jobs[0]}:{jobs[1]}"  # type: ignore[index]
    return digests


def _collect_ids(db: Database, tenant: Tenant) -> None:
    with db.admin() as conn:

        def ids(query: str) -> list[UUID]:
            return [row[0] for row in conn.execute(query, {"g": tenant.groups})]  # type: ignore[arg-type]

        mine = "where group_id = any(%(g)s)"
        where_first = "array_position(%(g)s, group_id)"
        tenant.ids = {
            # in an order the data decides (ids are random): the same draws pick the same rows in every run
            "source": ids(f"select source_id from vera.sources {mine} order by {where_first}, name"),
            "episode": ids(
                f"select episode_id from vera.episodes {mine} order by {where_first}, external_id, version, title"
            ),
            "chunk": ids(f"select chunk_id from vera.chunks {mine} order by {where_first}, text"),
            "fact": ids(
                f"select fact_id from vera.facts {mine} and lifecycle <> 'proposal' order by {where_first}, fact_text"
            ),
            "proposal": ids(
                f"select fact_id from vera.facts {mine} and lifecycle = 'proposal' order by {where_first}, fact_text"
            ),
            "entity": ids(
                f"select entity_id from vera.entities {mine} order by {where_first}, canonical_name"
            ),
            "snapshot": ids(f"select snapshot_id from vera.snapshots {mine} order by {where_first}, name"),
            "weight_set": ids(
                f"select weight_set_id from vera.ranking_weights {mine} order by {where_first}"
            ),
            "feedback": ids(
                f"select feedback_id from vera.feedback {mine} order by {where_first}, query_text"
            ),
            "key": [
                row[0]
                for row in conn.execute(
                    "select k.key_id from vera.api_keys k join vera.principals p using (principal_id)"
                    " where k.principal_id = any(%s) order by p.display_name, k.name",
                    (list(tenant.principals.values()),),
                )
            ],
            "principal": list(tenant.principals.values()),
        }
        tenant.key_prefixes = [
            row[0]
            for row in conn.execute(
                "select k.prefix from vera.api_keys k join vera.principals p using (principal_id)"
                " where k.principal_id = any(%s) order by p.display_name, k.name",
                (list(tenant.principals.values()),),
            )
        ]
        tenant.jobs = [
            row[0]
            for row in conn.execute(
                "select id from procrastinate.procrastinate_jobs where args ->> 'group_id' = any(%s) order by id",
                (tenant.groups,),
            )
        ]
        tenant.seeded_at = _one(conn, "select now()")
    for kind in ("source", "episode", "chunk", "fact", "proposal", "entity", "snapshot", "feedback"):
        assert tenant.ids[kind], f"{tenant.name} has no {kind}"


def build_arena(db: Database) -> Arena:
    tenants = []
    for index, name in enumerate(TENANT_NAMES):
        marker = "zq" + hashlib.sha256(f"marker/{name}".encode()).hexdigest()[:10]
        tenants.append(Tenant(index=index, name=name, marker=marker))
    for tenant in tenants:
        create_app_login(db.admin_dsn, login_role(tenant), APP_LOGIN_LIMITS, exists_ok=True)
        _seed_tenant(db, tenant)
    with db.admin() as conn:
        # what autovacuum would have done by now: the statistics the planner and pg_stats show
        conn.execute("analyze")
    for tenant in tenants:
        _collect_ids(db, tenant)
    return Arena(db=db, tenants=tenants)


def leaked(text: str, forbidden: Iterable[str]) -> list[str]:
    """The forbidden tokens that occur in text."""
    return sorted(token for token in forbidden if token in text)
