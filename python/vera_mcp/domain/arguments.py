"""The typed arguments of the MCP tools, with their bounds from limits.py, so
that each tool's JSON Schema states them and the SDK refuses a call beyond them
before any work starts."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Literal, Self
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from vera_mcp.domain.limits import LIMITS

FactId = Annotated[UUID, Field(description="a fact_id as search, get_entity, explore or changes returned it")]
PackId = Annotated[UUID, Field(description="a pack_id as get_context returned it")]
Query = Annotated[
    str,
    Field(min_length=1, max_length=LIMITS.max_query_chars, description="what to look for, in any language"),
]
ScopeName = Annotated[
    str,
    Field(min_length=1, max_length=LIMITS.max_name_chars, description="a group_id or a name whoami lists"),
]
ReadScopes = Annotated[
    list[ScopeName] | None,
    Field(max_length=LIMITS.max_scopes, description="scopes to read; default: every scope you can read"),
]
AsOf = Annotated[
    datetime | None, Field(description="knowledge time (ISO 8601): answer as VERA knew it then; default: now")
]
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso_day(value: object) -> object:
    """Only a YYYY-MM-DD string is a day here (pydantic alone would also take a number of seconds)."""
    if value is not None and not (isinstance(value, str) and _ISO_DAY.fullmatch(value)):
        raise ValueError("a day is written YYYY-MM-DD")
    return value


Day = Annotated[date | None, BeforeValidator(_iso_day)]


class Period(BaseModel):
    """The period a question asks about, in days: from start up to end (exclusive); null is open."""

    model_config = ConfigDict(extra="forbid")

    start: Day = Field(default=None, description="the first day (YYYY-MM-DD); null: open")
    end: Day = Field(default=None, description="the day after the last (YYYY-MM-DD); null: open")

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        if self.start is None and self.end is None:
            raise ValueError("a period needs a start, an end or both (leave during out to ask about none)")
        if self.start is not None and self.end is not None and self.start >= self.end:
            raise ValueError(f"the period must end after it starts: {self.start} .. {self.end}")
        return self

    def days(self) -> tuple[date | None, date | None]:
        return self.start, self.end


During = Annotated[
    Period | None,
    Field(
        description="the period the question asks about; default: the one the query's words state "
        '("from 2019 to 2021", "in March 2024"), if any. Hits whose time overlaps it rank higher'
    ),
]
K = Annotated[int, Field(ge=LIMITS.min_k, le=LIMITS.max_k, description="how many hits")]
ScopeNames = Annotated[
    list[ScopeName] | None,
    Field(max_length=LIMITS.max_scopes, description="scopes to search; default: every scope you can read"),
]
SnapshotName = Annotated[str, Field(min_length=1, max_length=LIMITS.max_name_chars)]
Note = Annotated[str | None, Field(max_length=LIMITS.max_note_chars)]
ItemKind = Literal["fact", "passage"]
EntityName = Annotated[
    str,
    Field(
        min_length=1, max_length=LIMITS.max_entity_chars, description="an entity's name, alias or entity_id"
    ),
]
Depth = Annotated[int, Field(ge=LIMITS.min_depth, le=LIMITS.max_depth, description="hops from the entity")]
Rows = Annotated[int, Field(ge=LIMITS.min_rows, le=LIMITS.max_rows, description="at most this many")]
TokenBudget = Annotated[
    int,
    Field(
        ge=LIMITS.min_token_budget,
        le=LIMITS.max_token_budget,
        description="the pack's size in tokens (the MiniLM tokenizer's count)",
    ),
]
MinAuthority = Annotated[
    float | None, Field(ge=0.0, le=1.0, description="leave out items whose source's authority is lower")
]
MaxTier = Annotated[
    int | None, Field(ge=1, le=4, description="leave out items from sources of a higher (less trusted) tier")
]
Position = Annotated[
    int, Field(ge=1, le=LIMITS.max_position, description="an item's position in the pack (from 1)")
]
Vote = Literal["up", "down"]
Subject = Annotated[str, Field(min_length=1, max_length=LIMITS.max_entity_chars)]
Predicate = Annotated[
    str,
    Field(min_length=1, max_length=LIMITS.max_predicate_chars, description="e.g. RUNS_ON or 'owned by'"),
]
Object = Annotated[str, Field(min_length=1, max_length=LIMITS.max_object_chars)]
EvidenceText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=LIMITS.max_evidence_chars,
        description="the text the claim rests on (reviewers read it)",
    ),
]
