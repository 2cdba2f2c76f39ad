"""The tools' published output schemas: nullable fields as type lists (cheaper for a
client to check), accepting and refusing exactly what pydantic's own schemas do."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from jsonschema.validators import validator_for
from mcp.server.mcpserver.utilities.func_metadata import StrictJsonSchema
from pydantic import TypeAdapter

from vera_client.client import AsyncVeraClient
from vera_mcp.adapters.output_schemas import lean_output_schema
from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.tools import build_mcp_server
from vera_mcp.domain.shapes import SearchResult

UUID_ = "31b2677d-5977-4c13-bd3c-f73591497340"
SIGNALS = {"relevance": 1.0, "authority": 1.0, "verification": 0.8, "recency": 0.99, "feedback": 0.5,
           "confidence": 1.0, "period": None}  # fmt: skip
HIT = {"rank": 1, "kind": "fact", "item_id": UUID_, "group_id": "o:1", "text": "api runs on k8s", "score": 1,
       "signals": SIGNALS, "citation": {"tier": 1}, "subject": "api", "predicate": "RUNS_ON", "object": "k8s",
       "blend_score": None, "rerank_score": None}  # fmt: skip
RESULT = {"query": "q", "as_of": None, "snapshot": None,
          "during": {"start": "1811-01-01", "end": None, "text": "from 1811"}, "hits": [HIT]}  # fmt: skip


def published(model: Any) -> dict[str, Any]:
    """The output schema the SDK derives from a tool's return type."""
    return TypeAdapter(model).json_schema(schema_generator=StrictJsonSchema)


def with_(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(RESULT)
    node: Any = changed
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return changed


def test_a_nullable_field_becomes_a_type_list() -> None:
    start = {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}], "title": "Start"}
    schema = {"type": "object", "properties": {"start": start}}
    assert lean_output_schema(schema)["properties"]["start"] == {
        "type": ["string", "null"], "format": "date", "title": "Start"
    }  # fmt: skip


def test_a_nullable_reference_is_inlined_and_the_definition_kept() -> None:
    period = {"type": "object", "properties": {"end": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
              "required": ["end"], "title": "PeriodOut", "description": "the period"}  # fmt: skip
    schema = {"$defs": {"PeriodOut": period}, "type": "object",
              "properties": {"during": {"anyOf": [{"$ref": "#/$defs/PeriodOut"}, {"type": "null"}],
                                        "description": "asked about", "default": None}}}  # fmt: skip
    lean = lean_output_schema(schema)
    assert lean["properties"]["during"] == {
        "type": ["object", "null"], "properties": {"end": {"type": ["string", "null"]}}, "required": ["end"],
        "title": "PeriodOut", "description": "asked about", "default": None,
    }  # fmt: skip
    assert lean["$defs"]["PeriodOut"]["properties"]["end"] == {"type": ["string", "null"]}


@pytest.mark.parametrize(
    "branches",
    [
        [{"type": "string"}, {"type": "integer"}],  # no null: a real choice
        [{"type": "string"}, {"type": "integer"}, {"type": "null"}],  # more than one other type
        [{"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}],  # no plain type
    ],
)
def test_other_unions_are_left_as_they_are(branches: list[dict[str, Any]]) -> None:
    schema = {"type": "object", "properties": {"x": {"anyOf": branches}}}
    assert lean_output_schema(schema) == schema


def test_constraints_on_both_sides_are_left_as_they_are() -> None:
    schema = {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}], "maxLength": 5}
    assert lean_output_schema(schema) == schema


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (RESULT, True),
        (with_(("during",), None), True),
        (with_(("as_of",), "2026-01-01T00:00:00Z"), True),
        (with_(("hits", 0, "signals", "period"), 0.5), True),
        (with_(("hits", 0, "subject"), 7), False),
        (with_(("hits", 0, "signals", "period"), "high"), False),
        (with_(("hits", 0, "signals", "relevance"), None), False),
        (with_(("during",), {"start": None, "end": None}), False),  # its text is required
        (with_(("during",), "1811"), False),
        (with_(("as_of",), 3), False),
        (with_(("hits", 0, "item_id"), None), False),
    ],
)
def test_the_lean_search_schema_judges_values_as_the_published_one(
    value: dict[str, Any], valid: bool
) -> None:
    original = published(SearchResult)
    lean = lean_output_schema(original)
    for schema in (original, lean):
        errors = list(validator_for(schema)(schema).iter_errors(value))
        assert (errors == []) == valid, errors


def test_the_server_publishes_lean_schemas_without_any_nullable_any_of() -> None:
    client = AsyncVeraClient(executor=None, caller=None, providers=None)  # type: ignore[arg-type]
    server = build_mcp_server(ToolRunner(client, server_version="test"))
    schemas = {tool.name: tool.output_schema for tool in asyncio.run(server.list_tools())}
    assert schemas["search"] is not None and schemas["search"]["properties"]["as_of"]["type"] == [
        "string",
        "null",
    ]
    for name, schema in schemas.items():
        assert schema is None or '{"type": "null"}' not in repr(schema).replace("'", '"'), name
        if schema is not None:
            validator_for(schema).check_schema(schema)
