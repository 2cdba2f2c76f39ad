"""The tools' published schemas: nullable fields as type lists and no unused
definition (cheaper for a client to check, and for the server to walk), accepting
and refusing exactly what pydantic's own schemas do."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, Literal

import pytest
from jsonschema.validators import validator_for
from mcp.server.mcpserver.utilities.func_metadata import StrictJsonSchema
from pydantic import TypeAdapter

from vera_client.client import AsyncVeraClient
from vera_mcp.adapters.lean_schemas import _referenced, lean_schema
from vera_mcp.adapters.runner import ToolRunner
from vera_mcp.adapters.tools import build_mcp_server
from vera_mcp.domain.shapes import SearchResult

SERVER = build_mcp_server(
    ToolRunner(AsyncVeraClient(executor=None, caller=None, providers=None), server_version="test")  # type: ignore[arg-type]
)
TOOLS = {tool.name: tool for tool in asyncio.run(SERVER.list_tools())}

UUID_ = "31b2677d-5977-4c13-bd3c-f73591497340"
SIGNALS = {"relevance": 1.0, "authority": 1.0, "verification": 0.8, "recency": 0.99, "feedback": 0.5,
           "confidence": 1.0, "period": None}  # fmt: skip
HIT = {"rank": 1, "kind": "fact", "item_id": UUID_, "group_id": "o:1", "text": "api runs on k8s", "score": 1,
       "confidence": 0.93, "good_match": True, "lexical_match": 1.0, "similarity": None, "signals": SIGNALS,
       "citation": {"tier": 1}, "subject": "api", "predicate": "RUNS_ON", "object": "k8s",
       "blend_score": None, "rerank_score": None}  # fmt: skip
RESULT = {"query": "q", "as_of": None, "snapshot": None,
          "during": {"start": "1811-01-01", "end": None, "text": "from 1811"}, "hits": [HIT],
          "no_good_match": False}  # fmt: skip


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
    assert lean_schema(schema)["properties"]["start"] == {
        "type": ["string", "null"], "format": "date", "title": "Start"
    }  # fmt: skip


def test_a_nullable_reference_is_inlined_and_a_definition_nothing_refers_to_goes() -> None:
    period = {"type": "object", "properties": {"end": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
              "required": ["end"], "title": "PeriodOut", "description": "the period"}  # fmt: skip
    hit = {"type": "object", "properties": {"period": {"$ref": "#/$defs/PeriodOut"}}}
    schema = {"$defs": {"PeriodOut": period, "HitOut": hit, "Unused": {"type": "string"}}, "type": "object",
              "properties": {"during": {"anyOf": [{"$ref": "#/$defs/PeriodOut"}, {"type": "null"}],
                                        "description": "asked about", "default": None},
                             "hits": {"type": "array", "items": {"$ref": "#/$defs/HitOut"}}}}  # fmt: skip
    lean = lean_schema(schema)
    assert lean["properties"]["during"] == {
        "type": ["object", "null"], "properties": {"end": {"type": ["string", "null"]}}, "required": ["end"],
        "title": "PeriodOut", "description": "asked about", "default": None,
    }  # fmt: skip
    # HitOut is referred to, and PeriodOut through it; Unused goes
    assert set(lean["$defs"]) == {"HitOut", "PeriodOut"}
    assert lean["$defs"]["PeriodOut"]["properties"]["end"] == {"type": ["string", "null"]}
    only_inlined = {
        "$defs": {"PeriodOut": period},
        "type": "object",
        "properties": {"during": schema["properties"]["during"]},
    }
    assert "$defs" not in lean_schema(only_inlined)


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
    assert lean_schema(schema) == schema


def test_constraints_on_both_sides_are_left_as_they_are() -> None:
    schema = {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}], "maxLength": 5}
    assert lean_schema(schema) == schema


@pytest.mark.parametrize(
    ("value", "valid"),
    [(None, True), ("up", True), ("down", True), ("sideways", False), (1, False)],
)
def test_an_optional_choice_still_takes_null_and_only_its_choices(value: object, valid: bool) -> None:
    """Literal["up", "down"] | None: the enum constrains every value, so null joins it; a const
    (which refuses null whatever the type) is left as it is."""
    choice = TypeAdapter(Literal["up", "down"] | None).json_schema()
    lean = lean_schema(choice)
    assert validator_for(lean)(lean).is_valid(value) is valid
    assert validator_for(choice)(choice).is_valid(value) is valid
    const = {"anyOf": [{"const": "up", "type": "string"}, {"type": "null"}]}
    assert lean_schema(const) == const


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
        (with_(("hits", 0, "confidence"), None), False),
        (with_(("no_good_match",), None), False),
    ],
)
def test_the_lean_search_schema_judges_values_as_the_published_one(
    value: dict[str, Any], valid: bool
) -> None:
    original = published(SearchResult)
    lean = lean_schema(original)
    for schema in (original, lean):
        errors = list(validator_for(schema)(schema).iter_errors(value))
        assert (errors == []) == valid, errors


@pytest.mark.parametrize(
    ("arguments", "valid"),
    [
        ({"query": "q"}, True),
        ({"query": "q", "k": 5, "as_of": None, "scopes": None, "snapshot": None, "during": None}, True),
        ({"query": "q", "scopes": ["Acme"], "during": {"start": "2020-01-01", "end": None}}, True),
        ({"query": "q", "during": {"start": "2020-01-01", "until": "2021-01-01"}}, False),
        ({"query": "q", "during": "2020"}, False),
        ({"query": "q", "scopes": "Acme"}, False),
        ({"query": "q", "snapshot": 3}, False),
        ({"k": 3}, False),
    ],
)
def test_the_lean_search_arguments_judge_values_as_the_published_ones(
    arguments: dict[str, Any], valid: bool
) -> None:
    tool = SERVER._tool_manager.get_tool("search")  # the arguments schema the SDK derived
    assert tool is not None
    original = tool.fn_metadata.arg_model.model_json_schema(by_alias=True)
    for schema in (original, TOOLS["search"].input_schema):
        errors = list(validator_for(schema)(schema).iter_errors(arguments))
        assert (errors == []) == valid, errors


def test_the_server_publishes_lean_schemas() -> None:
    assert TOOLS["search"].output_schema is not None
    assert TOOLS["search"].output_schema["properties"]["as_of"]["type"] == ["string", "null"]
    assert TOOLS["search"].input_schema["properties"]["during"]["type"] == ["object", "null"]
    for name, tool in TOOLS.items():
        for schema in (tool.input_schema, tool.output_schema):
            if schema is None:
                continue
            validator_for(schema).check_schema(schema)
            assert '{"type": "null"}' not in repr(schema).replace("'", '"'), name
            assert set(schema.get("$defs", {})) <= _referenced(
                {k: v for k, v in schema.items() if k != "$defs"}, set()
            ) | {ref for d in schema.get("$defs", {}).values() for ref in _referenced(d, set())}, name
