"""The output schema each tool publishes, against a snapshot (tests/data/mcp_output_schemas.json).

Agents read these schemas, and the SDK's client checks every structured result against
them, so a change must be deliberate. Compared as an agent sees them: each `$ref` written in
place, titles (pydantic's class and field names) ignored, `required` as a set; property
names, types, formats, required-ness, defaults and descriptions must match.

To change a schema on purpose, refresh the snapshot and review its diff before committing:

    PYTHONPATH=python:. python tests/test_mcp_output_schemas.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from vera_client.client import AsyncVeraClient
from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.tools import build_mcp_server

SNAPSHOT = Path(__file__).parent / "data" / "mcp_output_schemas.json"


def published() -> dict[str, Any]:
    """Every tool's output schema, as the server lists it, by tool name."""
    client = AsyncVeraClient(executor=None, caller=None, providers=None)  # type: ignore[arg-type]
    server = build_mcp_server(ToolRunner(client, server_version="test"))
    return {tool.name: tool.output_schema for tool in asyncio.run(server.list_tools())}


def as_agents_see(node: Any, defs: dict[str, Any]) -> Any:
    """node with its references written in place, no titles, and `required` sorted."""
    if isinstance(node, list):
        return [as_agents_see(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        # an annotation beside a reference (a description) wins over the definition's own
        target = {**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in node.items() if k != "$ref"}}
        return as_agents_see(target, defs)
    seen: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$defs", "title"):
            continue
        if key == "required":
            seen[key] = sorted(value)
        elif key == "properties":  # property names, not keywords: a property may be called "title"
            seen[key] = {name: as_agents_see(schema, defs) for name, schema in value.items()}
        else:
            seen[key] = as_agents_see(value, defs)
    return seen


def normalised(schema: dict[str, Any] | None) -> Any:
    return None if schema is None else as_agents_see(schema, schema.get("$defs", {}))


PUBLISHED = published()
# missing, it fails test_every_tool_of_the_snapshot_is_still_published (the refresh below can run)
EXPECTED: dict[str, Any] = json.loads(SNAPSHOT.read_text()) if SNAPSHOT.exists() else {}


def test_every_tool_of_the_snapshot_is_still_published() -> None:
    """A tool agents know does not go away unnoticed; a new tool passes, and the next refresh
    records its schema (so that adding a tool needs no edit here)."""
    assert EXPECTED
    assert sorted(EXPECTED.keys() - PUBLISHED.keys()) == []


@pytest.mark.parametrize("tool", sorted(EXPECTED))
def test_a_tools_output_schema_is_the_snapshots(tool: str) -> None:
    assert normalised(PUBLISHED.get(tool)) == normalised(EXPECTED[tool])


if __name__ == "__main__":
    SNAPSHOT.parent.mkdir(exist_ok=True)
    SNAPSHOT.write_text(json.dumps(PUBLISHED, indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}", file=sys.stderr)
