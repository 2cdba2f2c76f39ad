"""Who calls the MCP server and what they may do: the contract between the
token verifiers (API keys, OIDC), the quota ledger and the tools.

A verifier turns a bearer token into a VerifiedCaller; every tool runs as its
`caller` through the client, so row-level security decides what it sees. The
scopes only narrow what a token may attempt (an OIDC token's `scope` claim);
they never widen what the principal's roles allow in SQL.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Literal

from vera_client.domain.callers import ApiKey, Principal
from vera_client.domain.errors import VeraError


class Scope(enum.StrEnum):
    """OAuth scopes a token may carry; each tool needs exactly one."""

    READ = "read"
    PROPOSE = "propose"
    FEEDBACK = "feedback"
    SNAPSHOT = "snapshot"
    REVIEW = "review"
    ADMIN = "admin"  # credentials and memberships (HTTP API); roles in SQL still decide


ALL_SCOPES = frozenset(Scope)


class ToolClass(enum.StrEnum):
    """What quotas count: each tool belongs to one class."""

    READ = "read"
    CONTEXT = "context"
    PROPOSE = "propose"
    FEEDBACK = "feedback"
    SNAPSHOT = "snapshot"
    REVIEW = "review"
    ADMIN = "admin"  # the HTTP API's keys, principals, members and sources


@dataclass(frozen=True, slots=True)
class VerifiedCaller:
    """A bearer token after verification.

    caller: what the client runs as (an API key is authenticated again by
        vera.authenticate in every transaction; an OIDC subject becomes the
        Principal the gateway vouches for).
    principal_id: the principal behind the token, the key of quotas.
    scopes: what the token may attempt.
    via: how the token was verified (a bounded label for metrics and logs).
    expires_at: when the token stops being valid (seconds since the epoch), if it says.
    organisations: the organisations the principal belongs to (their quota ceilings), when the
        verifier learnt them; None: the runner asks whoami.
    """

    caller: ApiKey | Principal
    principal_id: str
    scopes: frozenset[Scope]
    via: Literal["api_key", "oidc"]
    expires_at: int | None = None
    organisations: frozenset[str] | None = None


class QuotaExceededError(VeraError):
    """A principal used up its allowance for a tool class; retry after `retry_after` seconds."""

    def __init__(self, tool_class: ToolClass, limit: str, retry_after: float) -> None:
        self.tool_class = tool_class
        self.limit = limit
        self.retry_after = retry_after
        super().__init__(
            f"quota exceeded for {tool_class.value} tools ({limit}): retry after {math.ceil(retry_after)} s"
        )
