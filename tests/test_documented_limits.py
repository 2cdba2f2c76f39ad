"""Every input limit the SQL functions enforce is in docs/sql-api.md's "Input limits" table.

The limits are read from sql/functions/*.sql (comments left out): the argument and
number of each `vera.check_length(value, 'what', N)` and `vera.check_max_rows(n[, N])`,
and of each error message that states one ("... is over N characters|bytes", "... must
be [from] 0|1 to N", "... at most N ...", "... is % characters; at most N"). Each must
have a row of the table that names the function enforcing it (an internal helper: the
functions that call it, CALLERS) and states the number as the docs write it (2,000).
No limits table exists in the schema, so the messages are the source: a limit checked
without saying it in its message is not found here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "sql" / "functions"

_FUNCTION = re.compile(r"create or replace function vera\.(\w+)")
_LIMITS = (
    re.compile(r"check_length\((?:[^,()]|\([^()]*\))+,\s*'(?P<label>[^']+)',\s*(?P<limit>\d+)\)"),
    re.compile(
        r"'(?:[^'\n]*?\b)?(?P<label>%|[A-Za-z_][\w ]*?) is over (?P<limit>[\d,]+) (?:characters|bytes)"
    ),
    re.compile(r"'(?P<label>[A-Za-z_][\w ]*?) must be (?:from )?[01] to (?P<limit>[\d,]+)"),
    re.compile(r"'(?:%: )?(?P<label>[^'%]*?)at most (?P<limit>[\d,]+) (?P<what>[a-z ]+?)(?: per| in|,|')"),
    re.compile(r"'(?P<label>[\w ]+) is % characters; at most (?P<limit>\d+)'"),
    re.compile(r"check_max_rows\((?P<label>[\w.]+)(?:,\s*(?P<limit>\d+))?\)"),
)
_CHECK_MAX_ROWS_DEFAULT = 1000

# internal helpers -> the documented functions that enforce the limit through them
CALLERS = {
    "as_time_scope": ("store_chunks", "set_time_scopes"),
    "check_identity": ("principal_for_identity", "provision_identity"),
    "check_pack_array": ("store_context_pack",),
    "check_pack_period": ("store_context_pack",),
    "check_search_arguments": ("search", "search_snapshot"),
    "claim_problem": ("publish_claims",),
    "insert_principal": ("create_principal", "create_tenant"),
    "issue_api_key": ("create_api_key",),
    "readable_entities": ("get_entity", "explore"),
    "remember_chunks": ("remember",),
    "withdraw_episodes": ("retract_*", "erase_*"),
}


def enforced_limits() -> list[tuple[str, str, int]]:
    """(function, argument as its message names it, limit) for every limit in sql/functions."""
    found = set()
    for path in sorted(FUNCTIONS.glob("*.sql")):
        code = re.sub(r"--[^\n]*", "", path.read_text())
        starts = [(m.start(), m.group(1)) for m in _FUNCTION.finditer(code)]
        for pattern in _LIMITS:
            for match in pattern.finditer(code):
                inside = [name for start, name in starts if start < match.start()]
                if not inside:
                    continue
                parts = match.groupdict()
                label = (parts["label"] or "").strip() or (parts.get("what") or "")
                limit = int(parts["limit"].replace(",", "")) if parts["limit"] else _CHECK_MAX_ROWS_DEFAULT
                found.add((inside[-1], label, limit))
    return sorted(found)


def documented_rows() -> list[str]:
    """The rows of docs/sql-api.md's Input limits table."""
    text = (ROOT / "docs" / "sql-api.md").read_text()
    section = text.split("### Input limits", 1)[1].split("\n#", 1)[0]
    lines = section.splitlines()
    return [line for line in lines if line.startswith("| ") and not line.startswith("| argument")]


def test_the_limits_are_found() -> None:
    limits = enforced_limits()
    # a floor, so that a regex broken by a reformatting is noticed rather than checking nothing
    assert len(limits) >= 50
    assert ("record_feedback", "query", 4000) in limits
    assert ("store_chunks", "text", 20000) in limits


@pytest.mark.parametrize(("function", "label", "limit"), enforced_limits())
def test_every_enforced_limit_is_in_the_input_limits_table(function: str, label: str, limit: int) -> None:
    number = re.compile(rf"(?<![\d,]){re.escape(f'{limit:,}')}(?!,?\d)")
    names = CALLERS.get(function, (function,))
    rows = [row for row in documented_rows() if number.search(row) and any(f"`{n}`" in row for n in names)]
    assert rows, f"{function} limits {label!r} to {limit:,}: no row of the Input limits table names it"
