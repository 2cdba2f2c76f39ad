"""The one function every tool call passes through (`ToolRunner.run_tool`): under
the request's correlation id and inside the call's span, metrics and log line
(ToolCallObserver), it finds the caller, refuses a token without the scope the
tool needs, counts the call against the caller's quota, runs the work as the
caller with a deadline, and turns every failure into a tool error an agent can
read. Per-call concerns belong here and nowhere else."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from vera_client.api.access import Membership
from vera_client.client import AsyncVeraClient
from vera_client.domain.errors import VeraError
from vera_mcp.adapters.logs import correlated, correlation_id
from vera_mcp.adapters.metrics import McpMetrics, Outcome
from vera_mcp.adapters.observability import ToolCallObserver
from vera_mcp.adapters.tracing import Tracing
from vera_mcp.adapters.verifier import VeraAccessToken
from vera_mcp.domain.access import Scope, ToolClass, VerifiedCaller
from vera_mcp.domain.ports import QuotaLedger
from vera_mcp.domain.quotas import organisations_of
from vera_mcp.domain.scoping import resolve_scope, resolve_scopes

T = TypeVar("T")
log = logging.getLogger("vera_mcp.tools")


@dataclass(slots=True)
class ToolCall:
    """One tool call in progress: the caller's view of the client, and its scopes by name."""

    vera: AsyncVeraClient
    verified: VerifiedCaller
    correlation_id: str
    _memberships: list[Membership] | None = field(default=None, repr=False)

    async def memberships(self) -> list[Membership]:
        """What whoami lists for the caller (asked once per call)."""
        if self._memberships is None:
            self._memberships = await self.vera.whoami()
        return self._memberships

    async def scope(self, name: str) -> str:
        """The group id of a scope the caller names (NotFoundError when it reaches no such scope)."""
        return resolve_scope(name, await self.memberships())

    async def scopes(self, names: Sequence[str] | None) -> list[str] | None:
        """Group ids of the named scopes; None (every readable scope) when none are named."""
        if not names:
            return None
        return resolve_scopes(names, await self.memberships())


def _verified_of(ctx: Context[Any, Any] | None) -> VerifiedCaller | None:
    """The caller the HTTP transport verified for this request, if any."""
    token = None
    request = ctx.request_context.request if ctx is not None and ctx.request_context is not None else None
    user = getattr(request, "scope", {}).get("user") if request is not None else None
    if isinstance(user, AuthenticatedUser):
        token = user.access_token
    if token is None:
        token = get_access_token()
    return token.verified if isinstance(token, VeraAccessToken) else None


class ToolRunner:
    """Runs tools as their callers over one client (one pool).

    fixed_caller: the caller of every call when the transport verifies none
        itself (stdio: the key in VERA_API_KEY, verified at start).
    ledger: counts calls per principal and tool class, and per organisation, when configured.
    observer: the span, metrics and log line of each call (by default metrics
        that name no tool, every call counted as "other", and no tracing: the
        server is built after its runner, and adapters/instruments.py gives it
        the observer of the tools the server registered).
    timeout_s: a call's deadline; past it the call is abandoned with a tool error.
    """

    def __init__(
        self,
        client: AsyncVeraClient,
        *,
        server_version: str,
        ledger: QuotaLedger | None = None,
        observer: ToolCallObserver | None = None,
        timeout_s: float = 30.0,
        fixed_caller: VerifiedCaller | None = None,
    ) -> None:
        self.client = client
        self.server_version = server_version
        self.ledger = ledger
        self.observer = observer or ToolCallObserver(McpMetrics(tools=()), Tracing(None))
        self.timeout_s = timeout_s
        self.fixed_caller = fixed_caller

    def current_caller(self, ctx: Context[Any, Any] | None) -> VerifiedCaller | None:
        return _verified_of(ctx) or self.fixed_caller

    def invalid_arguments(self, name: str) -> None:
        """Count a call the SDK refused before run_tool (its arguments broke the schema) as a
        tool error of that tool."""
        with correlated(correlation_id()), self.observer.tool_call(name) as call:
            call.outcome = Outcome.TOOL_ERROR

    async def run_tool(
        self,
        ctx: Context[Any, Any] | None,
        name: str,
        tool_class: ToolClass,
        scope_needed: Scope,
        work: Callable[[ToolCall], Awaitable[T]],
    ) -> T:
        # over HTTP the request's id (CorrelationIdMiddleware); over stdio one per call
        with correlated(correlation_id()) as call_id, self._tool_errors(name, call_id):
            # inside the observer an escaping exception sets the outcome (a quota refusal, a
            # VeraError, a fault of the server); a refusal of the runner's own is set here and
            # raised after the block, so it is not mistaken for a fault of the server
            refusal: ToolError
            with self.observer.tool_call(name) as observed:
                verified = self.current_caller(ctx)
                if verified is None:
                    observed.outcome = Outcome.TOOL_ERROR
                    refusal = ToolError(
                        "not authenticated: send a bearer token (an API key or an OAuth access token)"
                    )
                elif scope_needed not in verified.scopes:
                    observed.outcome = Outcome.REFUSED_SCOPE
                    refusal = ToolError(
                        f"this token lacks the scope {scope_needed.value!r}, which {name} needs"
                    )
                else:
                    call = ToolCall(self.client.as_caller(verified.caller), verified, call_id)
                    if self.ledger is not None:
                        organisations = verified.organisations
                        if organisations is None:  # an OIDC caller: whoami says (asked once per call)
                            organisations = organisations_of(await call.memberships())
                        await self.ledger.take(verified.principal_id, tool_class, organisations)
                    try:
                        async with asyncio.timeout(self.timeout_s):
                            return await work(call)
                    except ToolError as error:  # a tool's own refusal of its arguments
                        observed.outcome = Outcome.TOOL_ERROR
                        refusal = error
            raise refusal

    @contextmanager
    def _tool_errors(self, name: str, call_id: str) -> Iterator[None]:
        """Every failure of the block as a tool error an agent can read."""
        try:
            yield
        except VeraError as error:  # the database's or the client's own one-line message
            log.info("tool %s refused (%s): %s [%s]", name, type(error).__name__, error, call_id)
            raise ToolError(str(error)) from error
        except TimeoutError as error:
            log.warning("tool %s timed out after %g s [%s]", name, self.timeout_s, call_id)
            raise ToolError(f"{name} took longer than {self.timeout_s:g} s and was stopped") from error
        except ToolError:
            raise
        except Exception as error:  # logged with its traceback once, by the observer's line of the call
            raise ToolError(f"internal error in {name} (correlation id {call_id})") from error
