"""Every public SQL function, called with generated arguments (hypothesis).

The functions are read from the catalog at test time: every function in
schema vera that the application role may execute, so a new one is covered
without touching this file (and an argument type without a strategy fails
the test). Each example is one call, in its own transaction rolled back at
the end, made as the application role (`set session authorization
vera_app` on a superuser connection, so that the same transaction can be
inspected as the superuser afterwards) authenticated as a principal of
tenant A, while tenant B holds data in the same database. For each call:

1. it succeeds, or fails with a SQLSTATE that docs/sql-api.md's section
   "## Error codes" documents (parsed from the doc, so the two cannot drift);
2. nothing outside the caller's groups changed (a fingerprint of every vera
   table's rows outside A's groups, of B's identity rows and of the job
   queue's jobs for other groups, taken as the superuser inside the call's
   transaction, equals the one taken before);
3. nothing of B came back: no B group id, row id or marker text appears in
   the returned rows (unless the caller passed it in).

Run with -s to see the counts: functions, calls, outcomes by SQLSTATE.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pg_tests.support.databases import ROOT, Database
from pg_tests.support.searching import DIM, MODEL, embed, vector_literal
from pg_tests.support.seed import World
from pg_tests.support.seed import caller as caller_of

# Examples per function (a function without arguments needs few); the module runs in well under a minute.
# VERA_PROPERTY_EXAMPLES searches deeper (e.g. 500), still derandomized.
EXAMPLES = int(os.environ.get("VERA_PROPERTY_EXAMPLES", "50"))
EXAMPLES_WITHOUT_ARGUMENTS = 4
MARKER_A = "acme-marker-41q"
MARKER_B = "bravo-marker-93z"


# ---------------------------------------------------------------------------------------------------------
# The documented SQLSTATEs


def documented_sqlstates() -> set[str]:
    """The codes of the table in docs/sql-api.md's "## Error codes" section (its first column)."""
    text = (ROOT / "docs" / "sql-api.md").read_text()
    section = text.split("\n## Error codes\n", 1)[1].split("\n## ", 1)[0]
    table = section.split("\n### ", 1)[0]
    codes: set[str] = set()
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells:
            codes.update(re.findall(r"\b[0-9A-Z]{5}\b", cells[0]))
    return codes


def test_the_documented_sqlstates_are_read_from_the_doc() -> None:
    codes = documented_sqlstates()
    assert {"VA005", "VN001", "42501", "22023", "22001", "VE002", "VT001"} <= codes
    # the column header and the Python names are not codes
    assert all(re.fullmatch(r"[0-9A-Z]{5}", code) for code in codes)


# ---------------------------------------------------------------------------------------------------------
# The public functions


@dataclass(frozen=True)
class Function:
    name: str
    arg_names: tuple[str, ...]
    arg_types: tuple[str, ...]
    defaults: int

    def call(self, count: int) -> str:
        casts = ", ".join(f"%s::{self.arg_types[i]}" for i in range(count))
        return f"select * from vera.{self.name}({casts})"


def public_functions(conn: psycopg.Connection) -> list[Function]:
    rows = conn.execute(
        """select p.proname, coalesce(p.proargnames[1:p.pronargs], '{}'),
                  array(select format_type(t, null) from unnest(p.proargtypes::oid[]) with ordinality a(t, i)
                         order by i),
                  p.pronargdefaults
             from pg_proc p
            where p.pronamespace = 'vera'::regnamespace and p.prokind = 'f'
              and has_function_privilege('vera_app', p.oid, 'EXECUTE')
            order by p.proname, p.oid"""
    ).fetchall()
    return [Function(name, tuple(names), tuple(types), defaults) for name, names, types, defaults in rows]


# ---------------------------------------------------------------------------------------------------------
# JSON with numbers Python's json module cannot write (1e400) and raw fragments


class Raw(str):
    """A JSON fragment written as is."""


def dump(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dump(v) for v in value) + "]"
    return json.dumps(value)


# ---------------------------------------------------------------------------------------------------------
# The data the strategies draw from


@dataclass
class Pools:
    a_organisation: str
    a_workspace: str
    a_personal: str
    a_groups: list[str]
    b_groups: list[str]
    a_ids: dict[str, list[uuid.UUID]]
    w_ids: dict[str, list[uuid.UUID]]  # of A's workspace, where most plausible calls go
    b_ids: dict[str, list[uuid.UUID]]
    a_jobs: list[int]
    a_keys: dict[str, str]  # caller -> API key
    other_keys: list[str]  # revoked, expired, disabled, B's prefix with a wrong secret
    prefixes: list[str]  # A's and B's key prefixes
    jobs: list[int]  # A's and B's
    snapshot_names: list[str]
    source_names: list[str]
    b_markers: set[str] = field(default_factory=set)

    def ids(self, kind: str) -> list[uuid.UUID]:
        return [*self.a_ids.get(kind, []), *self.b_ids.get(kind, [])]


NUL_FREE = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
SQLISH = [
    "'; drop table vera.facts; --", "' or '1'='1", '"; select 1; --', "%s", "%(x)s", "\\", "$$", "$1",
    "null", "NULL", "{}", "[]", '{"a": 1}', "..", "../../etc/passwd", "/etc/passwd", "a/../b", "infinity",
    "-infinity", "NaN", "1e400", "-1", "0", "99999999999999999999", "true", "*", "_", "%", "o:*", ":*",
    "a & b | !c", "!!", "<->", "(", "''", "\\x00", "E'\\n'", "vera.facts", "current_user",
]  # fmt: skip
UNICODE = [
    "Ω≈ç√∫˜µ≤", "toán học", "İstanbul", "straße", "\u202eevil", "\u200b", "e\u0301", "🦄🔥", "٣٤٥",
    "中文字符", "ﷺ", "\ufeff", "\u00a0", "ǅ", "ﬀ",
]  # fmt: skip
CONTROL = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=31), min_size=1, max_size=8)
HUGE = st.builds(
    lambda n, unit: (unit * (n // len(unit) + 1))[:n],
    st.sampled_from([101, 201, 321, 501, 1001, 2001, 4001, 65_537, 100_000]),
    st.sampled_from(["x", "é", "a ", "'", "\u202e", "payments-api ", "字"]),
)
HOSTILE_TEXT = st.one_of(
    st.sampled_from(["", " ", "\t", "\n", *SQLISH, *UNICODE]),
    st.text(alphabet=NUL_FREE, max_size=30),
    CONTROL,
    HUGE,
)


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, in proportion to its weight (the first is where shrinking goes)."""
    return st.sampled_from([strategy for weight, strategy in choices for _ in range(weight)]).flatmap(
        lambda strategy: strategy
    )


def text_of(valid: list[str]) -> st.SearchStrategy[str | None]:
    """Mostly a valid-looking value, sometimes NULL or something hostile."""
    if not valid:
        return weighted((1, st.none()), (4, HOSTILE_TEXT))
    return weighted((7, st.sampled_from(valid)), (1, st.none()), (3, HOSTILE_TEXT))


ALL_ZERO = [0.0] * DIM
REAL = embed("ledger-db runs on cluster green")


def json_number() -> st.SearchStrategy[Any]:
    """Numbers JSON allows, mostly at the edges of real, float8 and integer, and things that are not numbers."""
    return weighted(
        (
            3,
            st.sampled_from([Raw("1e400"), Raw("1e-400"), Raw("-1e400"), Raw("1e308"), 1e-50, Raw("5e-324")]),
        ),
        (2, st.sampled_from([0, 1, -1, 0.5, 2, 2**31, -(2**31) - 1, 10**20])),
        (1, st.sampled_from(["0.5", "NaN", "Infinity", None, True, [], {}])),
        (1, st.floats(allow_nan=False, allow_infinity=False)),
        (1, st.integers(-(2**40), 2**40)),
    )


def json_embedding() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.just(REAL),
        st.just(REAL),
        st.just(ALL_ZERO),
        st.just([Raw("1e400")] * DIM),
        st.just([Raw("1e-400")] * DIM),
        st.just(["NaN"] * DIM),
        st.just([1.0, "a", *REAL[2:]]),
        st.just([None, *REAL[1:]]),
        st.just([]),
        st.just([[1.0]]),
        st.just(REAL[:3]),
        st.just([1.0] * 16_001),
        st.just("x"),
        st.just(None),
        st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=DIM, max_size=DIM),
    )


def json_time() -> st.SearchStrategy[Any]:
    return st.sampled_from([
        "2026-06-01T00:00:00Z", "1900-01-01T00:00:00Z", "1899-12-31T23:59:59Z", "infinity", "-infinity",
        "0044-03-15 BC", "1700-01-26", "9999-12-31 23:59:59+00", "10000-01-01",
        "4713-01-01 BC", "294276-12-31 23:59:59+00", "5874897-01-01", "2026-13-45", "not a date", 12345, None,
        "now", "epoch", "allballs", "",
    ])  # fmt: skip


def json_text(valid: list[str]) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), HOSTILE_TEXT, json_number(), st.none())


def claims() -> st.SearchStrategy[Any]:
    names = ["ledger-db", "payments-api", MARKER_A, MARKER_B, "db-1", "db-2"]
    claim = st.fixed_dictionaries(
        {
            "subject": json_text(names),
            "predicate": json_text(["RUNS_ON", "owned by", "OWNED_BY", "runs-on", "!!", "x" * 101]),
            "object": json_text(["cluster green", "cluster blue", MARKER_B]),
        },
        optional={
            "subject_type": json_text(["service", "person"]),
            "object_is_entity": st.one_of(st.booleans(), json_number()),
            "object_type": json_text(["cluster"]),
            "functional": st.one_of(st.booleans(), st.just("yes"), st.just(1)),
            "confidence": json_number(),
            "verification": json_text(["human_verified", "auto", "pending", "bogus"]),
            "valid_from": json_time(),
            "valid_to": json_time(),
            "chunk": json_number(),
            "evidence_start": json_number(),
            "evidence_end": json_number(),
            "fact_text": json_text(["ledger-db runs on cluster green"]),
            "embedding": json_embedding(),
            "subject_embedding": json_embedding(),
        },
    )
    return st.one_of(
        st.lists(claim, max_size=3),
        st.lists(claim, min_size=1, max_size=3).map(lambda cs: [*cs, "not an object"]),
        st.just([{"subject": "s", "predicate": "p", "object": "o"}] * 10_001),
        json_scalar(),
    )


def chunks() -> st.SearchStrategy[Any]:
    chunk = st.fixed_dictionaries(
        {"text": json_text(["ledger-db runs on cluster green", MARKER_A])},
        optional={
            "heading": json_text(["Runbook"]),
            "char_start": json_number(),
            "char_end": json_number(),
            "embedding": json_embedding(),
            "time_scope": st.one_of(json_scalar(), st.just([["1811-01-01", None], [None, "1995-01-01"]])),
            "time_scope_version": json_number(),
        },
    )
    return st.one_of(
        st.lists(chunk, max_size=3),
        st.lists(chunk, min_size=1, max_size=2).map(lambda cs: [*cs, 7]),
        st.just([{"text": "t"}] * 10_001),
        json_scalar(),
    )


def json_scalar() -> st.SearchStrategy[Any]:
    return st.sampled_from(
        [Raw("null"), [], {}, "text", 1, True, [[[[[[[[]]]]]]]], {"": None}, {"a": {"b": {"c": [1, 2]}}}]
    )


def json_object_of(keys: list[str], values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.dictionaries(st.one_of(st.sampled_from(keys), HOSTILE_TEXT), values, max_size=4),
        json_scalar(),
    )


CLAIM_KEYS = [
    "subject", "predicate", "object", "subject_type", "object_is_entity", "object_type", "functional",
    "confidence", "verification", "valid_from", "valid_to", "chunk", "evidence_start", "evidence_end",
    "fact_text", "embedding", "subject_embedding",
]  # fmt: skip
WEIGHT_NAMES = ["relevance", "authority", "verification", "recency", "feedback", "confidence", "half_life"]
SETTING_NAMES = [
    "er.trigram_link", "er.semantic_link", "er.semantic_candidate", "er.candidate_limit", "judge.contradiction",
    "retract.cleanup_delay_seconds", "ranking.calibration_min_samples", "no.such_setting",
]  # fmt: skip


def jsonb_strategy(pools: Pools, name: str) -> st.SearchStrategy[Any]:
    if name == "claims":
        built = claims()
    elif name == "chunks":
        built = chunks()
    elif name == "weights":
        built = json_object_of(
            WEIGHT_NAMES,
            st.one_of(json_number(), st.sampled_from(["30 days", "-1 day", "forever", "1000000 years", "0"])),
        )
    elif name == "changes":
        built = json_object_of(
            ["runbook.md", "a/b.md", "x" * 1001],
            st.one_of(st.just(Raw("null")), st.just({"sha256": "ab", "seen": 1}), json_scalar()),
        )
    elif name == "config":
        built = st.one_of(
            json_object_of(["root", "glob", "token"], json_text(["docs", "*.md"])),
            st.just({"root": "x" * 70_000}),
        )
    else:  # a setting's value and anything new
        built = st.one_of(json_number(), json_text(["30 days"]), json_scalar())
    return weighted((3, one_field(name).map(dump)), (2, built.map(dump)), (1, st.none()))


def one_field(name: str) -> st.SearchStrategy[Any]:
    """A plausible value of a JSON argument with one field hostile."""
    keys = {
        "claims": CLAIM_KEYS,
        "chunks": ["text", "heading", "char_start", "char_end", "embedding", "time_scope", "time_scope_version"],
        "scopes": ["chunk_id", "time_scope", "time_scope_version"],
        "weights": WEIGHT_NAMES, "changes": ["runbook.md"], "config": ["root"],
    }.get(name, ["value"])  # fmt: skip
    return st.builds(mutated, plausible_json(name), st.sampled_from(keys), HOSTILE_JSON)


def ints(extra: list[int], low: int, high: int) -> st.SearchStrategy[int | None]:
    special = [0, 1, -1, 2, 3, 4, 5, 10, 100, 1000, 1001, 10_000, 10_001, low, high, *extra]
    return weighted(
        (3, st.none()),
        (2, st.integers(1, 5)),
        (2, st.sampled_from([v for v in special if low <= v <= high])),
        (1, st.integers(low, high)),
    )


def timestamps() -> st.SearchStrategy[Any]:
    now = datetime.now(UTC)
    return st.one_of(
        st.none(),
        st.sampled_from([
            "infinity", "-infinity", "4713-01-01 BC", "294276-12-31 23:59:59+00", "1899-12-31 23:59:59+00",
            "1900-01-01 00:00:00+00", "0044-03-15 BC", "9999-12-31 23:59:59+00", "10000-01-01", "epoch", "now",
        ]),
        st.sampled_from([now, now + timedelta(days=1), now - timedelta(days=1), now + timedelta(days=36_600)]),
        st.datetimes(timezones=st.just(UTC)),
    )  # fmt: skip


def vectors() -> st.SearchStrategy[str | None]:
    return st.one_of(
        st.none(),
        st.sampled_from(
            [
                vector_literal(REAL),
                vector_literal(ALL_ZERO),
                vector_literal(REAL[:3]),
                "[1]",
                "[" + ",".join(["3.4e38"] * DIM) + "]",
                "[" + ",".join(["1e-45"] * DIM) + "]",
                vector_literal([1.0] * 2000),
            ]
        ),
        st.lists(st.floats(-1e6, 1e6, width=32), min_size=DIM, max_size=DIM).map(vector_literal),
    )


def vector_array(items: list[str | None]) -> str:
    return "{" + ",".join("NULL" if item is None else f'"{item}"' for item in items) + "}"


def strategy_for(pools: Pools, fn: Function, index: int) -> st.SearchStrategy[Any]:  # noqa: PLR0911, PLR0912
    """The strategy of one argument, by its type (and, for valid-looking values, its name)."""
    name, type_ = fn.arg_names[index] if index < len(fn.arg_names) else "", fn.arg_types[index]
    # mostly where A's owner works (its workspace holds the data), sometimes anywhere
    groups = [
        *[pools.a_workspace] * 8, *[pools.a_organisation] * 3, *[pools.a_personal] * 2, *pools.a_groups,
        *pools.b_groups, "o:0000000000000000", "p:ffffffffffffffff",
    ]  # fmt: skip
    if type_ == "text":
        if "group" in name or name == "parent":
            valid = groups
        elif name in {"api_key", "key"}:
            valid = [*pools.a_keys.values(), *pools.other_keys, *pools.prefixes]
        elif name == "kind":
            valid = ["markdown", "folder", "jira", "Markdown", "a" * 41]
        elif name == "decision":
            valid = ["approve", "reject", "Approve"]
        elif name == "vote":
            valid = ["up", "down", "sideways"]
        elif name in {"query", "snapshot"} or fn.name in {"lexical_query"}:
            valid = [
                "ledger-db",
                "payments-api runs on",
                MARKER_B,
                "the of and",
                "toán",
                *pools.snapshot_names,
            ]
        elif name == "embedding_model":
            valid = [MODEL, "other-model"]
        elif name == "name":
            valid = [*SETTING_NAMES, *pools.snapshot_names, *pools.source_names, "RUNS_ON", "Platform"]
        elif name == "email":
            valid = ["eve@example.com", "no-at-sign", "a@b@c", "a b@c.d"]
        elif name == "path":
            valid = ["docs", "docs/a.md", "../x", "/etc", "a/../../b"]
        elif name == "token_env":
            valid = ["GITHUB_TOKEN", "lower", "1BAD"]
        else:
            valid = ["runbook.md", "Platform", "text/markdown", "https://example.com/x", "a note"]
        return text_of(valid)
    if type_ == "uuid":
        kinds = {
            "source_id": ["sources"], "episode_id": ["episodes"], "fact_id": ["facts"], "chunk_id": ["chunks"],
            "item_id": ["facts", "chunks"], "principal_id": ["principals"],
        }.get(name, list(pools.a_ids))  # fmt: skip
        valid = [
            value for kind in kinds for value in [*pools.a_ids.get(kind, [])] * 3 + pools.b_ids.get(kind, [])
        ]
        return weighted(
            (8, st.sampled_from(valid)),
            (1, st.none()),
            (1, st.uuids()),
            (1, st.just(uuid.UUID(int=0))),
            (1, st.sampled_from(pools.ids("principals"))),
        )
    if type_ == "uuid[]":
        facts = pools.ids("facts")
        return st.one_of(
            st.none(),
            st.lists(st.one_of(st.sampled_from(facts), st.uuids(), st.none()), max_size=4),
            st.just([uuid.uuid4() for _ in range(10_001)]),
        )
    if type_ == "integer":
        return ints([-(2**31), 2**31 - 1, 16_000, 16_001], -(2**31), 2**31 - 1)
    if type_ == "integer[]":
        return st.one_of(
            st.none(),
            st.lists(st.one_of(st.integers(-(2**31), 2**31 - 1), st.none()), max_size=4),
            st.just([1] * 100_001),
        )
    if type_ == "boolean":
        return st.one_of(st.none(), st.booleans())
    if type_ == "bigint":
        return st.one_of(st.sampled_from(pools.jobs), ints([-(2**63), 2**63 - 1], -(2**63), 2**63 - 1))
    if type_ == "double precision":
        return st.one_of(
            st.none(),
            st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1.0, 1.0, 5e-324]),
            st.floats(),
        )
    if type_ == "timestamp with time zone":
        return timestamps()
    if type_ == "tstzrange":
        return st.sampled_from([
            None, "empty", "(,)", "[1811-01-01,1828-01-01)", "[2020-01-01,2019-01-01)", "[-infinity,infinity]",
            "[1995-01-01 00:00+00,1995-01-01 00:00+00]", "not a range",
        ])  # fmt: skip
    if type_ == "bytea":
        return st.one_of(
            st.none(),
            st.just(hashlib.sha256(b"x").digest()),
            st.just(b""),
            st.binary(max_size=64),
            st.just(b"\x00" * 100_000),
        )
    if type_ == "jsonb":
        return jsonb_strategy(pools, name)
    if type_ == "text[]":
        return st.one_of(
            st.none(),
            st.lists(st.one_of(st.sampled_from(groups), st.none(), HOSTILE_TEXT), max_size=4),
            st.just([pools.a_groups[0]] * 1000),
        )
    if type_ == "vector":
        return vectors()
    if type_ == "vector[]":
        return st.one_of(
            st.none(),
            st.lists(vectors(), max_size=3).map(vector_array),
        )
    if type_ in ENUMS:
        return st.one_of(st.none(), st.sampled_from(ENUMS[type_]))
    raise LookupError(f"no strategy for argument {name} of type {type_} of vera.{fn.name}")


def plausible_json(name: str) -> st.SearchStrategy[Any]:
    """A well-formed value of a JSON argument (before dump)."""
    now = datetime.now(UTC)
    built: st.SearchStrategy[Any]
    if name == "claims":
        claim = st.fixed_dictionaries(
            {
                "subject": st.sampled_from(["ledger-db", "payments-api", "db-1", "db-2"]),
                "predicate": st.sampled_from(["RUNS_ON", "owned by", "DEPENDS_ON"]),
                "object": st.sampled_from(["cluster green", "cluster blue", "team red"]),
            },
            optional={
                "subject_type": st.just("service"),
                "object_is_entity": st.booleans(),
                "functional": st.booleans(),
                "confidence": st.floats(0, 1),
                "verification": st.sampled_from(["human_verified", "auto", "pending"]),
                "valid_from": st.sampled_from([(now - timedelta(days=d)).isoformat() for d in (1, 30, 400)]),
                "valid_to": st.sampled_from([(now + timedelta(days=d)).isoformat() for d in (-2, 1, 30)]),
                "chunk": st.just(0),
                "evidence_start": st.integers(0, 20),
                "evidence_end": st.integers(0, 20),
                "fact_text": st.just("ledger-db runs on cluster green"),
                "embedding": st.just(REAL),
                "subject_embedding": st.just(REAL),
            },
        )
        built = st.lists(claim, min_size=1, max_size=3)
    elif name == "chunks":
        chunk = st.fixed_dictionaries(
            {
                "text": st.sampled_from(
                    ["ledger-db runs on cluster green", "payments-api runs on cluster blue"]
                )
            },
            optional={
                "heading": st.just("Runbook"),
                "char_start": st.integers(0, 20),
                "char_end": st.integers(0, 20),
                "embedding": st.just(REAL),
                "time_scope": st.just([["1811-01-01", "1828-01-01"], ["2019-01-01", None]]),
                "time_scope_version": st.integers(0, 3),
            },
        )
        built = st.lists(chunk, min_size=1, max_size=3)
    elif name == "scopes":
        scope = st.fixed_dictionaries(
            {
                "chunk_id": st.uuids().map(str),
                "time_scope": st.just([["1995-01-01", "1996-01-01"]]),
                "time_scope_version": st.integers(1, 3),
            }
        )
        built = st.lists(scope, min_size=1, max_size=3)
    elif name == "weights":
        built = st.dictionaries(st.sampled_from(WEIGHT_NAMES[:-1]), st.floats(0, 1), min_size=1, max_size=3)
    elif name == "changes":
        built = st.dictionaries(
            st.sampled_from(["runbook.md", "a/b.md"]),
            st.one_of(st.just(Raw("null")), st.just({"sha256": "ab"})),
        )
    elif name == "config":
        built = st.just({"root": "docs"})
    else:
        built = st.sampled_from([0.5, 60, True, 3, Raw("null")])
    return built


HOSTILE_JSON = weighted(
    (4, json_number()), (1, json_time()), (1, json_embedding()), (1, json_scalar()), (1, HOSTILE_TEXT)
)


def mutated(value: Any, key: str, hostile: Any) -> Any:
    """A plausible JSON value with one field (of its first object) replaced by a hostile one."""
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [{**value[0], key: hostile}, *value[1:]]
    if isinstance(value, dict):
        return {**value, key: hostile}
    return hostile


def plausible_for(pools: Pools, fn: Function, index: int) -> st.SearchStrategy[Any]:  # noqa: PLR0911, PLR0912
    """A value that the function should accept from A's owner: the caller's own groups and rows."""
    name, type_ = fn.arg_names[index] if index < len(fn.arg_names) else "", fn.arg_types[index]
    now = datetime.now(UTC)
    if type_ == "text":
        texts = {
            "api_key": list(pools.a_keys.values()), "key": pools.prefixes[:3], "kind": ["markdown"],
            "decision": ["approve", "reject"], "vote": ["up", "down"], "query": ["ledger-db", "cluster green"],
            "snapshot": [f"snap {MARKER_A}", "nightly"], "embedding_model": [MODEL], "email": ["eve@example.com"],
            "path": ["docs"], "token_env": ["GITHUB_TOKEN"], "mime": ["text/markdown"],
            "uri": ["https://example.com/x"], "display_name": ["Eve"],
        }  # fmt: skip
        if "group" in name:
            valid = [pools.a_workspace] * 6 + [pools.a_organisation, pools.a_personal]
        elif name in texts:
            valid = texts[name]
        elif name == "name" and "setting" in fn.name:
            valid = SETTING_NAMES[:-1]
        elif name == "name" and "snapshot" in fn.name:
            valid = [f"snap {MARKER_A}", "nightly", "new snapshot"]
        elif name == "name" and fn.name == "register_source":
            valid = [*pools.source_names[:2], "new source"]
        elif name == "name" and fn.name == "declare_predicate":
            valid = ["RUNS_ON", "owned by"]
        else:
            valid = ["runbook.md", "a note", "Platform"]
        return st.sampled_from(valid)
    if type_ == "uuid":
        kinds = {
            "source_id": ["sources"], "episode_id": ["episodes"], "fact_id": ["facts"], "chunk_id": ["chunks"],
            "item_id": ["facts", "chunks"], "principal_id": ["principals"],
        }.get(name, ["facts"])  # fmt: skip
        return st.sampled_from(
            [value for kind in kinds for value in pools.w_ids.get(kind, []) * 3 + pools.a_ids.get(kind, [])]
        )
    if type_ == "uuid[]":
        return st.lists(st.sampled_from(pools.a_ids["facts"]), min_size=1, max_size=1)
    if type_ == "integer":
        if "tier" in name:
            return st.integers(1, 4)
        return st.integers(1, 10)
    if type_ == "integer[]":
        return st.lists(st.integers(1, 5), min_size=1, max_size=1)
    if type_ == "boolean":
        return st.booleans()
    if type_ == "bigint":
        return st.sampled_from(pools.a_jobs)
    if type_ == "double precision":
        return st.sampled_from([1.0, 0.5])
    if type_ == "timestamp with time zone":
        return st.sampled_from([None, now - timedelta(days=1), now + timedelta(days=1)])
    if type_ == "tstzrange":
        return st.sampled_from([None, "[1811-01-01,1828-01-01)", "[2020-01-01,)"])
    if type_ == "bytea":
        return st.sampled_from([hashlib.sha256(b"x").digest(), hashlib.sha256(b"new").digest()])
    if type_ == "jsonb":
        return plausible_json(name).map(dump)
    if type_ == "text[]":
        return st.sampled_from([None, [pools.a_workspace]])
    if type_ == "vector":
        return st.just(vector_literal(REAL))
    if type_ == "vector[]":
        return st.just(vector_array([vector_literal(REAL)]))
    if type_ in ENUMS:
        return st.sampled_from(ENUMS[type_])
    raise LookupError(f"no strategy for argument {name} of type {type_} of vera.{fn.name}")


ENUMS = {
    "vera.group_kind": ["organisation", "workspace", "project", "personal"],
    "vera.principal_kind": ["user", "service"],
    "vera.member_role": ["viewer", "member", "admin", "owner"],
    "vera.predicate_cardinality": ["functional", "multi"],
    "vera.item_kind": ["fact", "passage"],
}
TYPES = {
    "text", "uuid", "uuid[]", "integer", "integer[]", "boolean", "bigint", "double precision", "timestamp with time zone",
    "tstzrange", "bytea", "jsonb", "text[]", "vector", "vector[]", *ENUMS,
}  # fmt: skip


def test_every_argument_type_has_a_strategy(db: Database) -> None:
    """A new public function with an argument type unknown here must get a strategy first."""
    with db.admin() as conn:
        functions = public_functions(conn)
    missing = {
        f"vera.{fn.name}({name} {type_})"
        for fn in functions
        for name, type_ in zip(fn.arg_names, fn.arg_types, strict=False)
        if type_ not in TYPES
    }
    assert not missing, f"no strategy for these argument types: {sorted(missing)}"
    assert len(functions) > 40


# ---------------------------------------------------------------------------------------------------------
# The world: the seeded tenants, and real data of each through the SQL API


def _seed_tenant_data(db: Database, key: str, group: str, marker: str) -> None:
    """Sources of each tier, episodes, passages and claims with vectors, a retraction's cleanup job, an
    ingestion job and a snapshot, through the SQL API as the tenant's owner; committed."""
    sha = hashlib.sha256(marker.encode()).digest()
    vector = json.dumps(embed(f"ledger-db runs on cluster green {marker}"))
    with db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        for tier in (1, 3, 4):
            source = conn.execute(
                "select vera.register_source(%s, 'markdown', %s, %s)", (group, f"tier {tier} {marker}", tier)
            ).fetchone()[0]  # type: ignore[index]
            episode = conn.execute(
                "select episode_id from vera.record_episode(%s, %s, %s, %s)",
                (group, source, f"page-{marker}-{tier}", sha),
            ).fetchone()[0]  # type: ignore[index]
            conn.execute(
                "select * from vera.store_chunks(%s, %s, %s::jsonb, %s)",
                (
                    group,
                    episode,
                    f'[{{"text": "{marker} ledger-db runs on cluster green", "embedding": {vector}}}]',
                    MODEL,
                ),
            )
            conn.execute(
                "select * from vera.publish_claims(%s, %s, %s::jsonb, %s)",
                (
                    group,
                    episode,
                    f'[{{"subject": "ledger-db", "predicate": "RUNS_ON", "object": "cluster {marker}", '
                    f'"chunk": 0, "embedding": {vector}, "subject_embedding": {vector}}}]',
                    MODEL,
                ),
            )
            if tier == 1:
                conn.execute("select vera.request_ingest(%s, %s, 'docs')", (group, source))
                retracted = conn.execute(
                    "select episode_id from vera.record_episode(%s, %s, %s, %s)",
                    (group, source, f"gone-{marker}", sha),
                ).fetchone()[0]  # type: ignore[index]
                conn.execute("select vera.retract_episode(%s, %s, 'test')", (group, retracted))
        conn.execute("select vera.set_setting(%s, 'judge.contradiction', 'true')", (group,))
        conn.commit()
        conn.execute("begin isolation level repeatable read")
        conn.execute("select vera.authenticate(%s)", (key,))
        conn.execute("select * from vera.create_snapshot(%s, %s)", (group, f"snap {marker}"))
        conn.commit()


def _ids(
    conn: psycopg.Connection, groups: list[str], principals: list[uuid.UUID]
) -> dict[str, list[uuid.UUID]]:
    queries = {
        "sources": "select source_id from vera.sources where group_id = any(%(g)s)",
        "episodes": "select episode_id from vera.episodes where group_id = any(%(g)s)",
        "chunks": "select chunk_id from vera.chunks where group_id = any(%(g)s)",
        "facts": "select fact_id from vera.facts where group_id = any(%(g)s)",
        "entities": "select entity_id from vera.entities where group_id = any(%(g)s)",
        "snapshots": "select snapshot_id from vera.snapshots where group_id = any(%(g)s)",
        "feedback": "select feedback_id from vera.feedback where group_id = any(%(g)s)",
        "weights": "select weight_set_id from vera.ranking_weights where group_id = any(%(g)s)",
        "keys": "select key_id from vera.api_keys where principal_id = any(%(p)s)",
        "principals": "select principal_id from vera.principals where principal_id = any(%(p)s)",
    }
    return {
        kind: [row[0] for row in conn.execute(sql, {"g": groups, "p": principals}).fetchall()]  # type: ignore[arg-type]
        for kind, sql in queries.items()
    }


def _tenant_groups(conn: psycopg.Connection, organisation: str) -> tuple[list[str], list[uuid.UUID]]:
    """A tenant's groups (its organisation's tree and its members' personal scopes) and principals."""
    tree = [
        row[0]
        for row in conn.execute(
            """with recursive tree(g) as (select %s::text
                    union select c.group_id from vera.groups c join tree on c.parent_group_id = tree.g)
               select g from tree""",
            (organisation,),
        ).fetchall()
    ]
    principals = [
        row[0]
        for row in conn.execute(
            "select distinct principal_id from vera.memberships where group_id = any(%s)", (tree,)
        ).fetchall()
    ]
    personal = [
        row[0]
        for row in conn.execute(
            "select personal_group_id from vera.principals where principal_id = any(%s)", (principals,)
        ).fetchall()
    ]
    return sorted({*tree, *personal}), principals


@pytest.fixture(scope="module")
def pools(world: World) -> Pools:
    db = world.db
    _seed_tenant_data(db, world.a.owner_key, world.a.workspace, MARKER_A)
    _seed_tenant_data(db, world.b.owner_key, world.b.workspace, MARKER_B)
    with db.admin() as conn:
        a_groups, a_principals = _tenant_groups(conn, world.a.organisation)
        b_groups, b_principals = _tenant_groups(conn, world.b.organisation)
        a_ids, b_ids = _ids(conn, a_groups, a_principals), _ids(conn, b_groups, b_principals)
        w_ids = _ids(conn, [world.a.workspace], a_principals)
        # plausible calls name live episodes (a retracted one is refused at once)
        w_ids["episodes"] = [
            row[0]
            for row in conn.execute(
                "select episode_id from vera.episodes where group_id = %s and status <> 'retracted'",
                (world.a.workspace,),
            ).fetchall()
        ]
        service_key = conn.execute(
            "select api_key from vera.issue_api_key(%s, 'service key', null)", (world.a.service,)
        ).fetchone()[0]  # type: ignore[index]
        prefixes = [
            row[0]
            for row in conn.execute(
                "select prefix from vera.api_keys where principal_id = any(%s)",
                (a_principals + b_principals,),
            ).fetchall()
        ]
        jobs = [row[0] for row in conn.execute("select id from procrastinate.procrastinate_jobs").fetchall()]
        a_jobs = [
            row[0]
            for row in conn.execute(
                "select id from procrastinate.procrastinate_jobs where args ->> 'group_id' = any(%s)",
                (a_groups,),
            ).fetchall()
        ]
        b_texts = {
            row[0]
            for row in conn.execute(
                "select prefix from vera.api_keys where principal_id = any(%s)", (b_principals,)
            ).fetchall()
        }
    # B's owner key with a wrong secret: the prefix is found, the secret is not B's
    wrong_secret = world.b.owner_key[:-43] + "A" * 43
    markers = {MARKER_B, *b_groups, *b_texts, world.b.owner_key, world.b.viewer_key}
    markers.update(str(value) for values in b_ids.values() for value in values)
    return Pools(
        a_organisation=world.a.organisation,
        a_workspace=world.a.workspace,
        a_personal=world.a.owner_personal,
        a_groups=a_groups,
        b_groups=b_groups,
        a_ids=a_ids,
        w_ids=w_ids,
        b_ids=b_ids,
        a_jobs=a_jobs,
        a_keys={"owner": world.a.owner_key, "viewer": world.a.viewer_key, "service": str(service_key)},
        other_keys=[
            world.revoked_key,
            world.expired_key,
            world.disabled_key,
            wrong_secret,
            "vera_",
            "vera_x_y",
        ],
        prefixes=prefixes,
        jobs=jobs,
        snapshot_names=["nightly", f"snap {MARKER_A}", f"snap {MARKER_B}", "new snapshot"],
        source_names=["docs", f"tier 1 {MARKER_A}", f"tier 4 {MARKER_B}", "new source"],
        b_markers=markers,
    )


# ---------------------------------------------------------------------------------------------------------
# The fingerprint of everything outside the caller's groups


def _fingerprint_queries(conn: psycopg.Connection) -> dict[str, str]:
    """One query per table: its rows outside A's groups (%(a)s), or of principals not of A (%(others)s)."""
    tables = [
        row[0]
        for row in conn.execute(
            "select relname from pg_class where relnamespace = 'vera'::regnamespace and relkind in ('r', 'p') "
            "order by relname"
        ).fetchall()
    ]
    queries: dict[str, str] = {}
    for table in tables:
        columns = {
            row[0]
            for row in conn.execute(
                "select attname from pg_attribute where attrelid = %s::regclass and attnum > 0 and not attisdropped",
                (f"vera.{table}",),
            ).fetchall()
        }
        if "group_id" in columns:
            where = "not (t.group_id = any(%(a)s))"
        elif table == "principals" or ("principal_id" in columns and table != "auth_context"):
            where = "t.principal_id = any(%(others)s)"
        elif "key_id" in columns and table != "auth_context":
            where = (
                "t.key_id in (select k.key_id from vera.api_keys k where k.principal_id = any(%(others)s))"
            )
        elif table == "auth_context":
            where = "t.backend_pid <> pg_backend_pid()"
        elif table == "term_stat_transactions":  # the call's own transaction's, applied at its commit
            where = "t.transaction <> pg_current_xact_id()"
        else:
            where = "true"
        queries[table] = f"select t::text from vera.{table} t where {where}"
    queries["procrastinate_jobs"] = (
        "select t::text from procrastinate.procrastinate_jobs t "
        "where not coalesce(t.args ->> 'group_id' = any(%(a)s), false)"
    )
    return queries


A_GROUPS_NOW = """
with recursive tree(g) as (
    select unnest(%(a_before)s::text[])
    union
    select c.group_id from vera.groups c join tree on c.parent_group_id = tree.g
)
select array(select g from tree
             union select group_id from vera.groups
                    where kind = 'personal' and not (group_id = any(%(all_before)s)))
"""


@dataclass
class Fingerprint:
    queries: dict[str, str]
    a_before: list[str]
    all_before: list[str]
    others: list[uuid.UUID]
    before: dict[str, list[str]] = field(default_factory=dict)

    def rows(self, conn: psycopg.Connection, tables: list[str] | None = None) -> dict[str, list[str]]:
        a_now = conn.execute(
            A_GROUPS_NOW, {"a_before": self.a_before, "all_before": self.all_before}
        ).fetchone()[0]  # type: ignore[index]
        params = {"a": a_now, "others": self.others}
        return {
            table: sorted(row[0] for row in conn.execute(query, params).fetchall())  # type: ignore[call-overload]
            for table, query in self.queries.items()
            if tables is None or table in tables
        }

    def digest(self, conn: psycopg.Connection, tables: list[str] | None = None) -> dict[str, str]:
        a_now = conn.execute(
            A_GROUPS_NOW, {"a_before": self.a_before, "all_before": self.all_before}
        ).fetchone()[0]  # type: ignore[index]
        params = {"a": a_now, "others": self.others}
        union = " union all ".join(
            f"select '{table}', count(*), md5(coalesce(string_agg(r, E'\\n' order by r), '')) "
            f"from ({query}) as q(r)"
            for table, query in self.queries.items()
            if tables is None or table in tables
        )
        if not union:
            return {}
        return {table: f"{count}:{md5}" for table, count, md5 in conn.execute(union, params).fetchall()}  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------
# One call


def shorten(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:100]}… ({len(text)} characters)"


@dataclass
class Stats:
    calls: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    functions: Counter[str] = field(default_factory=Counter)
    succeeded: Counter[str] = field(default_factory=Counter)


class Caller:
    """A superuser connection that makes each call as vera_app in a transaction of its own."""

    def __init__(
        self, conn: psycopg.Connection, pools: Pools, fingerprint: Fingerprint, codes: set[str]
    ) -> None:
        self.conn = conn
        self.pools = pools
        self.fingerprint = fingerprint
        self.codes = codes
        self.stats = Stats()
        with conn.transaction():
            self.digest_before = fingerprint.digest(conn)
            fingerprint.before = fingerprint.rows(conn)

    def casts(self, fn: Function, args: list[Any]) -> bool:
        """Whether every argument is a value of its type (else the cast, not the function, refused it)."""
        for type_, value in zip(fn.arg_types, args, strict=False):
            try:
                with self.conn.transaction():
                    self.conn.execute(f"select %s::{type_}", (value,))  # type: ignore[arg-type]
            except psycopg.Error:
                return False
        return True

    def call(self, fn: Function, args: list[Any], who: str | None, isolation: str) -> None:
        conn = self.conn
        conn.rollback()
        conn.execute(f"set transaction isolation level {isolation}")  # type: ignore[arg-type]
        conn.execute("set local statement_timeout = '20s'")
        conn.execute("set session authorization vera_app")
        if who is not None:
            conn.execute("select vera.authenticate(%s)", (self.pools.a_keys[who],))
        conn.execute("savepoint call")
        rows: list[Any] | None = None
        error: psycopg.Error | None = None
        try:
            rows = conn.execute(fn.call(len(args)), args).fetchall()  # type: ignore[arg-type]
        except psycopg.Error as raised:
            error = raised
            conn.execute("rollback to savepoint call")
        conn.execute("reset session authorization")
        self.stats.calls += 1
        self.stats.functions[fn.name] += 1
        try:
            if error is not None:
                code = error.sqlstate or "?"
                if code not in self.codes:
                    conn.rollback()
                    if not self.casts(fn, args):
                        self.stats.outcomes[f"cast refused ({code})"] += 1
                        return
                self.stats.outcomes[code] += 1
                assert code in self.codes, (
                    f"vera.{fn.name} raised undocumented SQLSTATE {code}: "
                    f"{shorten(error.diag.message_primary)} (context: {shorten(error.diag.context)})"
                )
                return
            self.stats.outcomes["ok"] += 1
            self.stats.succeeded[fn.name] += 1
            self.check_no_leak(fn, args, rows or [])
            self.check_nothing_else_changed(fn)
        finally:
            conn.rollback()

    def check_no_leak(self, fn: Function, args: list[Any], rows: list[Any]) -> None:
        passed = " ".join(str(arg) for arg in args)
        shown = "\n".join(str(row) for row in rows)
        leaked = sorted(m for m in self.pools.b_markers if m in shown and m not in passed)
        assert not leaked, f"vera.{fn.name} returned tenant B's {leaked[:5]}: {shorten(shown)}"

    def check_nothing_else_changed(self, fn: Function) -> None:
        # only a table the call's transaction wrote to can differ: PostgreSQL counts every row a
        # transaction inserts, updates or deletes, in any function or trigger it ran (savepoints
        # rolled back included), so the digest skips the others (most of the test's time otherwise)
        written = [
            row[0]
            for row in self.conn.execute(
                "select relname from pg_stat_xact_all_tables where schemaname in ('vera', 'procrastinate')"
                " and n_tup_ins + n_tup_upd + n_tup_del > 0"
            ).fetchall()
        ]
        after = self.fingerprint.digest(self.conn, written)
        changed = sorted(table for table in after if after[table] != self.digest_before.get(table))
        if not changed:
            return
        rows = self.fingerprint.rows(self.conn, changed)
        details = []
        for table in changed:
            before, now = set(self.fingerprint.before[table]), set(rows[table])
            details.append(
                f"{table}: removed {[shorten(r) for r in sorted(before - now)[:3]]}, "
                f"added {[shorten(r) for r in sorted(now - before)[:3]]}"
            )
        raise AssertionError(f"vera.{fn.name} changed rows outside the caller's groups: {'; '.join(details)}")


# ---------------------------------------------------------------------------------------------------------
# The property


def arguments(pools: Pools, fn: Function) -> st.SearchStrategy[list[Any]]:
    """Two calls in three are plausible (A's own groups and rows) but for at most one argument drawn from
    everything; the third draws every argument from everything. Trailing defaults may be left out."""
    count = len(fn.arg_types)
    anything = [strategy_for(pools, fn, i) for i in range(count)]
    plausible = [plausible_for(pools, fn, i) for i in range(count)]
    # among plausible arguments, a JSON one goes wrong in one field (a broken whole is refused at once)
    odd_one = [
        one_field(fn.arg_names[i]).map(dump) if fn.arg_types[i] == "jsonb" else anything[i]
        for i in range(count)
    ]

    def build(n: int, hostile: bool, odd: int) -> st.SearchStrategy[list[Any]]:
        parts = [anything[i] if hostile else odd_one[i] if i == odd else plausible[i] for i in range(n)]
        return st.tuples(*parts).map(list) if parts else st.just([])

    # the odd argument is a JSON one more often: most of what can go wrong inside a function is there
    odd = [-1, *range(count), *[i for i in range(count) if fn.arg_types[i] == "jsonb"] * 3]
    return st.tuples(
        st.integers(count - fn.defaults, count), st.sampled_from([False, False, True]), st.sampled_from(odd)
    ).flatmap(lambda drawn: build(*drawn))


def examples(fn: Function) -> int:
    """Examples per function: few without arguments, more when it takes JSON (claims, chunks, weights)."""
    if not fn.arg_types:
        return EXAMPLES_WITHOUT_ARGUMENTS
    return EXAMPLES * 5 if "jsonb" in fn.arg_types else EXAMPLES


def _property(
    caller: Caller, pools: Pools, fn: Function, who: st.SearchStrategy[Any], isolation: st.SearchStrategy[str]
) -> Any:
    @settings(
        max_examples=examples(fn),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(args=arguments(pools, fn), who=who, isolation=isolation)
    def property_of(args: list[Any], who: str | None, isolation: str) -> None:
        caller.call(fn, args, who, isolation)

    return property_of


def _caller(conn: psycopg.Connection, world: World, pools: Pools) -> Caller:
    """The caller for this database as it is now (A's groups and the other principals read from it)."""
    a_before, a_principals = _tenant_groups(conn, world.a.organisation)
    all_before = [row[0] for row in conn.execute("select group_id from vera.groups").fetchall()]
    others = [
        row[0]
        for row in conn.execute(
            "select principal_id from vera.principals where principal_id <> all(%s)", (a_principals,)
        ).fetchall()
    ]
    fingerprint = Fingerprint(_fingerprint_queries(conn), a_before, all_before, others)
    conn.commit()
    return Caller(conn, pools, fingerprint, documented_sqlstates())


def test_the_checks_see_a_change_or_a_leak_outside_the_callers_groups(world: World, pools: Pools) -> None:
    probe = Function("probe", (), (), 0)
    with world.db.admin(autocommit=False) as conn:
        caller = _caller(conn, world, pools)
        conn.execute("set search_path = procrastinate, public")  # for Procrastinate's triggers
        conn.commit()
        # the caller's own groups are its business
        conn.execute("update vera.sources set uri = 'changed' where group_id = %s", (world.a.workspace,))
        caller.check_nothing_else_changed(probe)
        changes = {
            "sources": ("update vera.sources set uri = 'changed' where group_id = %s", world.b.workspace),
            "principals": (
                "update vera.principals set display_name = 'changed' where principal_id = %s",
                world.b.owner,
            ),
            "api_keys": (
                "update vera.api_keys set revoked_at = now() where principal_id = %s",
                world.b.owner,
            ),
            "groups": ("update vera.groups set name = 'changed' where group_id = %s", world.b.organisation),
            "procrastinate_jobs": (
                "update procrastinate.procrastinate_jobs set priority = 7 where args ->> 'group_id' = %s",
                world.b.workspace,
            ),
        }
        for table, (sql, value) in changes.items():
            conn.rollback()
            assert conn.execute(sql, (value,)).rowcount > 0, table  # type: ignore[arg-type]
            with pytest.raises(AssertionError, match=f"{table}: "):
                caller.check_nothing_else_changed(probe)
        conn.rollback()
    with pytest.raises(AssertionError, match=MARKER_B):
        caller.check_no_leak(probe, [], [("text", f"cluster {MARKER_B}")])
    with pytest.raises(AssertionError, match=world.b.workspace):
        caller.check_no_leak(probe, [], [({"group_id": world.b.workspace},)])
    # echoing the caller's own argument is no leak
    caller.check_no_leak(probe, [f"cluster {MARKER_B}"], [(MARKER_B,)])


def test_a_confidence_below_reals_range_is_stored_as_zero(world: World, pools: Pools) -> None:
    """Found by the property below: 1e-251 is from 0 to 1, but underflowed real (22003)."""
    with caller_of(world.db, world.a.owner_key) as conn:
        conn.execute(
            "select * from vera.publish_claims(%s, null, %s::jsonb)",
            (
                world.a.workspace,
                '[{"subject": "tiny", "predicate": "P", "object": "o", "confidence": 1e-251}]',
            ),
        )
        rows = conn.execute(
            "select confidence from vera.pending_reviews(%s) where subject = 'tiny'", (world.a.workspace,)
        ).fetchall()
    assert rows == [(0.0,)]


@pytest.mark.parametrize(
    "weights",
    ['{"relevance": 1e400}', '{"relevance": 1e-400}', '{"relevance": 1e308, "authority": 1e308}',
     '{"relevance": 1e400, "authority": 1}', '{"relevance": 1.0, "authority": 9.186804905370483e-94}',
     '{"recency": 1, "feedback": 1e-300}'],
)  # fmt: skip
def test_weights_beyond_float8_are_scaled_not_refused_with_22003(
    world: World, pools: Pools, weights: str
) -> None:
    """Found by the property below: any non-negative JSON number is a weight (scaled to sum 1)."""
    with caller_of(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select score from vera.search('cluster green', k => 1, weights => %s::jsonb)",
            (weights,),
        ).fetchall()
    assert rows and all(0 <= score <= 1 for (score,) in rows)


def test_every_public_function_keeps_its_contract(world: World, pools: Pools) -> None:
    started = time.monotonic()
    failures: list[str] = []
    with world.db.admin(autocommit=False) as conn:
        functions = public_functions(conn)
        caller = _caller(conn, world, pools)
        who = st.sampled_from(["owner"] * 12 + ["viewer", "service", None])
        isolation = st.sampled_from(["read committed"] * 5 + ["repeatable read"])

        for fn in functions:
            property_of = _property(caller, pools, fn, who, isolation)
            try:
                property_of()
            except Exception as failed:  # every function is tried; all failures are reported
                notes = "\n".join(getattr(failed, "__notes__", []))
                failures.append(f"{fn.name}: {failed}\n{notes}")

    stats = caller.stats
    print(
        f"\nSQL properties: {len(functions)} functions, {stats.calls} calls in {time.monotonic() - started:.1f}s; "
        f"outcomes: {dict(stats.outcomes.most_common())}"
    )
    never = [fn.name for fn in functions if stats.succeeded[fn.name] == 0]
    print(f"functions that never succeeded (only refusals were checked): {never}")
    missing = [fn.name for fn in functions if stats.functions[fn.name] == 0]
    assert not missing, f"never called: {missing}"
    assert not failures, "\n\n".join(failures)
