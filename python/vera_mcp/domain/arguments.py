"""The typed arguments of the MCP tools, with their bounds from limits.py, so
that each tool's JSON Schema states them and the SDK refuses a call beyond them
before any work starts."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import Field

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
