"""The remember tool: an agent records a text or a chat transcript in one call,
through vera.remember (the ordinary write path: the source's tier and the
contamination guard apply). By default it lands in the caller's personal
scope, where only the caller finds it; a shared scope takes it only from a
source its admins registered, graded by that source's tier. It needs the
propose scope and counts as a propose call: like a proposal, it writes what
the agent learned, first of all into its own scope."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

from vera_client.domain.errors import InvalidArgumentError
from vera_mcp.adapters.runner import ToolCall, ToolRunner
from vera_mcp.adapters.tool_annotations import WRITES
from vera_mcp.domain.access import Scope, ToolClass
from vera_mcp.domain.arguments import ScopeName
from vera_mcp.domain.knowledge_shapes import RememberedOut
from vera_mcp.domain.limits import LIMITS


class Message(BaseModel):
    """One message of a chat transcript."""

    role: Annotated[
        str, Field(min_length=1, max_length=LIMITS.max_speaker_chars, description="user, assistant, …")
    ]
    content: Annotated[str, Field(min_length=1, max_length=LIMITS.max_message_chars)]
    name: Annotated[
        str | None, Field(max_length=LIMITS.max_speaker_chars, description="the speaker, when not the role")
    ] = None


RememberText = Annotated[
    str | None,
    Field(min_length=1, max_length=LIMITS.max_remember_chars, description="a text to remember (or messages)"),
]
Messages = Annotated[
    list[Message] | None,
    Field(
        min_length=1, max_length=LIMITS.max_messages, description="a chat transcript to remember (or text)"
    ),
]
SourceName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=LIMITS.max_name_chars,
        description="the source it is recorded under; registered on first use in your personal scope",
    ),
]


def register_remember_tool(server: MCPServer[Any], runner: ToolRunner) -> None:
    """Adds the remember tool to the server."""

    @server.tool(annotations=WRITES)
    async def remember(
        *,
        ctx: Context,
        text: RememberText = None,
        messages: Messages = None,
        source: SourceName = "memory",
        at: Annotated[datetime | None, Field(description="when it was said (ISO 8601); default now")] = None,
        scope: Annotated[
            ScopeName | None, Field(description="where it goes; default your personal scope")
        ] = None,
    ) -> RememberedOut:
        """Remember a text or a chat transcript (pass exactly one): one call records it as passages you
        can search, in your personal scope unless you name another. The same content again records
        nothing new. Claims are not read from the text (no extraction runs): use propose for a claim."""

        async def work(call: ToolCall) -> RememberedOut:
            group = await call.scope(scope) if scope is not None else None
            if (text is None) == (messages is None):
                raise InvalidArgumentError("pass either text or messages, not both nor neither")
            said: str | list[dict[str, Any]] = (
                text if text is not None else [m.model_dump(exclude_none=True) for m in messages or ()]
            )
            return RememberedOut.of(await call.vera.remember(said, source=source, at=at, group=group))

        return await runner.run_tool(ctx, "remember", ToolClass.PROPOSE, Scope.PROPOSE, work)
