"""The ports of the MCP server: token verification and the quota ledger."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from vera_mcp.domain.access import ToolClass, VerifiedCaller


class TokenVerification(Protocol):
    """Turns a bearer token into a caller, or None when the token is not valid."""

    async def verify(self, token: str) -> VerifiedCaller | None: ...


class QuotaLedger(Protocol):
    """Counts calls per principal and tool class."""

    async def take(
        self, principal_id: str, tool_class: ToolClass, organisations: Collection[str] = ()
    ) -> None:
        """Count one call against the principal and each of its organisations; raise
        QuotaExceededError (with when to retry) when any is over its limit."""
        ...
