"""What the HTTP API answers beside the shapes the MCP tools share (shapes.py,
knowledge_shapes.py): pages of listings with their next cursor, and the rows of the
access, source and curation areas, each derived from the client's dataclass."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, Field

from vera_client.api.access import ApiKeyInfo, NewApiKey
from vera_client.api.curation import Withdrawal
from vera_client.api.health import GroupHealth, GroupJobs, ModelUsage
from vera_client.api.jobs import GraphCheckResult
from vera_client.api.sources import Source
from vera_mcp.domain.knowledge_shapes import (
    ConflictOut,
    FactChangeOut,
    FactOut,
    ProposalStateOut,
)
from vera_mcp.domain.rows import FromClient, mirrors

NextCursor = Field(default=None, description="pass as cursor for the next page; null on the last")


@mirrors(Source, without=["config"])
class SourceRowOut(FromClient):
    """A registered source (its connector settings are not shown)."""


class SourcePage(BaseModel):
    sources: list[SourceRowOut]
    next_cursor: str | None = NextCursor


class SourceCreated(BaseModel):
    source_id: UUID
    group_id: str


class JobQueued(BaseModel):
    job_id: int = Field(description="the worker's job id")


@mirrors(Withdrawal)
class WithdrawalOut(FromClient):
    """A retraction or erasure, committed, and its cleanup outside PostgreSQL."""


class ProposalPage(BaseModel):
    proposals: list[ProposalStateOut]
    next_cursor: str | None = NextCursor


class ChangePage(BaseModel):
    since: datetime
    changes: list[FactChangeOut]
    next_cursor: str | None = NextCursor


class ConflictPage(BaseModel):
    conflicts: list[ConflictOut]
    next_cursor: str | None = NextCursor


class FactHistory(BaseModel):
    """A fact's value over time: the values of its subject and predicate it superseded, itself, and
    those that superseded it, oldest first."""

    fact_id: UUID
    versions: list[FactOut]


@mirrors(ApiKeyInfo)
class KeyOut(FromClient):
    """A key as listed: no secret."""


class KeyList(BaseModel):
    keys: list[KeyOut]


class NewKeyOut(BaseModel):
    """A key as created: api_key is its secret, shown this once (written out here, not derived from
    the row: rows.py refuses to copy a secret field into a model by itself)."""

    key_id: UUID
    prefix: str
    api_key: str = Field(description="the secret: send it as the bearer token; it is not shown again")

    @classmethod
    def of(cls, key: NewApiKey) -> NewKeyOut:
        return cls(key_id=key.key_id, prefix=key.prefix, api_key=key.api_key)


class KeyRevoked(BaseModel):
    prefix: str
    revoked: bool = Field(description="whether a live key was revoked")


class PrincipalCreated(BaseModel):
    principal_id: UUID
    group_id: str


class MemberOut(BaseModel):
    group_id: str
    principal_id: UUID
    role: str | None = Field(description="the role now; null once removed")


class RouteClassUsage(BaseModel):
    route_class: str
    limit: str = Field(description="calls allowed per window, per principal (COUNT/UNIT)")
    organisation_limit: str = Field(description="calls allowed per window, shared by an organisation")


class Usage(BaseModel):
    """The caller's quotas per route class (the same ledger counts MCP tool calls)."""

    principal_id: str
    quotas_enforced: bool
    classes: list[RouteClassUsage]


@mirrors(GroupJobs)
class GroupJobsOut(FromClient):
    """The jobs of one scope in one queue and state (todo: due and waiting; scheduled: for a later
    time; doing: running, `stalled` of them with no heartbeat from their worker)."""


@mirrors(GraphCheckResult)
class GraphCheckOut(FromClient):
    """The last check of one scope's graph against PostgreSQL; drift null means none."""


@mirrors(ModelUsage)
class ModelUsageOut(FromClient):
    """What the worker's calls to one model for one scope and purpose used over the period:
    calls, tokens, and the cost in USD estimated from the worker's configured prices (not an
    invoice; unpriced_calls: calls of a model without a price, which add nothing to it)."""


@mirrors(GroupHealth)
class HealthOut(FromClient):
    """The jobs, graph checks and model usage (over usage_days days) of the scopes you
    administer (or of the one asked about)."""
