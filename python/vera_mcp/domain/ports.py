"""The ports of the MCP server: token verification and the quota ledger."""

from __future__ import annotations

from typing import Protocol

from vera_mcp.domain.access import ToolClass, VerifiedCaller


class TokenVerification(Protocol):
    """Turns a bearer token into a caller, or None when the token is not valid."""

    async def verify(self, token: str) -> VerifiedCaller | None: ...


class QuotaLedger(Protocol):
    """Counts calls per principal and tool class."""

    async def take(self, principal_id: str, tool_class: ToolClass) -> None:
        """Count one call; raise QuotaExceededError (with when to retry) when over the limit."""
        ...
