"""The JSON Schemas the tools publish (their arguments and their results), in the
shape cheapest to use.

pydantic writes a nullable field as `{"anyOf": [{"type": "string"}, {"type": "null"}]}`,
and a nullable model as an `anyOf` of a `$ref` into `$defs` and null. Both cost:
the SDK's client (and any jsonschema-based agent) checks every structured
result against the tool's output schema, and an `anyOf` costs it a failed
branch, with its error object, for each value (a third of the check of a
search result: about 1.25 -> 0.77 ms for two hits, 5.0 -> 3.4 ms for ten);
and the server walks each call's input schema to check its `Mcp-Param-*`
headers (about half the time for search's). The same constraint as a type list,
`{"type": ["string", "null"]}`, with a nullable model's definition written
in place, accepts exactly the same values, and the definitions nothing
refers to any more go. VeraMCPServer.lean_schemas publishes every tool's
schemas so; what the server checks arguments and results against (its
pydantic models) is unchanged.
"""

from __future__ import annotations

from typing import Any

_NULL = {"type": "null"}
# keywords that describe a value without constraining it: the outer schema's win over the definition's
_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})


def _nullable_as_type_list(node: Any, defs: dict[str, Any]) -> Any:
    """node with every `anyOf: [X, null]` whose X has one plain type written as X's keywords with
    `type: [X's type, "null"]`; a `$ref` X is copied in (its definition, rewritten the same way)."""
    if isinstance(node, list):
        return [_nullable_as_type_list(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    rewritten = {key: _nullable_as_type_list(value, defs) for key, value in node.items()}
    branches = rewritten.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and _NULL in branches):
        return rewritten
    other = branches[0] if branches[1] == _NULL else branches[1]
    if isinstance(other, dict) and isinstance(other.get("$ref"), str) and len(other) == 1:
        other = defs.get(other["$ref"].removeprefix("#/$defs/"), other)
    kind = other.get("type") if isinstance(other, dict) else None
    outer = {key: value for key, value in rewritten.items() if key != "anyOf"}
    if not isinstance(kind, str) or any(key in outer and key not in _ANNOTATIONS for key in other):
        return rewritten  # not one plain type, or constraints on both sides: left as it is
    if "const" in other:
        return rewritten  # a const refuses null whatever the type says
    # X's own keywords (format, properties, required, items) constrain only values of X's type,
    # so null still passes, and nothing else does; but an enum constrains every value, so null
    # joins its list (Literal[...] | None)
    lean = {**other, **outer, "type": [kind, "null"]}
    if isinstance(other.get("enum"), list) and None not in other["enum"]:
        lean["enum"] = [*other["enum"], None]
    return lean


def _referenced(node: Any, found: set[str]) -> set[str]:
    """The names of the `$defs` entries that node refers to."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref.removeprefix("#/$defs/"))
        for value in node.values():
            _referenced(value, found)
    elif isinstance(node, list):
        for item in node:
            _referenced(item, found)
    return found


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """schema with its nullable fields as type lists and no unused definition (see the module's
    docstring)."""
    raw_defs = schema.get("$defs")
    defs: dict[str, Any] = {}
    if isinstance(raw_defs, dict):
        # definitions first (a definition may itself hold nullable fields), without the
        # reference inlining: a nullable reference to a definition is inlined from these
        defs = {name: _nullable_as_type_list(value, {}) for name, value in raw_defs.items()}
    lean = dict(_nullable_as_type_list({key: value for key, value in schema.items() if key != "$defs"}, defs))
    # what the body refers to, and what those refer to in turn
    wanted = _referenced(lean, set())
    while True:
        more = set().union(*(_referenced(defs[name], set()) for name in wanted if name in defs)) - wanted
        if not more:
            break
        wanted |= more
    kept = {name: value for name, value in defs.items() if name in wanted}
    if kept:
        lean["$defs"] = kept
    return lean
