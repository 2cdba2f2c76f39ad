"""ToolRunner.run_tool, the one path of every tool call: who calls, with which
scope, within which quota and deadline, and what an agent reads when it fails."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Collection
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from vera_client.client import AsyncVeraClient
from vera_client.domain.callers import ApiKey
from vera_client.domain.errors import PermissionDeniedError
from vera_mcp.adapters.logs import JsonFormatter
from vera_mcp.adapters.runner import ToolCall, ToolRunner
from vera_mcp.adapters.verifier import ChainedTokenVerifier, VeraAccessToken
from vera_mcp.domain.access import ALL_SCOPES, QuotaExceededError, Scope, ToolClass, VerifiedCaller

KEY = "vera_0123456789ab_" + "s" * 43
# organisations known (as an API key's are): the runner asks no whoami for the quota ceiling
ADA = VerifiedCaller(
    caller=ApiKey(KEY), principal_id="p-ada", scopes=ALL_SCOPES, via="api_key", organisations=frozenset()
)


class CountingLedger:
    """A QuotaLedger of the test: `allowed` calls per principal and class, then refusals."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.taken: dict[tuple[str, ToolClass], int] = {}

    async def take(
        self, principal_id: str, tool_class: ToolClass, organisations: Collection[str] = ()
    ) -> None:
        count = self.taken.get((principal_id, tool_class), 0)
        if count >= self.allowed:
            raise QuotaExceededError(tool_class, f"{self.allowed}/min", 42.0)
        self.taken[(principal_id, tool_class)] = count + 1


def runner(caller: VerifiedCaller | None = ADA, **options: Any) -> ToolRunner:
    # no pool is opened: these works never reach the database
    client = AsyncVeraClient(executor=None, caller=None, providers=None)  # type: ignore[arg-type]
    return ToolRunner(client, server_version="test", fixed_caller=caller, **options)


def call(
    tools: ToolRunner, work: Any, scope: Scope = Scope.READ, tool_class: ToolClass = ToolClass.READ
) -> Any:
    return asyncio.run(tools.run_tool(None, "search", tool_class, scope, work))


async def whose(call_: ToolCall) -> str:
    return f"{call_.verified.principal_id} as {call_.vera.caller!r}"


def test_the_work_runs_as_the_caller() -> None:
    assert call(runner(), whose) == "p-ada as ApiKey(vera_0123456789ab_…)"


def test_no_caller_no_call() -> None:
    with pytest.raises(ToolError, match="not authenticated"):
        call(runner(None), whose)


def test_a_token_without_the_scope_is_refused_naming_it() -> None:
    reader = VerifiedCaller(caller=ApiKey(KEY), principal_id="p", scopes=frozenset({Scope.READ}), via="oidc",
                            organisations=frozenset())  # fmt: skip
    assert call(runner(reader), whose, Scope.READ)
    with pytest.raises(ToolError, match="lacks the scope 'feedback', which search needs"):
        call(runner(reader), whose, Scope.FEEDBACK)


def test_quotas_are_taken_per_principal_and_class_and_say_when_to_retry() -> None:
    ledger = CountingLedger(allowed=2)
    tools = runner(ledger=ledger)
    call(tools, whose)
    call(tools, whose)
    call(tools, whose, Scope.FEEDBACK, ToolClass.FEEDBACK)
    with pytest.raises(ToolError, match=r"quota exceeded for read tools \(2/min\): retry after 42 s"):
        call(tools, whose)
    assert ledger.taken == {("p-ada", ToolClass.READ): 2, ("p-ada", ToolClass.FEEDBACK): 1}


def test_a_vera_error_is_a_tool_error_with_its_message() -> None:
    async def refused(_call: ToolCall) -> None:
        raise PermissionDeniedError("viewers may not review in o:1")

    with pytest.raises(ToolError, match=r"^viewers may not review in o:1$"):
        call(runner(), refused)


def test_an_unexpected_error_is_logged_and_answered_with_a_correlation_id() -> None:
    async def crashes(_call: ToolCall) -> None:
        raise RuntimeError("secret detail")

    # the call's one log line (the observer's), as JSON: it carries the traceback and the id
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonFormatter())
    calls_log = logging.getLogger("vera_mcp.tool_calls")
    calls_log.addHandler(handler)
    try:
        with pytest.raises(ToolError) as raised:
            call(runner(), crashes)
    finally:
        calls_log.removeHandler(handler)
    message = str(raised.value)
    assert message.startswith("internal error in search (correlation id ") and "secret" not in message
    correlation = message.rsplit(" ", 1)[1].rstrip(")")
    logged = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert [(line["level"], line["correlation_id"]) for line in logged] == [("warning", correlation)]
    assert "RuntimeError: secret detail" in logged[0]["error"]


def test_a_call_past_its_deadline_is_stopped() -> None:
    async def slow(_call: ToolCall) -> None:
        await asyncio.sleep(5)

    with pytest.raises(ToolError, match=r"search took longer than 0\.05 s"):
        call(runner(timeout_s=0.05), slow)


class Tokens:
    def __init__(self, accepted: dict[str, VerifiedCaller]) -> None:
        self.accepted = accepted
        self.asked: list[str] = []

    async def verify(self, token: str) -> VerifiedCaller | None:
        self.asked.append(token)
        return self.accepted.get(token)


def test_the_first_verification_that_knows_a_token_decides() -> None:
    other = VerifiedCaller(
        caller=ApiKey(KEY), principal_id="p-bob", scopes=frozenset({Scope.READ}), via="oidc"
    )
    first, second = Tokens({"a": ADA}), Tokens({"a": other, "b": other})
    chain = ChainedTokenVerifier([first, second], resource="http://127.0.0.1:1/mcp")
    token = asyncio.run(chain.verify_token("a"))
    assert isinstance(token, VeraAccessToken) and token.verified is ADA and second.asked == []
    token = asyncio.run(chain.verify_token("b"))
    assert isinstance(token, VeraAccessToken) and token.verified is other and token.scopes == ["read"]
    assert token.client_id == "p-bob" and token.resource == "http://127.0.0.1:1/mcp"
    assert asyncio.run(chain.verify_token("c")) is None
