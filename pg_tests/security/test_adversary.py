"""The adversarial suite: three tenants with overlapping data, every role of
each, and a randomized attacker (one fixed seed, so every run tries the same
things) that tries to read or change the other tenants' data through every
door: each function of the SQL API, each table, the authentication context,
stale and forged keys, as_of and snapshots, and the server's side channels.

The arena and the oracle are in pg_tests/support/adversary.py and pg_tests/support/attacks.py.
Every attempt is checked (nothing returned names another tenant; a refusal
is a documented SQLSTATE; another tenant's value answers as a value that
exists nowhere), and the superuser's fingerprint of every other tenant's
rows, in every vera table, is the same after each tenant's attackers are
done as before.

Each tenant's application connects with its own login role. The one open
finding is a strict xfail, so that closing it shows: group ids in the names
and predicates of per-group HNSW indexes, which every role reads in the
catalog (docs/sql-api.md, "Security model"). Closed since the suite was
written: EXPLAIN counts and estimates (issue 11 finding 1), pg_stat_activity,
cancel/terminate and ALTER ROLE across tenants (finding 2), authenticate in
a READ ONLY transaction (now 25000 with a clear message, was 25006).
Attempts per (role, channel) are bounded: the module takes about 25 s on two
shared cores.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.adversary import (
    ROLES,
    SHARED_QUERY,
    SHARED_TEXT,
    SNAPSHOT,
    Arena,
    Tenant,
    build_arena,
    fingerprint,
    leaked,
    login_role,
    table_columns,
)
from pg_tests.support.attacks import (
    DOCUMENTED_SQLSTATES,
    Attacker,
    Attempt,
    Draw,
    Foreign,
    Tally,
    call_sql,
    callable_functions,
    execute,
    function_attempt,
)
from pg_tests.support.databases import Database
from pg_tests.support.searching import embed, vector_literal

SEED = 20261201
# attempts per (role, function): every function of the SQL API, several draws each
PER_FUNCTION = 3

TALLY = Tally()


@pytest.fixture(scope="module")
def arena(db: Database) -> Arena:
    return build_arena(db)


def _rng(channel: str) -> random.Random:
    return random.Random(f"{SEED}/{channel}")  # noqa: S311 (reproducible on purpose)


def _attack(arena: Arena, channel: str, plan: Callable[[Draw, Attacker], None], floor: int) -> None:
    """Every role of every tenant runs `plan`; the other tenants' rows must not change; at least
    `floor` attempts are made."""
    rng = _rng(channel)
    started = len(TALLY.findings)
    attempts = TALLY.total()
    clock = time.monotonic()
    for tenant in arena.tenants:
        before = {other.name: fingerprint(arena.db, other) for other in arena.others(tenant)}
        for role in ROLES:
            attacker = Attacker(arena, tenant, role, tenant.keys[role], TALLY)
            try:
                plan(Draw(rng, arena, tenant, role), attacker)
            finally:
                attacker.close()
        for other in arena.others(tenant):
            after = fingerprint(arena.db, other)
            changed = sorted(t for t in after if after[t] != before[other.name][t])
            if changed:
                TALLY.findings.append(
                    f"{tenant.name}'s attackers changed {other.name}'s rows in {changed} ({channel})"
                )
    made = TALLY.total() - attempts
    print(
        f"adversary {channel}: {made} attempts by {len(ROLES)} roles of {len(arena.tenants)} tenants"
        f" in {time.monotonic() - clock:.1f}s"
    )
    assert made >= floor, f"{channel}: only {made} attempts"
    findings = TALLY.findings[started:]
    assert not findings, "\n".join(findings[:40])


def test_the_oracle_sees_a_leak_and_a_change(arena: Arena) -> None:
    """The oracle is not vacuous: a connection that bypasses row-level security (the superuser)
    leaks, a ghost that answers unlike its real value is an existence oracle, and a change to
    another tenant's row changes its fingerprint."""
    me, foe = arena.tenants[0], arena.tenants[1]
    tally = Tally()
    attacker = Attacker(arena, me, "viewer", me.keys["viewer"], tally)
    attacker.conn.close()
    attacker.conn = arena.db.admin()
    try:
        attacker.attempt(Attempt("canary", "superuser reads", "select * from vera.facts"))
        draw = Draw(_rng("canary"), arena, me, "viewer")
        attacker.attempt(Attempt("canary", "exists", "select * from vera.sources where source_id = %(s)s",
                                 {"s": draw.foreign_id("source", foe)}))  # fmt: skip
    finally:
        attacker.close()
    assert any("another tenant's" in finding and foe.marker in finding for finding in tally.findings)
    assert any("answers unlike a value that exists nowhere" in finding for finding in tally.findings)
    before = fingerprint(arena.db, foe)
    with arena.db.admin() as admin:
        admin.execute("update vera.sources set uri = uri || '#' where group_id = %s", (foe.org,))
        assert fingerprint(arena.db, foe) != before
        admin.execute("update vera.sources set uri = left(uri, -1) where group_id = %s", (foe.org,))
    assert fingerprint(arena.db, foe) == before


def test_every_function_of_the_sql_api(arena: Arena) -> None:
    with arena.db.admin() as conn:
        functions = callable_functions(conn)
    assert len(functions) >= 50

    def plan(draw: Draw, attacker: Attacker) -> None:
        for function in functions:
            for _ in range(PER_FUNCTION if function.arguments else 1):
                attacker.attempt(function_attempt(draw, function))

    _attack(arena, "functions", plan, floor=len(functions) * len(ROLES) * len(arena.tenants) * 2)


# PostgreSQL's own refusal of direct access: no privilege (42501)
TABLE_REFUSALS = frozenset({"42501"})
# attempts per (role, table): the select of everything, plus this many drawn operations
PER_TABLE = 3
TABLE_OPERATIONS = {
    "select foreign": "select * from {table} t where strpos(t::text, %(value)s::text) > 0",
    "count foreign": "select count(*) from {table} t where strpos(t::text, %(value)s::text) > 0",
    "copy query": "copy (select * from {table}) to stdout",
    "copy table": "copy {table} to stdout",
    # the value is cast when the row is built, after the privilege check (a parameter of the column's type
    # would be parsed when bound, before it)
    "insert": "insert into {table} ({column}) select cast(%(value)s::text as {type})",
    "insert copy": "insert into {table} ({column}) select {column} from {table}",
    "update foreign": "update {table} t set {column} = {column} where strpos(t::text, %(value)s::text) > 0",
    "delete foreign": "delete from {table} t where strpos(t::text, %(value)s::text) > 0",
    "truncate": "truncate {table}",
    "lock": "lock table {table} in access exclusive mode nowait",
    "select for update": "select * from {table} for update nowait",
}


def _foreign_value(draw: Draw, table: str) -> Foreign:
    """What identifies another tenant's row of this table."""
    rng = draw.rng
    kind = {
        "principals": "principal", "api_keys": "key", "api_key_usage": "key", "auth_context": "principal",
        "sources": "source", "episodes": "episode", "chunks": "chunk", "facts": "fact", "entities": "entity",
        "snapshots": "snapshot", "feedback": "feedback",
    }.get(table)  # fmt: skip
    choice = rng.random()
    if kind is not None and choice < 0.4:
        return draw.foreign_id(kind)
    if choice < 0.8:
        return draw.foreign_group()
    return draw.marker()


def test_every_table_directly(arena: Arena) -> None:
    with arena.db.admin() as conn:
        tables = {f"vera.{name}": columns for name, columns in table_columns(conn).items()}
        tables |= {
            f"procrastinate.{name}": columns for name, columns in table_columns(conn, "procrastinate").items()
        }
        types = dict(
            conn.execute(
                """select attrelid::regclass::text || '.' || attname, format_type(atttypid, atttypmod)
                     from pg_attribute where attnum = 1 or attname = 'group_id'"""
            ).fetchall()
        )
    assert len(tables) >= 20

    def plan(draw: Draw, attacker: Attacker) -> None:
        for table, columns in tables.items():
            column = "group_id" if "group_id" in columns else columns[0]
            attacker.attempt(
                Attempt("tables", f"{table} select all", f"select * from {table}", allowed=TABLE_REFUSALS)
            )
            for operation in draw.rng.sample(sorted(TABLE_OPERATIONS), PER_TABLE):
                kind = types[f"{table}.{column}"]
                query = TABLE_OPERATIONS[operation].format(table=table, column=column, type=kind)
                value = _foreign_value(draw, table.split(".")[1])
                if operation == "insert" and kind == "uuid":
                    value = draw.foreign_id("key" if "key" in table else "principal")
                elif operation == "insert" and kind in {
                    "integer",
                    "bigint",
                    "xid8",
                }:  # xid8: a transaction id
                    value = draw.job()
                params = {"value": value} if "%(value)s" in query else {}
                attempt = Attempt(
                    "tables", f"{table} {operation}", query, params, compare_rows=True, allowed=TABLE_REFUSALS
                )
                outcome = attacker.attempt(attempt)
                if (
                    operation.startswith(("insert", "truncate", "lock", "update", "delete"))
                    and outcome.sqlstate is None
                ):
                    assert outcome.rowcount <= 0, (
                        f"{attacker.tenant.name}/{attacker.role}: {query} wrote {outcome.rowcount} rows"
                    )

    _attack(arena, "tables", plan, floor=len(tables) * (1 + PER_TABLE) * len(ROLES) * len(arena.tenants))


# -- the authentication context ------------------------------------------------------------

# The roles of a VERA database, and whoever else an attacker might become.
OTHER_ROLES = ("vera_owner", "vera_worker", "vera_gateway", "vera_searcher", "vera_resolver", "vera_operator",
               "pg_read_all_data", "pg_write_all_data", "pg_signal_backend", "pg_read_all_stats")  # fmt: skip
# Settings a forger might hope the functions read (they read none: the context is a table row).
FORGED_SETTINGS = ("vera.principal", "vera.principal_id", "vera.current_principal", "vera.readable_groups",
                   "vera.groups", "vera.auth_context", "vera.tenant", "request.jwt.claims", "app.current_tenant")  # fmt: skip
# Settings that change how the functions run, not who the caller is.
SESSION_SETTINGS = (
    "set row_security = off", "set search_path = pg_temp, public, vera", "set pg_trgm.similarity_threshold = 0.01",
    "set enable_seqscan = off", "set enable_indexscan = off", "set hnsw.ef_search = 1000",
    "set default_transaction_isolation = 'serializable'", "set session_replication_role = replica",
    "set jit = off", "set plan_cache_mode = force_generic_plan",
)  # fmt: skip
# PostgreSQL's refusal (42501: no privilege, not a member of the role) and VERA's (VA*)
AUTH_REFUSALS = frozenset({"42501", "VA001", "VA002", "VA003", "VA004", "VA005", "VA006"})


REFUSED_OUTRIGHT = (
    "insert auth_context", "update auth_context", "delete auth_context", "read auth_context", "copy auth_context",
    "set role", "set session authorization", "set_config role", "authenticate_principal", "not granted",
    "DO block", "create in public", "create schema", "server files", "grant",
)  # fmt: skip
STALE_KEY_HOLDERS = {
    "revoked": "member",
    "expired": "viewer",
    "disabled": "disabled",
    "removed_member": "leaver",
}


def _auth_attempts(draw: Draw, superuser: str, internal: list[str]) -> Iterator[Attempt]:
    foe = draw.foe()
    rng = draw.rng
    foe_principal = Foreign(foe.principals[rng.choice(ROLES)], draw.ghost_uuid())
    foe_groups = [draw.foreign_group(foe) for _ in range(2)]

    def attempt(label: str, query: str, **params: object) -> Attempt:
        # what writes the context, reads it, changes the role or reaches past the API must be refused
        must = label.startswith(REFUSED_OUTRIGHT)
        return Attempt("auth", label, query, dict(params), twin=False, allowed=AUTH_REFUSALS,
                       refused=frozenset({"42501"}) if must else None)  # fmt: skip

    yield attempt(
        "insert auth_context",
        "insert into vera.auth_context values (pg_backend_pid(), pg_current_xact_id(), %(p)s, null, %(g)s, %(g)s, %(g)s)",
        p=foe_principal, g=foe_groups,
    )  # fmt: skip
    yield attempt(
        "update auth_context",
        "update vera.auth_context set principal_id = %(p)s, readable = %(g)s, writable = %(g)s, administrable = %(g)s",
        p=foe_principal, g=foe_groups,
    )  # fmt: skip
    yield attempt("delete auth_context", "delete from vera.auth_context")
    yield attempt("read auth_context", "select * from vera.auth_context")
    yield attempt("copy auth_context", "copy vera.auth_context to stdout")
    for name in rng.sample(FORGED_SETTINGS, 3):
        group = foe_groups[0]
        value = rng.choice([foe_principal, Foreign("{" + group.real + "}", "{" + group.ghost + "}")])
        yield attempt(
            f"set_config {name}",
            "select set_config(%(n)s, %(v)s::text, %(l)s)",
            n=name,
            v=value,
            l=rng.random() < 0.5,
        )
    yield attempt("set a setting", f"set {rng.choice(FORGED_SETTINGS)} = '{foe.principals['owner']}'")
    yield attempt("session setting", rng.choice(SESSION_SETTINGS))
    for role in (*rng.sample(OTHER_ROLES, 3), superuser):
        yield attempt(f"set role {role}", f"set role {role}")
        yield attempt(f"set session authorization {role}", f"set session authorization {role}")
    yield attempt("set_config role", "select set_config('role', %(r)s, false)", r=rng.choice(OTHER_ROLES))
    yield attempt("authenticate_principal", "select vera.authenticate_principal(%(p)s)", p=foe_principal)
    for signature in rng.sample(internal, 6):
        yield attempt(f"not granted {signature}", signature)
    yield attempt(
        "DO block",
        "do $$ begin execute 'set role vera_owner'; insert into vera.auth_context values "
        f"(pg_backend_pid(), pg_current_xact_id(), '{foe.principals['owner']}', null, '{{{foe.org}}}', '{{}}', '{{}}'); end $$",
    )
    yield attempt(
        "temp shadow",
        "create temp table auth_context as select * from (values (pg_backend_pid(), pg_current_xact_id(),"
        f" '{foe.principals['owner']}'::uuid, null::uuid, '{{{foe.org}}}'::text[], '{{{foe.org}}}'::text[],"
        f" '{{{foe.org}}}'::text[])) v(backend_pid, xact_id, principal_id, key_id, readable, writable, administrable)",
    )
    yield attempt(
        "temp function",
        f"create function pg_temp.readable_groups() returns text[] language sql as $f$ select array['{foe.org}'] $f$",
    )
    yield attempt(
        "create in public",
        "create function public.readable_groups() returns text[] language sql as $f$ select '{}'::text[] $f$",
    )
    yield attempt("create schema", "create schema vera_shadow")
    yield attempt("server files", rng.choice([
        "select pg_read_file('postgresql.auto.conf')", "select pg_ls_dir('.')", "select pg_stat_file('PG_VERSION')",
        "copy (select 1) to '/tmp/vera_adversary'", "copy vera.facts from program 'true'", "select lo_import('/etc/passwd')",
    ]))  # fmt: skip
    yield attempt("grant", "grant vera_owner to vera_app")
    # refused inside the transaction: the savepoint around it is rolled back, the caller stays itself
    # (whoever holds a key knows whose it is: the refusal may name its prefix and principal)
    stale = rng.choice(["revoked", "expired", "disabled"])
    yield attempt(
        "authenticate a stale key inside",
        "select vera.authenticate(%(k)s)",
        k=Foreign(foe.stale_keys[stale], "vera_000000000000_" + "A" * 43),
        holder=Foreign(foe.principals[STALE_KEY_HOLDERS[stale]], draw.ghost_uuid()),
    )


def test_the_authentication_context_cannot_be_forged(arena: Arena) -> None:
    with arena.db.admin() as conn:
        superuser = conn.execute("select current_user").fetchone()[0]  # type: ignore[index]
        internal = [
            call_sql(function, []).replace(
                "()", "(" + ", ".join(f"null::{kind}" for _, kind in function.arguments) + ")"
            )
            for function in callable_functions(conn, executable=False)
        ]
    assert "vera.authenticate_principal" in " ".join(internal)

    def plan(draw: Draw, attacker: Attacker) -> None:
        for attempt in _auth_attempts(draw, superuser, internal):
            attacker.forge(attempt)

    _attack(arena, "auth", plan, floor=30 * len(ROLES) * len(arena.tenants))


# -- keys ----------------------------------------------------------------------------------

KEY_REFUSALS = frozenset({"VA001", "VA002", "VA003", "VA004", "VA006"})
SECRET_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
# what a caller outside a group gets from these (42501), or with no context at all (VA005)
OWN_GROUP_PROBES = (
    "select * from vera.list_sources(%(g)s)",
    "select * from vera.search(%(q)s, groups => array[%(g)s])",
    "select * from vera.list_snapshots(%(g)s)",
    "select * from vera.pending_reviews(%(g)s)",
    "select * from vera.facts_to_embed(%(g)s, %(ids)s)",
    "select * from vera.search_snapshot(%(g)s, 'nightly', %(q)s)",
)


def _garbage_keys(draw: Draw, me: Tenant) -> Iterator[tuple[str, object]]:
    rng = draw.rng
    foe = draw.foe()
    own = me.keys[draw.role]
    prefix = rng.choice(foe.key_prefixes)
    secret = "".join(rng.choice(SECRET_ALPHABET) for _ in range(43))
    yield (
        "a foreign prefix, a made-up secret",
        Foreign(f"vera_{prefix}_{secret}", f"vera_{draw.hex(12)}_{secret}"),
    )
    yield (
        "a foreign prefix, the caller's own secret",
        Foreign(f"vera_{prefix}_{own[18:]}", f"vera_{draw.hex(12)}_{own[18:]}"),
    )
    yield "a foreign key prefix only", Foreign(f"vera_{prefix}", f"vera_{draw.hex(12)}")
    yield "a bare prefix", Foreign(prefix, draw.hex(12))
    yield "a foreign key, cut short", Foreign(foe.keys[draw.role][:-1], f"vera_{draw.hex(12)}_{secret[:-1]}")
    yield (
        "a foreign key, upper case",
        Foreign(foe.keys[draw.role].upper(), f"VERA_{draw.hex(12).upper()}_{secret.upper()}"),
    )
    yield "a foreign key, padded", Foreign(f" {foe.keys[draw.role]}\n", f" vera_{draw.hex(12)}_{secret}\n")
    yield "two keys", Foreign(own + foe.keys[draw.role], own + f"vera_{draw.hex(12)}_{secret}")
    yield from (
        ("empty", ""),
        ("blank", "   "),
        ("null", None),
        ("injection", "vera_' or true --"),
        ("huge", "vera_" + "a" * 100_000),
        ("unicode", "vera_０１２３４５６７８９ab_" + "Ａ" * 43),
        ("like pattern", "vera_%_%"),
        ("regex", "vera_.*_.*"),
    )


def _key_attempts(draw: Draw, me: Tenant) -> Iterator[Attempt]:
    rng = draw.rng
    role = draw.role
    own_tokens = frozenset(me.tokens()) - {str(me.principals[role]), me.personal[role]}
    for label, key in _garbage_keys(draw, me):
        yield Attempt("keys", f"garbage: {label}", "select vera.authenticate(%(k)s)", {"k": key},
                      as_caller=False, refused=KEY_REFUSALS, allowed=KEY_REFUSALS)  # fmt: skip
    for tenant in draw.arena.tenants:
        for stale in ("revoked", "expired", "disabled"):
            holder = tenant.principals[STALE_KEY_HOLDERS[stale]]
            key: object = tenant.stale_keys[stale]
            params: dict[str, object] = {"k": key}
            if tenant is not me:
                params = {
                    "k": Foreign(key, f"vera_{draw.hex(12)}_" + "A" * 43),
                    "holder": Foreign(holder, draw.ghost_uuid()),
                }
            yield Attempt("keys", f"stale: {stale}", "select vera.authenticate(%(k)s)", params, twin=False,
                          as_caller=False, refused=KEY_REFUSALS, allowed=KEY_REFUSALS)  # fmt: skip
    # a member who left: its key still opens its personal scope, and nothing of the organisation
    leaver = me.stale_keys["removed_member"]
    for probe in rng.sample(OWN_GROUP_PROBES, 3):
        yield Attempt("keys", "removed member", probe,
                      {"g": rng.choice([me.org, me.project]), "q": "payments-api", "ids": me.ids["fact"][:2]},
                      prelude=[("select vera.authenticate(%(k)s)", {"k": leaver})], as_caller=False,
                      forbid=own_tokens - {str(me.principals["leaver"]), me.personal["leaver"]},
                      refused=frozenset({"42501"}))  # fmt: skip
    yield Attempt("keys", "removed member: whoami", "select group_id from vera.whoami()",
                  prelude=[("select vera.authenticate(%(k)s)", {"k": leaver})], as_caller=False,
                  forbid=own_tokens - {str(me.principals["leaver"]), me.personal["leaver"]})  # fmt: skip
    # another tenant's key (a stolen one, say) with the caller's own groups: it acts as its owner, never as both
    foe = draw.foe()
    foe_role = rng.choice(ROLES)
    stolen = [("select vera.authenticate(%(k)s)", {"k": foe.keys[foe_role]})]
    for probe in rng.sample(OWN_GROUP_PROBES, 3):
        yield Attempt("keys", "another tenant's key, own groups", probe,
                      {"g": rng.choice([me.org, me.project, me.personal[role]]), "q": "payments-api",
                       "ids": me.ids["fact"][:2]},
                      prelude=stolen, as_caller=rng.random() < 0.5, forbid=own_tokens | {str(me.principals[role])},
                      permit=frozenset(foe.tokens()), refused=frozenset({"42501"}))  # fmt: skip
    yield Attempt("keys", "authenticated twice: the second key only", "select vera.readable_groups(), vera.current_principal()",
                  prelude=stolen, forbid=own_tokens | {str(me.principals[role]), me.personal[role]},
                  permit=frozenset(foe.tokens()))  # fmt: skip


def _context_lifetimes(attacker: Attacker) -> None:
    """The context ends with its transaction, however it ends; a holdable cursor keeps only rows it had."""
    conn, key = attacker.conn, attacker.key
    steps = {
        "after commit": ["begin", ("select vera.authenticate(%s)", key), "commit", "begin"],
        "after rollback": ["begin", ("select vera.authenticate(%s)", key), "rollback", "begin"],
        "after a rolled back savepoint": ["begin", "savepoint s", ("select vera.authenticate(%s)", key), "rollback to savepoint s"],
        "after an autocommit statement": [("select vera.authenticate(%s)", key), "begin"],
        "prepared before commit": ["begin", ("select vera.authenticate(%s)", key),
                                   "prepare probe as select vera.current_principal()", "commit", "begin"],
        "in the next transaction of one query string": [],
    }  # fmt: skip
    for label, sequence in steps.items():
        attacker.tally.attempts[("keys", attacker.role, f"context {label}")] += 1
        try:
            if label == "in the next transaction of one query string":
                conn.pgconn.exec_(f"begin; select vera.authenticate('{key}'); rollback; begin".encode())
            for step in sequence:
                if isinstance(step, tuple):
                    conn.execute(step[0], (step[1],))  # type: ignore[arg-type]
                else:
                    conn.execute(step)  # type: ignore[arg-type]
            probe = (
                "execute probe" if label == "prepared before commit" else "select vera.current_principal()"
            )
            principal = conn.execute(probe).fetchone()  # type: ignore[arg-type]
            seen = (
                conn.execute("select count(*) from vera.list_sources()").fetchone()
                if principal == (None,)
                else None
            )
        except psycopg.Error as error:
            principal, seen = (error.sqlstate,), None
        finally:
            conn.execute("rollback")
            conn.execute("deallocate all")
        if principal not in ((None,), ("VA005",)):
            attacker.tally.findings.append(
                f"{attacker.tenant.name}/{attacker.role}: context survives {label}: {principal}"
            )
        del seen


def test_keys_stale_forged_borrowed_and_the_context_lifetime(arena: Arena) -> None:
    def plan(draw: Draw, attacker: Attacker) -> None:
        for attempt in _key_attempts(draw, attacker.tenant):
            attacker.attempt(attempt)
        _context_lifetimes(attacker)

    _attack(arena, "keys", plan, floor=35 * len(ROLES) * len(arena.tenants))


# -- as_of and snapshots ---------------------------------------------------------------------


def _vector(text: str) -> str:
    return vector_literal(embed(text))


def _time_attempts(draw: Draw, me: Tenant) -> Iterator[Attempt]:
    """Searches at instants around the other tenants' writes, and their snapshots by name, group and id."""
    rng = draw.rng
    foe = draw.foe()
    own = rng.choice([me.org, me.project, me.personal[draw.role]])
    instants = [None, foe.seeded_at, me.seeded_at, "2000-01-01 00:00+00", "2100-01-01 00:00+00",
                min(t.seeded_at for t in draw.arena.tenants)]  # fmt: skip
    marker = draw.marker(foe)
    query = Foreign(f"{SHARED_QUERY} {marker.real}", f"{SHARED_QUERY} {marker.ghost}", reference=False)
    embedding = _vector(f"{SHARED_TEXT} {foe.marker} {foe.org}")
    for as_of in rng.sample(instants, 3):
        yield Attempt("as_of", "search at an instant", "select * from vera.search(%(q)s, %(e)s::vector, k => 100, as_of => %(t)s)",
                      {"q": query, "e": embedding, "t": as_of})  # fmt: skip
        yield Attempt("as_of", "search own and foreign groups at an instant",
                      "select * from vera.search(%(q)s, k => 10, as_of => %(t)s, groups => %(g)s)",
                      {"q": SHARED_QUERY, "t": as_of, "g": [own, draw.foreign_group(foe)]}, refused=frozenset({"42501"}))  # fmt: skip
        yield Attempt("as_of", "feedback on a foreign hit at an instant",
                      "select * from vera.record_feedback(%(kind)s, %(id)s, %(q)s, 'up', as_of => %(t)s)",
                      {"kind": "fact", "id": draw.foreign_id("fact", foe), "q": SHARED_QUERY, "t": as_of},
                      refused=frozenset({"VN001", "22023"}))  # fmt: skip
    name = rng.choice(
        [SNAPSHOT, Foreign(f"release {foe.marker}", f"release {draw.marker(foe).ghost}", reference=False)]
    )
    yield Attempt("snapshots", "search own snapshot, foreign words",
                  "select * from vera.search_snapshot(%(g)s, %(n)s, %(q)s, %(e)s::vector, k => 100)",
                  {"g": rng.choice([me.org, me.project]), "n": SNAPSHOT, "q": query, "e": embedding})  # fmt: skip
    yield Attempt("snapshots", "foreign snapshot name in an own group",
                  "select * from vera.search_snapshot(%(g)s, %(n)s, %(q)s)",
                  {"g": own, "n": Foreign(f"release {foe.marker}", f"release {marker.ghost}", reference=False), "q": SHARED_QUERY},
                  refused=frozenset({"VN001"}))  # fmt: skip
    yield Attempt("snapshots", "search a foreign group's snapshot", "select * from vera.search_snapshot(%(g)s, %(n)s, %(q)s)",
                  {"g": draw.foreign_group(foe), "n": name, "q": SHARED_QUERY}, refused=frozenset({"42501"}))  # fmt: skip
    yield Attempt("snapshots", "list a foreign group's snapshots", "select * from vera.list_snapshots(%(g)s)",
                  {"g": draw.foreign_group(foe)}, refused=frozenset({"42501"}))  # fmt: skip
    yield Attempt("snapshots", "drop a foreign group's snapshot", "select vera.drop_snapshot(%(g)s, %(n)s)",
                  {"g": draw.foreign_group(foe), "n": name}, refused=frozenset({"42501"}))  # fmt: skip
    yield Attempt("snapshots", "snapshot a foreign group", "select * from vera.create_snapshot(%(g)s, %(n)s)",
                  {"g": draw.foreign_group(foe), "n": rng.choice(["nightly", "stolen"])}, isolation="repeatable read",
                  refused=frozenset({"42501"}))  # fmt: skip
    yield Attempt("snapshots", "a foreign snapshot's id, to its candidate stage",
                  "select * from vera.snapshot_candidates(%(g)s, %(s)s, vera.query_terms(%(q)s), null, 10)",
                  {"g": rng.choice([own, draw.foreign_group(foe)]), "s": draw.foreign_id("snapshot", foe), "q": SHARED_QUERY},
                  refused=frozenset({"42501"}))  # fmt: skip


def test_as_of_and_snapshots(arena: Arena) -> None:
    def plan(draw: Draw, attacker: Attacker) -> None:
        for attempt in _time_attempts(draw, attacker.tenant):
            attacker.attempt(attempt)

    _attack(arena, "as_of", plan, floor=15 * len(ROLES) * len(arena.tenants))


@pytest.mark.parametrize(
    "begin", ["begin read only", "begin isolation level serializable read only deferrable"]
)
def test_authenticate_in_a_read_only_transaction_answers_cleanly(arena: Arena, begin: str) -> None:
    """A read-only transaction either authenticates or is refused with a documented SQLSTATE
    (25000: the transaction is of the wrong kind)."""
    with arena.db.connect(autocommit=True) as conn:
        conn.execute(begin)  # type: ignore[arg-type]
        answer = execute(conn, "select vera.authenticate(%(k)s)", {"k": arena.tenants[0].keys["viewer"]})
        conn.execute("rollback")
    assert answer.sqlstate is None or answer.sqlstate in DOCUMENTED_SQLSTATES, answer.message


# -- side channels -----------------------------------------------------------------------------
#
# Cluster-wide aggregates reveal no tenant's data and are not asserted on: pg_stat_user_tables and
# pg_class.reltuples count every tenant's rows together (a table's size, not whose); sequence
# values (job ids, audit ids) advance for all tenants (a rhythm of writes, not their content);
# pg_locks shows hashed advisory keys and relation locks of every backend (numbers, no group id).
# What is asserted: no plan, statistic, catalog, activity or notification shows another tenant's
# group ids, markers, row ids or keys, and no session can end or alter another tenant's.


def _caller(arena: Arena, tenant: Tenant, role: str = "owner") -> psycopg.Connection:
    conn = arena.db.connect(login_role(tenant))
    conn.execute("select vera.authenticate(%s)", (tenant.keys[role],))
    return conn


def _plans(conn: psycopg.Connection, query: str, params: tuple[object, ...] = ()) -> list[dict[str, object]]:
    """Every node of a JSON plan, or [] when the statement is refused (42501: no privilege)."""
    try:
        conn.execute("savepoint plan")
        document = conn.execute(query, params).fetchone()[0]  # type: ignore[index, arg-type]
    except psycopg.errors.InsufficientPrivilege:
        conn.execute("rollback to savepoint plan")
        return []
    nodes, stack = [], [document[0]["Plan"]]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.get("Plans", []))
    return nodes


KNOWLEDGE = ("sources", "episodes", "chunks", "entities", "entity_aliases", "predicates", "facts", "feedback",
             "snapshots", "snapshot_items", "group_settings", "groups", "memberships", "principals", "audit_log")  # fmt: skip


def test_explain_reveals_no_rows_of_other_tenants(arena: Arena) -> None:
    """EXPLAIN ANALYZE counts the rows row-level security filtered out; EXPLAIN's estimate for a
    foreign group id (from the column's statistics) differs from one for a group that does not exist."""
    me, foe = arena.tenants[0], arena.tenants[1]
    revealed = []
    with _caller(arena, me) as conn:
        for table in KNOWLEDGE:
            removed = sum(
                int(node.get("Rows Removed by Filter", 0))  # type: ignore[call-overload]
                for node in _plans(conn, f"explain (analyze, format json) select * from vera.{table}")
            )
            with arena.db.admin() as admin:
                hidden_own = admin.execute(
                    f"select count(*) from vera.{table} t where strpos(t::text, %s) > 0 or strpos(t::text, %s) > 0",
                    (me.org, me.marker),
                ).fetchone()[0]  # type: ignore[index]
            # rows of the caller's own tenant it may not read (others' personal scopes) may be filtered; no more
            if removed > hidden_own:
                revealed.append(f"{table}: {removed} rows removed by filter")
            if table in {"principals", "audit_log"}:
                continue
            column = "group_id"
            estimate = {
                name: [node.get("Plan Rows") for node in _plans(
                    conn, f"explain (format json) select * from vera.{table} where {column} = %s", (group,))]
                for name, group in (("foreign", foe.org), ("nowhere", "o:" + "0" * 16))
            }  # fmt: skip
            if estimate["foreign"] != estimate["nowhere"]:
                revealed.append(f"{table}: estimate {estimate}")
        conn.rollback()
    assert not revealed, revealed


def test_pg_stats_show_no_values_of_other_tenants(arena: Arena) -> None:
    """The planner's statistics (ANALYZE ran after seeding) of tables under row-level security are
    hidden from a caller RLS applies to."""
    me = arena.tenants[0]
    with _caller(arena, me) as conn:
        rows = conn.execute(
            "select tablename, attname, most_common_vals::text, histogram_bounds::text from pg_stats"
            " where schemaname in ('vera', 'procrastinate')"
        ).fetchall()
        extended = conn.execute("select * from pg_stats_ext where schemaname = 'vera'").fetchall()
        conn.rollback()
    found = leaked(repr(rows) + repr(extended), arena.foreign_tokens(me))
    assert not found


def test_table_statistics_are_aggregates_without_tenant_data(arena: Arena) -> None:
    me = arena.tenants[0]
    with _caller(arena, me) as conn:
        rows = conn.execute(
            "select s.*, c.reltuples, c.relpages from pg_stat_user_tables s join pg_class c on c.oid = s.relid"
        ).fetchall()
        conn.rollback()
    assert rows
    assert not leaked(repr(rows), arena.foreign_tokens(me))


@pytest.mark.xfail(strict=True, reason="per-group HNSW indexes are named after, and filtered on, the group id: "
                   "pg_indexes, pg_class and pg_stat_user_indexes show any login role every large tenant's group ids, "
                   "its vector count and its search activity (finding of the adversarial suite)")  # fmt: skip
def test_catalogs_name_no_group_of_other_tenants(arena: Arena) -> None:
    me, foe = arena.tenants[0], arena.tenants[1]
    with arena.db.admin() as admin:
        # what `vera db maintain` builds for a large group, here for one of the other tenant's groups
        for (statements,) in admin.execute(
            "select statements from vera.missing_vector_indexes(1) where group_id = %s", (foe.org,)
        ).fetchall():
            for statement in statements:
                admin.execute(statement)
    with _caller(arena, me) as conn:
        rows = conn.execute(
            "select c.relname, pg_get_indexdef(c.oid), c.reltuples, s.idx_scan from pg_class c"
            " left join pg_stat_user_indexes s on s.indexrelid = c.oid where c.relkind = 'i'"
        ).fetchall()
        conn.rollback()
    assert not leaked(repr(rows), arena.foreign_tokens(me))


def test_pg_stat_activity_shows_no_query_text_of_other_tenants(arena: Arena) -> None:
    me, foe = arena.tenants[0], arena.tenants[1]
    with _caller(arena, foe) as busy:
        # another tenant's request in flight (idle in its transaction), its marker in the SQL text
        busy.execute(f"select count(*) from vera.search('{foe.marker} payments-api', k => 5)")
        with _caller(arena, me) as conn:
            rows = conn.execute(
                "select pid, usename, application_name, state, query, backend_xid::text, backend_xmin::text"
                " from pg_stat_activity where pid <> pg_backend_pid()"
            ).fetchall()
            conn.rollback()
        busy.rollback()
    assert not leaked(repr(rows), {foe.marker, *foe.keys.values()})


def test_no_session_can_cancel_or_end_another_tenants(arena: Arena) -> None:
    me, foe = arena.tenants[0], arena.tenants[1]
    with _caller(arena, foe) as victim:
        pid = victim.info.backend_pid
        with arena.db.connect(login_role(me), autocommit=True) as conn:
            for call in ("pg_cancel_backend(%s)", "pg_terminate_backend(%s)"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(f"select {call}", (pid,))  # type: ignore[arg-type]
        assert victim.execute("select vera.current_principal()").fetchone() == (foe.principals["owner"],)
        victim.rollback()


def test_no_session_alters_the_login_role_of_another_tenant(arena: Arena) -> None:
    """ALTER ROLE is transactional: every attempt is rolled back, whatever it did."""
    me, foe = arena.tenants[0], arena.tenants[1]
    altered = []
    with _caller(arena, me) as conn:
        for statement in (
            "alter role {role} password 'taken-over'",
            "alter role {role} set default_transaction_read_only = on",
            "alter role {role} set statement_timeout = '1ms'",
            "alter role {role} in database {db} set row_security = off",
        ):
            conn.execute("savepoint alter_role")
            try:
                conn.execute(statement.format(role=login_role(foe), db=arena.db.name))  # type: ignore[arg-type]
                altered.append(statement)
            except psycopg.errors.InsufficientPrivilege:
                pass
            conn.execute("rollback to savepoint alter_role")
        conn.rollback()
    assert not altered


def test_pg_locks_show_no_tenant_data_and_no_login_role_takes_the_writers_locks(arena: Arena) -> None:
    me, foe = arena.tenants[0], arena.tenants[1]
    with _caller(arena, foe) as writer:
        # another tenant's write in flight: it holds its entity and history advisory locks
        writer.execute(
            "select vera.publish_claims(%s, null, %s)",
            (
                foe.personal["owner"],
                Jsonb([{"subject": f"locked {foe.marker}", "predicate": "runs on", "object": "x"}]),
            ),
        )
        keys = writer.execute(
            "select classid, objid, objsubid from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()"
        ).fetchall()
        assert keys
        with _caller(arena, me) as conn:
            rows = conn.execute("select * from pg_locks").fetchall()
            for classid, objid, _ in keys[:3]:
                conn.execute("savepoint lock")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute("select pg_try_advisory_xact_lock(%s::int, %s::int)", (classid, objid))
                conn.execute("rollback to savepoint lock")
            conn.rollback()
        writer.rollback()
    assert not leaked(repr(rows), arena.foreign_tokens(me))


def test_listen_hears_nothing_of_other_tenants_jobs(arena: Arena) -> None:
    """Procrastinate's notify triggers are dropped: a listener on its channels hears nothing when
    another tenant defers a job."""
    me, foe = arena.tenants[0], arena.tenants[1]
    with arena.db.connect(login_role(me), autocommit=True) as listener:
        for channel in (
            "procrastinate_any_queue_v1",
            "procrastinate_queue_v1#default",
            "procrastinate_queue_v1#vera",
        ):
            listener.execute(f'listen "{channel}"')  # type: ignore[arg-type]
        with _caller(arena, foe) as writer:
            writer.execute("select vera.request_ingest(%s, %s, null)", (foe.org, foe.ids["source"][0]))
            writer.commit()
        heard = list(listener.notifies(timeout=0.5, stop_after=1))
    assert heard == []


def test_the_attack_was_wide(arena: Arena) -> None:
    """The counts of the whole module (when its attacking tests ran before this one)."""
    channels = sorted({channel for channel, _, _ in TALLY.attempts})
    by_channel = {channel: TALLY.total(channel) for channel in channels}
    roles = sorted({role for _, role, _ in TALLY.attempts})
    print(
        f"adversary: {TALLY.total()} attempts, {len(arena.tenants)} tenants, roles {roles}, channels {by_channel},"
        f" answers {dict(TALLY.outcomes.most_common())}"
    )
    assert not TALLY.findings
    if {"functions", "tables", "auth", "keys", "as_of", "snapshots"} <= set(channels):
        assert roles == sorted(ROLES)
        assert TALLY.total() >= 5000
