"""The MCP server's remember tool (python/vera_mcp/adapters/remember_tool.py),
through the SDK's client over streamable HTTP: a text or a transcript lands in
the caller's personal scope once, its bounds are in the schema, a read-only
token and another tenant's scope are refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest

from pg_tests.support.mcp_servers import (
    NARROW,
    HttpServer,
    http_server,
    http_session,
    run,
    structured,
    text_of,
    with_read_only_tokens,
)
from pg_tests.support.seed import World
from vera_mcp.domain.limits import LIMITS


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[HttpServer]:
    with http_server(world.db, with_read_only_tokens) as running:
        yield running


def test_an_agent_remembers_in_its_personal_scope_once(world: World, server: HttpServer) -> None:
    word = f"quokka{uuid4().hex[:8]}"
    text = f"The user's favourite animal is the {word}."

    async def scenario() -> tuple[Any, ...]:
        async with http_session(server.url, world.a.owner_key) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            me = structured(await session.call_tool("whoami", {}))
            first = structured(await session.call_tool("remember", {"text": text}))
            again = structured(await session.call_tool("remember", {"text": text}))
            chat = structured(await session.call_tool("remember", {"messages": [
                {"role": "user", "content": f"I named my cat {word}."},
                {"role": "assistant", "content": "What a name."}], "source": "chat"}))  # fmt: skip
            found = structured(await session.call_tool("search", {"query": word}))
            return tools["remember"], me, first, again, chat, found

    tool, me, first, again, chat, found = run(scenario())
    properties = tool.input_schema["properties"]
    text_schema, messages_schema = properties["text"], properties["messages"]  # each nullable (lean schemas)
    assert text_schema["type"] == ["string", "null"] and text_schema["maxLength"] == LIMITS.max_remember_chars
    assert messages_schema["type"] == ["array", "null"] and messages_schema["maxItems"] == LIMITS.max_messages
    assert tool.output_schema is not None and tool.annotations.read_only_hint is False
    personal = [s["group_id"] for s in me["scopes"] if s["kind"] == "personal"]
    assert [first["group_id"]] == personal and first["created"] and first["lifecycle"] == "published"
    assert again["episode_id"] == first["episode_id"] and not again["created"] and again["passages"] == 0
    assert chat["passages"] == 2 and chat["group_id"] == first["group_id"]
    texts = {hit["text"] for hit in found["hits"]}
    assert text in texts and f"I named my cat {word}." in texts


def test_remember_refuses_what_it_must(world: World, server: HttpServer) -> None:
    async def scenario() -> list[Any]:
        results = []
        async with http_session(server.url, world.a.owner_key) as session:
            results.append(await session.call_tool("remember", {}))
            results.append(await session.call_tool("remember", {"text": "a", "messages": [
                {"role": "user", "content": "b"}]}))  # fmt: skip
            results.append(
                await session.call_tool("remember", {"text": "x" * (LIMITS.max_remember_chars + 1)})
            )
            results.append(
                await session.call_tool("remember", {"text": "leak?", "scope": world.b.organisation})
            )
        async with http_session(server.url, NARROW + world.a.owner_key) as session:
            results.append(await session.call_tool("remember", {"text": "a read-only token writes nothing"}))
        return results

    neither, both, too_long, other_tenant, read_only = run(scenario())
    assert all(result.is_error for result in (neither, both, too_long, other_tenant, read_only))
    assert "either text or messages" in text_of(neither) and "either text or messages" in text_of(both)
    assert str(LIMITS.max_remember_chars) in text_of(too_long).replace(",", "")
    assert "no scope" in text_of(other_tenant)  # refused as a scope that does not exist
    assert "lacks the scope 'propose'" in text_of(read_only), text_of(read_only)
    with world.db.admin() as conn:
        assert conn.execute("select count(*) from vera.episodes where title in ('leak?', "
                            "'a read-only token writes nothing')").fetchone() == (0,)  # fmt: skip
