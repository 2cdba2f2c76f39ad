"""The randomized attacker of pg_tests/security/test_adversary.py: what one attempt
is, how it runs as one role of one tenant, and the oracle applied to it.

An attempt carries foreign values (another tenant's group ids, row ids, key
prefixes, snapshot names, markers) wrapped in `Foreign`, each with a ghost:
a value of the same shape that exists nowhere. The attempt runs twice: with
the ghosts (rolled back), then with the real values (committed when it
succeeds, so that a write that reached another tenant would show in that
tenant's fingerprint). The oracle:

- nothing returned (rows, error message) names another tenant: no foreign
  marker, group id, row id, principal id or key prefix the caller did not
  pass itself;
- a refusal is clean: a SQLSTATE documented in docs/sql-api.md;
- the real value and its ghost get the same answer (the same SQLSTATE, the
  same message once the values passed are blanked, the same number of
  rows): otherwise the answer tells whether another tenant holds the value.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from pg_tests.support.adversary import Arena, Tenant, leaked, login_role

# docs/sql-api.md, "Error codes"
DOCUMENTED_SQLSTATES = frozenset({
    "VA001", "VA002", "VA003", "VA004", "VA005", "VA006", "VN001", "42501", "22023", "22004", "22001",
    "54000", "23505", "VE001", "VE002", "VJ001", "VS001", "VS002", "VS003", "VS004",
    "VS005", "25000", "VT001",
})  # fmt: skip
# The attacker's own per-statement limit: a call that waits this long on another tenant's lock is a finding.
STATEMENT_TIMEOUT_MS = 5000


@dataclass(frozen=True)
class Foreign:
    """A value taken from another tenant, and a ghost of the same shape that exists nowhere."""

    real: Any
    ghost: Any
    # a reference to another tenant's row (an id, a group, a key, a job), not a text the caller wrote
    reference: bool = True


def materialise(value: Any, *, ghost: bool) -> Any:
    if isinstance(value, Foreign):
        return value.ghost if ghost else value.real
    if isinstance(value, list):
        return [materialise(item, ghost=ghost) for item in value]
    if isinstance(value, dict):
        return {key: materialise(item, ghost=ghost) for key, item in value.items()}
    if isinstance(value, Jsonb):
        return Jsonb(materialise(value.obj, ghost=ghost))
    return value


def foreign_values(value: Any) -> list[Foreign]:
    if isinstance(value, Foreign):
        return [value]
    if isinstance(value, list):
        return [found for item in value for found in foreign_values(item)]
    if isinstance(value, dict):
        return [found for item in value.values() for found in foreign_values(item)]
    if isinstance(value, Jsonb):
        return foreign_values(value.obj)
    return []


@dataclass
class Attempt:
    channel: str
    label: str
    query: str
    params: dict[str, Any] = field(default_factory=dict)
    # run the ghost twin and compare (off for attempts that are not about one foreign value)
    twin: bool = True
    isolation: str = "read committed"
    # the twins must return the same rows, not only as many (counts, row counts of writes)
    compare_rows: bool = False
    # the SQLSTATEs a refusal may have: VERA's documented ones for its functions; PostgreSQL's own
    # privilege errors for direct access to tables, roles and settings
    allowed: frozenset[str] = DOCUMENTED_SQLSTATES
    # statements run first in the same transaction (another key's authentication, say)
    prelude: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # authenticate with the attacker's own key first
    as_caller: bool = True
    # tokens forbidden besides the other tenants' (the caller's own tenant, when it acts with another's key)
    forbid: frozenset[str] = frozenset()
    # tokens of another tenant the caller may see (it holds that tenant's key)
    permit: frozenset[str] = frozenset()
    # when given, the attempt must be refused with one of these
    refused: frozenset[str] | None = None

    @property
    def foreign(self) -> list[Foreign]:
        return foreign_values(self.params)


@dataclass
class Outcome:
    sqlstate: str | None
    message: str
    rows: list[tuple[Any, ...]]
    rowcount: int
    # the whole error: message, DETAIL, HINT, CONTEXT (what a client could log or show)
    full: str = ""

    @property
    def text(self) -> str:
        return (self.full or self.message) + "\n" + "\n".join(repr(row) for row in self.rows)


@dataclass
class Tally:
    """What the attacker tried and what it found, for the report."""

    attempts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    findings: list[str] = field(default_factory=list)

    def total(self, channel: str | None = None) -> int:
        return sum(n for (c, _, _), n in self.attempts.items() if channel is None or c == channel)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _flat(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _flat(item)]
    if isinstance(value, Jsonb):
        return _flat(value.obj)
    return [value]


def _tokens_of(values: list[Any]) -> set[str]:
    found: set[str] = set()
    for value in values:
        text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
        found.add(text)
        # a marker inside a longer text passed in (a query, a claim) is the caller's own input
        found.update(re.findall(r"zq[0-9a-f]{10}", text))
        found.update(re.findall(r"[owpu]:[0-9a-f]{16}", text))
        found.update(re.findall(r"vera_([0-9a-f]{12})_", text))
        found.update(re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text))
    return found


def _normalised(message: str, attempt: Attempt, *, ghost: bool) -> str:
    shown = {str(value.ghost if ghost else value.real) for value in attempt.foreign}
    for value in sorted(shown, key=len, reverse=True):
        message = message.replace(value, "<foreign>")
    return message


def execute(conn: psycopg.Connection, query: str, params: dict[str, Any] | None = None) -> Outcome:
    try:
        if query.lstrip().lower().startswith("copy"):
            with conn.cursor() as cursor, cursor.copy(query) as copy:  # type: ignore[arg-type]
                data = b"".join(bytes(block) for block in copy)
            return Outcome(None, "", [(data.decode(errors="replace"),)], data.count(b"\n"))
        cursor = conn.execute(query, params)  # type: ignore[arg-type]
        rows = cursor.fetchall() if cursor.description else []
        return Outcome(None, "", rows, cursor.rowcount)
    except psycopg.Error as error:
        diagnostics = error.diag
        full = "\n".join(
            part or ""
            for part in (
                str(error),
                diagnostics.message_detail,
                diagnostics.message_hint,
                diagnostics.context,
            )
        )
        return Outcome(error.sqlstate, str(error).splitlines()[0] if str(error) else "", [], -1, full)


class Attacker:
    """One role of one tenant, on one connection of its login role, one transaction per attempt."""

    def __init__(self, arena: Arena, tenant: Tenant, role: str, key: str, tally: Tally) -> None:
        self.arena = arena
        self.tenant = tenant
        self.role = role
        self.key = key
        self.tally = tally
        self.forbidden = arena.foreign_tokens(tenant)
        self.conn = arena.db.connect(login_role(tenant), autocommit=True)
        self.conn.execute(f"set statement_timeout = {STATEMENT_TIMEOUT_MS}")  # type: ignore[arg-type]

    def close(self) -> None:
        self.conn.close()

    def _run(self, attempt: Attempt, *, ghost: bool, commit: bool) -> Outcome:
        conn = self.conn
        conn.execute(f"begin isolation level {attempt.isolation}")  # type: ignore[arg-type]
        try:
            if attempt.as_caller:
                conn.execute("select vera.authenticate(%s)", (self.key,))
            outcome = Outcome(None, "", [], 0)
            for statement, params in attempt.prelude:
                outcome = execute(conn, statement, materialise(params, ghost=ghost))
                if outcome.sqlstate is not None:
                    break
            else:
                outcome = execute(conn, attempt.query, materialise(attempt.params, ghost=ghost))
        finally:
            if commit and conn.info.transaction_status != psycopg.pq.TransactionStatus.INERROR:
                conn.execute("commit")
            else:
                conn.execute("rollback")
        return outcome

    def attempt(self, attempt: Attempt) -> Outcome:
        self.tally.attempts[(attempt.channel, self.role, attempt.label)] += 1
        foreign = attempt.foreign
        twin = self._run(attempt, ghost=True, commit=False) if attempt.twin and foreign else None
        # committed when it names another tenant's rows, so that a write that reached them would show
        outcome = self._run(attempt, ghost=False, commit=any(value.reference for value in foreign))
        self.check(attempt, outcome, twin)
        return outcome

    def forge(self, attempt: Attempt) -> Outcome:
        """The attempt inside the caller's authenticated transaction (a savepoint around it);
        then the caller must still be itself, reaching its own groups only."""
        self.tally.attempts[(attempt.channel, self.role, attempt.label)] += 1
        conn = self.conn
        conn.execute("begin")
        try:
            conn.execute("select vera.authenticate(%s)", (self.key,))
            conn.execute("savepoint forge")
            outcome = execute(conn, attempt.query, materialise(attempt.params, ghost=False))
            if outcome.sqlstate is not None:
                conn.execute("rollback to savepoint forge")
            self.check(attempt, outcome)
            self.check_identity(attempt)
        finally:
            conn.execute("rollback")
        return outcome

    def check_identity(self, attempt: Attempt) -> None:
        """Who the transaction is and what it reaches, through the functions (table privileges may go)."""
        where = f"{self.tenant.name}/{self.role} {attempt.channel} {attempt.label}"
        me = self.tenant.principals[self.role]
        identity = execute(self.conn, "select vera.current_principal(), vera.readable_groups()")
        if identity.sqlstate == "42501":
            return  # a setting such as row_security = off makes every read refuse: refused is not leaked
        if identity.sqlstate is not None or identity.rows[0][0] != me:
            self.tally.findings.append(f"{where}: the caller is no longer itself: {identity}")
            return
        reach = set(identity.rows[0][1]) & set(self.forbidden)
        hits = execute(
            self.conn,
            "select * from vera.list_sources() union all select null, null, null, group_id,"
            " null, null, null, null, null, null from vera.whoami()",
        )
        found = leaked(hits.text, self.forbidden)
        if reach or found or hits.sqlstate is not None:
            self.tally.findings.append(
                f"{where}: after the attempt the caller reaches {reach or found or hits.message}"
            )

    def check(self, attempt: Attempt, outcome: Outcome, twin: Outcome | None = None) -> None:
        self.tally.outcomes[outcome.sqlstate or "ok"] += 1
        where = f"{self.tenant.name}/{self.role} {attempt.channel} {attempt.label}"
        # whatever the caller passed may come back (an id in "unknown source <id>"): that tells it nothing
        passed = _tokens_of(
            _flat(
                [
                    materialise(attempt.params, ghost=False),
                    *(materialise(params, ghost=False) for _, params in attempt.prelude),
                ]
            )
        )
        found = leaked(outcome.text, ((self.forbidden - attempt.permit) | attempt.forbid) - passed)
        if found:
            self.tally.findings.append(f"{where}: another tenant's {found[:3]} in {outcome.text[:300]!r}")
        if attempt.refused is not None and outcome.sqlstate not in attempt.refused:
            self.tally.findings.append(
                f"{where}: expected a refusal {sorted(attempt.refused)}, got {outcome.sqlstate} {outcome.rows[:3]}"
            )
        if outcome.sqlstate is not None and outcome.sqlstate not in attempt.allowed:
            self.tally.findings.append(
                f"{where}: undocumented SQLSTATE {outcome.sqlstate}: {outcome.message[:300]}"
            )
        if twin is not None:
            real = (outcome.sqlstate, _normalised(outcome.message, attempt, ghost=False), len(outcome.rows))
            ghostly = (twin.sqlstate, _normalised(twin.message, attempt, ghost=True), len(twin.rows))
            if attempt.compare_rows:
                real += (repr(outcome.rows), outcome.rowcount)
                ghostly += (repr(twin.rows), twin.rowcount)
            if real != ghostly:
                self.tally.findings.append(
                    f"{where}: another tenant's value answers unlike a value that exists nowhere: {real} vs {ghostly}"
                )


# -- values an attacker draws ------------------------------------------------------------


class Draw:
    """Random values for one attacker (tenant `me`) against the other tenants, from one seeded generator."""

    def __init__(self, rng: random.Random, arena: Arena, me: Tenant, role: str) -> None:
        self.rng = rng
        self.arena = arena
        self.me = me
        self.role = role

    def foe(self) -> Tenant:
        return self.rng.choice(self.arena.others(self.me))

    def hex(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def ghost_uuid(self) -> UUID:
        return UUID(int=self.rng.getrandbits(128), version=4)

    def foreign_group(self, foe: Tenant | None = None) -> Foreign:
        foe = foe or self.foe()
        real = self.rng.choice([foe.org, foe.org, foe.project, foe.project, *foe.personal.values()])
        return Foreign(real, real[:2] + self.hex(16))

    def own_group(self) -> str:
        return self.rng.choice([self.me.org, self.me.project, self.me.personal[self.role]])

    def group(self) -> Any:
        return self.foreign_group() if self.rng.random() < 0.4 else self.own_group()

    def groups(self) -> list[Any] | None:
        if self.rng.random() < 0.4:
            return None  # every group the caller reads
        chosen: list[Any] = [self.foreign_group() for _ in range(self.rng.randint(1, 2))]
        chosen += [self.own_group() for _ in range(self.rng.randint(0, 2))]
        self.rng.shuffle(chosen)
        return chosen

    def foreign_id(self, kind: str, foe: Tenant | None = None) -> Foreign:
        foe = foe or self.foe()
        return Foreign(self.rng.choice(foe.ids[kind]), self.ghost_uuid())

    def own_id(self, kind: str) -> UUID:
        return self.rng.choice(self.me.ids[kind])

    def an_id(self, kind: str) -> Any:
        return self.foreign_id(kind) if self.rng.random() < 0.8 else self.own_id(kind)

    def ids(self, kind: str) -> list[Any]:
        chosen: list[Any] = [self.foreign_id(kind) for _ in range(self.rng.randint(1, 3))]
        chosen += [self.own_id(kind) for _ in range(self.rng.randint(0, 2))]
        self.rng.shuffle(chosen)
        return chosen

    def marker(self, foe: Tenant | None = None) -> Foreign:
        foe = foe or self.foe()
        return Foreign(foe.marker, "zq" + self.hex(10), reference=False)

    def text_with_marker(self, template: str) -> Foreign:
        marker = self.marker()
        return Foreign(template.format(marker.real), template.format(marker.ghost), reference=False)

    def snapshot_name(self) -> Any:
        if self.rng.random() < 0.5:
            return "nightly"
        return self.text_with_marker("release {}")

    def as_of(self) -> Any:
        foe = self.foe()
        return self.rng.choice([
            None, "2000-01-01 00:00+00", foe.seeded_at, self.me.seeded_at,
            "infinity", "-infinity", "2100-01-01 00:00+00", foe.seeded_at.isoformat(),
        ])  # fmt: skip

    def key_reference(self) -> Foreign:
        foe = self.foe()
        if self.rng.random() < 0.5:
            return Foreign(self.rng.choice(foe.key_prefixes), self.hex(12))
        return Foreign(str(self.rng.choice(foe.ids["key"])), str(self.ghost_uuid()))

    def job(self) -> Foreign:
        return Foreign(self.rng.choice(self.foe().jobs), 10**9 + self.rng.randint(0, 10**6))


# -- the SQL API, as the catalog lists it ----------------------------------------------------


@dataclass(frozen=True)
class Function:
    name: str
    signature: str
    arguments: tuple[tuple[str, str], ...]  # (name, type)


def callable_functions(
    conn: psycopg.Connection, role: str = "vera_app", *, executable: bool = True
) -> list[Function]:
    """Functions of schema vera the role may (or may not) execute, from the catalog."""
    rows = conn.execute(
        """select p.proname, p.oid::regprocedure::text, (coalesce(p.proargnames, '{}'))[1:p.pronargs],
                  array(select format_type(t, null) from unnest(p.proargtypes) t)
             from pg_proc p
            where p.pronamespace = 'vera'::regnamespace and p.prokind = 'f'
              and has_function_privilege(%s, p.oid, 'execute') = %s
              -- a trigger function cannot be called by anyone, granted or not
              and p.prorettype <> 'trigger'::regtype
            order by 2""",
        (role, executable),
    ).fetchall()
    return [
        Function(name, signature, tuple(zip(names, types, strict=True)))
        for name, signature, names, types in rows
    ]


def call_sql(function: Function, arguments: list[str]) -> str:
    named = ", ".join(
        f"{name} => %({name})s::{kind}" for name, kind in function.arguments if name in arguments
    )
    return f"select * from vera.{function.name}({named})"


def _vector(values: list[float]) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in values) + "]"


def _claims(draw: Draw, with_chunk: bool) -> Jsonb:
    rng = draw.rng
    claim: dict[str, Any] = {
        "subject": rng.choice(["payments-api", draw.text_with_marker("payments-api {}")]),
        "predicate": rng.choice(["runs on", "owned by"]),
        "object": rng.choice(["cluster blue", draw.text_with_marker("cluster {}")]),
    }
    if with_chunk:
        claim["chunk"] = 0
    if rng.random() < 0.3:
        claim["verification"] = "pending"
    return Jsonb([claim])


def argument_value(draw: Draw, function: Function, name: str, kind: str) -> Any:  # noqa: PLR0911, PLR0912
    """A value an attacker would pass: another tenant's id where an id goes, plausible otherwise."""
    rng, fn = draw.rng, function.name
    from pg_tests.support.searching import MODEL, embed  # noqa: PLC0415

    if name in {"group_id", "of_group", "parent_group_id", "target_group", "snapshot_group"}:
        return draw.group()
    if name == "groups":
        return draw.groups()
    if name in {"source_id", "episode_id", "chunk_id"}:
        return draw.an_id(name.removesuffix("_id"))
    if name == "fact_id":
        return draw.an_id(rng.choice(["fact", "proposal"]))
    if name in {"principal_id", "principal"}:
        return draw.an_id("principal")
    if name == "item_id":
        return draw.an_id(rng.choice(["fact", "chunk"]))
    if name == "fact_ids":
        return draw.ids("fact")
    if name == "key":
        return draw.key_reference()
    if name == "job_id":
        return draw.job()
    if name == "api_key":
        foe = draw.foe()
        prefix = rng.choice(foe.key_prefixes)
        secret = "".join(
            rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") for _ in range(43)
        )
        return Foreign(f"vera_{prefix}_{secret}", f"vera_{draw.hex(12)}_{secret}")
    if name in {"snapshot"} or (name == "name" and fn in {"create_snapshot", "drop_snapshot"}):
        return draw.snapshot_name()
    if name == "name":
        return {
            "declare_predicate": "runs on", "register_source": "docs", "create_group": "Payments",
            "create_api_key": "borrowed", "setting": "retract.cleanup_delay_seconds",
            "set_setting": "retract.cleanup_delay_seconds", "setting_default": "er.candidate_limit",
        }.get(fn, draw.text_with_marker("payments-api {}"))  # fmt: skip
    if name in {"query", "value"} and kind == "text":
        return rng.choice(
            ["payments-api cluster blue", draw.text_with_marker("payments-api runs on cluster {}")]
        )
    if name == "query_embedding":
        foe = draw.foe()
        return rng.choice([None, _vector(embed(f"payments-api runs on cluster blue {foe.marker} {foe.org}"))])
    if name == "as_of":
        return draw.as_of()
    if name == "kind":
        return {
            "vera.group_kind": rng.choice(["project", "workspace"]),
            "vera.principal_kind": rng.choice(["user", "service"]),
            "vera.item_kind": rng.choice(["fact", "passage"]),
        }.get(kind, "markdown")
    if kind == "vera.member_role":
        return rng.choice(["viewer", "member", "admin", "owner"])
    if kind == "vera.predicate_cardinality":
        return rng.choice(["functional", "multi"])
    if name == "decision":
        return rng.choice(["approve", "reject"])
    if name == "vote":
        return rng.choice(["up", "down"])
    if name == "claims":
        return _claims(draw, with_chunk=rng.random() < 0.5)
    if name == "chunks":
        return Jsonb([{"text": "payments-api runs on cluster blue", "heading": "Runbook"}])
    if name == "changes":
        return Jsonb({"runbook.md": {"sha256": "00"}, "old.md": None})
    if name == "config":
        return Jsonb({})
    if name == "weights":
        return None
    if name == "embeddings":
        return None  # filled in by function_attempt: one per fact id
    if name == "embedding_model":
        return rng.choice([MODEL, None])
    if name == "content_sha256":
        return bytes(rng.getrandbits(8) for _ in range(32))
    if name == "external_id":
        return "runbook.md"
    if name in {"trust_tier", "tier"}:
        return rng.randint(1, 4)
    if name in {"k", "candidates"}:
        return rng.choice([10, 100])
    if name in {"min_samples", "k_rrf", "max_chars"}:
        return 1
    if name in {"min_role"}:
        return rng.choice(["viewer", "member", "admin", "owner"])
    if kind == "double precision":
        return rng.choice([0.5, 1.0])
    if kind in {"integer", "bigint"}:
        return None
    if kind == "jsonb":
        return Jsonb(60) if fn == "set_setting" else None
    if kind == "timestamp with time zone":
        return None
    if name == "predicate":
        return "Runs On"
    # note, reason, description, title, uri, object_key, mime, path, email, display_name, token_env, ...
    return rng.choice([None, draw.text_with_marker("about {}")]) if kind == "text" else None


def function_attempt(draw: Draw, function: Function) -> Attempt:
    """One call of the function with drawn arguments, at least one of them another tenant's."""
    for _ in range(20):
        params = {name: argument_value(draw, function, name, kind) for name, kind in function.arguments}
        if "embeddings" in params:
            count = len(params.get("fact_ids") or [])
            from pg_tests.support.searching import embed  # noqa: PLC0415

            params["embeddings"] = "{" + ",".join(f'"{_vector(embed(str(i)))}"' for i in range(count)) + "}"
        if foreign_values(params) or not function.arguments:
            break
    isolation = (
        "repeatable read"
        if function.name == "create_snapshot" and draw.rng.random() < 0.7
        else "read committed"
    )
    return Attempt("functions", function.name, call_sql(function, list(params)), params, isolation=isolation)
