"""How many calls of each tool class a principal may make, and in which window.

A limit is written as "COUNT/UNIT" ("120/min", "10/hour"); the ledgers
(adapters/quotas.py) count calls in fixed windows of that length, aligned to
the epoch, so every server instance agrees on where a window starts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from vera_client.domain.errors import InvalidArgumentError
from vera_mcp.domain.access import ToolClass

_UNITS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "day": 86_400,
}
_RATE = re.compile(r"^\s*(\d{1,9})\s*/\s*([a-z]+)\s*$")
# a window longer than a day would keep counters (and a refused caller) around for days
MAX_WINDOW_SECONDS = 86_400


@dataclass(frozen=True, slots=True)
class Rate:
    """At most `limit` calls in each window of `window_seconds`."""

    limit: int
    window_seconds: int

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise InvalidArgumentError(f"a quota allows at least 1 call per window, not {self.limit}")
        if not 1 <= self.window_seconds <= MAX_WINDOW_SECONDS:
            raise InvalidArgumentError(
                f"a quota window lasts 1 s to {MAX_WINDOW_SECONDS} s, not {self.window_seconds} s"
            )

    def __str__(self) -> str:
        unit = {1: "s", 60: "min", 3600: "hour", 86_400: "day"}.get(self.window_seconds)
        return f"{self.limit}/{unit}" if unit else f"{self.limit}/{self.window_seconds}s"

    def window(self, now: float) -> tuple[int, float]:
        """The index of the window holding `now` (seconds since the epoch) and the seconds left in it."""
        index = math.floor(now / self.window_seconds)
        return index, (index + 1) * self.window_seconds - now


def parse_rate(text: str) -> Rate:
    """A Rate from "COUNT/UNIT", UNIT one of s, sec, second, min, minute, h, hour, day."""
    match = _RATE.match(text.lower()) if isinstance(text, str) else None
    unit = match.group(2) if match else ""
    if unit not in _UNITS and unit.endswith("s"):  # plurals: "hours", "mins"
        unit = unit[:-1]
    if match is None or unit not in _UNITS:
        raise InvalidArgumentError(
            f"bad quota {text!r}: write COUNT/UNIT, e.g. '120/min' or '10/hour' "
            f"(units: {', '.join(sorted(_UNITS))})"
        )
    return Rate(limit=int(match.group(1)), window_seconds=_UNITS[unit])


DEFAULT_RATES: Mapping[ToolClass, Rate] = MappingProxyType(
    {
        ToolClass.READ: Rate(120, 60),
        ToolClass.CONTEXT: Rate(20, 60),
        ToolClass.PROPOSE: Rate(30, 60),
        ToolClass.FEEDBACK: Rate(60, 60),
        ToolClass.SNAPSHOT: Rate(10, 3600),
        ToolClass.REVIEW: Rate(60, 60),
        ToolClass.ADMIN: Rate(30, 60),
    }
)


# an organisation's ceiling by default: ten principals' worth of calls, in the same window
ORGANISATION_FACTOR = 10
DEFAULT_ORGANISATION_RATES: Mapping[ToolClass, Rate] = MappingProxyType(
    {c: Rate(r.limit * ORGANISATION_FACTOR, r.window_seconds) for c, r in DEFAULT_RATES.items()}
)


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    """The rate of every tool class, per principal and, as a ceiling all the principals of one
    organisation share, per organisation (a class not named keeps its default).

    The ceiling is what stops an admin from multiplying the allowance by minting service
    accounts: each call counts against its principal and against every organisation the
    principal belongs to."""

    rates: Mapping[ToolClass, Rate] = field(default_factory=lambda: DEFAULT_RATES)
    organisation_rates: Mapping[ToolClass, Rate] = field(default_factory=lambda: DEFAULT_ORGANISATION_RATES)

    def __post_init__(self) -> None:
        missing = (set(ToolClass) - set(self.rates)) | (set(ToolClass) - set(self.organisation_rates))
        if missing:
            raise InvalidArgumentError(f"no quota for tool classes {sorted(c.value for c in missing)}")

    def rate(self, tool_class: ToolClass) -> Rate:
        return self.rates[tool_class]

    def organisation_rate(self, tool_class: ToolClass) -> Rate:
        return self.organisation_rates[tool_class]

    @classmethod
    def from_settings(
        cls,
        overrides: Mapping[str, str | Rate] | None = None,
        *,
        organisation: Mapping[str, str | Rate] | None = None,
    ) -> QuotaLimits:
        """The defaults with some classes changed, e.g. {"read": "300/min", "snapshot": "5/hour"},
        per principal and (organisation=) per organisation."""
        return cls(
            MappingProxyType(_with_overrides(DEFAULT_RATES, overrides)),
            MappingProxyType(_with_overrides(DEFAULT_ORGANISATION_RATES, organisation)),
        )


def _with_overrides(
    defaults: Mapping[ToolClass, Rate], overrides: Mapping[str, str | Rate] | None
) -> dict[ToolClass, Rate]:
    rates = dict(defaults)
    for name, value in (overrides or {}).items():
        try:
            tool_class = ToolClass(name)
        except ValueError:
            known = ", ".join(c.value for c in ToolClass)
            raise InvalidArgumentError(f"unknown tool class {name!r} in quotas (known: {known})") from None
        rates[tool_class] = value if isinstance(value, Rate) else parse_rate(value)
    return rates


class GroupRow(Protocol):
    """What organisations_of reads of a membership (vera_client.api.access.Membership)."""

    @property
    def group_id(self) -> str: ...
    @property
    def group_kind(self) -> str: ...
    @property
    def parent_group_id(self) -> str | None: ...


def organisations_of(memberships: Iterable[GroupRow]) -> frozenset[str]:
    """The organisations a caller belongs to: those it is a member of, and the roots of the
    workspaces and projects it reaches (followed up through the groups listed)."""
    rows = list(memberships)
    parents = {row.group_id: row.parent_group_id for row in rows}
    found = set()
    for row in rows:
        if row.group_kind == "personal":
            continue
        group, parent, steps = row.group_id, row.parent_group_id, 0
        while parent is not None and steps <= len(rows):  # the bound: a malformed listing cannot loop
            group, parent, steps = parent, parents.get(parent), steps + 1
        found.add(group)
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class ThrottleLimits:
    """Failed bearer tokens allowed per client address and per API key prefix, and how long a
    refused token is refused from memory (adapters/auth_throttle.py)."""

    per_address: Rate
    per_key_prefix: Rate
    negative_cache_s: float
