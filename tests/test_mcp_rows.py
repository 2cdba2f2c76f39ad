"""Output models derived from the client's rows (vera_mcp/domain/rows.py): the row's fields,
types, defaults and descriptions; one model per row, nested rows by their model; and no
secret ever published."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import pytest

from tests.test_mcp_output_schemas import PUBLISHED
from vera_client.api.access import NewApiKey
from vera_client.api.operator import Tenant
from vera_mcp.domain.rows import FromClient, mirrors, out_model


@dataclass(frozen=True, kw_only=True, slots=True)
class Part:
    """A part."""

    name: str = field(metadata={"description": "what it is called"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Whole:
    """A whole, of parts."""

    whole_id: UUID
    parts: list[Part]
    main: Part | None = None
    object: str = "thing"  # a field may be called as a builtin its types use
    extra: dict[str, object] = field(default_factory=dict)


@mirrors(Part)
class PartOut(FromClient):
    """A part, as agents read it."""


@mirrors(Whole, without=["extra"])
class WholeOut(FromClient):
    pass


def test_a_model_has_the_rows_fields_types_defaults_and_descriptions() -> None:
    whole = Whole(whole_id=uuid4(), parts=[Part(name="a")], main=Part(name="b"))
    out = WholeOut.of(whole)
    assert out.model_dump() == {"whole_id": whole.whole_id, "parts": [{"name": "a"}], "main": {"name": "b"},
                                "object": "thing"}  # fmt: skip
    schema = WholeOut.model_json_schema()
    assert schema["description"] == "A whole, of parts."  # the row's, the class having none
    assert schema["required"] == ["whole_id", "parts"]
    assert schema["properties"]["object"] == {"default": "thing", "title": "Object", "type": "string"}
    assert "extra" not in schema["properties"]
    part: dict[str, Any] = schema["$defs"]["PartOut"]  # the declared model of the nested row
    assert part["description"] == "A part, as agents read it."
    assert part["properties"]["name"]["description"] == "what it is called"


def test_a_row_has_one_model() -> None:
    assert out_model(Part) is PartOut
    with pytest.raises(TypeError, match="has a model already"):
        mirrors(Part)(type("PartAgain", (FromClient,), {}))


@pytest.mark.parametrize("row", [NewApiKey, Tenant])
def test_a_secret_is_never_in_a_model(row: type) -> None:
    with pytest.raises(TypeError, match=r"api_key is secret"):
        out_model(row)


def _property_names(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*(_property_names(item) for item in node))
    if not isinstance(node, dict):
        return set()
    names = set(node.get("properties", {}))
    return names.union(*(_property_names(value) for value in node.values()))


def test_no_tool_publishes_a_secret() -> None:
    names = _property_names(list(PUBLISHED.values()))
    assert "fact_id" in names
    assert not {name for name in names if "key" in name or "secret" in name or "password" in name}
