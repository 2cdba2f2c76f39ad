"""Output models derived from the client's row dataclasses, so that a row's fields are
declared once (in vera_client) and every face publishes them alike.

    @mirrors(Evidence)
    class EvidenceOut(FromClient):
        \"\"\"What agents read about the model (default: the row's docstring).\"\"\"

gives EvidenceOut the fields of Evidence: their names, types and defaults, and the
description each carries as `field(metadata={"description": ...})`. A field whose type
is a row is typed with that row's model (the one declared with @mirrors, or one derived
on first use), so one row has one model wherever it appears: declare a row's model before
any model that holds it (a declaration after one was derived is refused). Models are
filled from the client's values by attribute: `EvidenceOut.of(evidence)`.

A field the row keeps out of its repr (`field(repr=False)`, as NewApiKey.api_key) is a
secret: deriving a model that would publish it is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
from collections.abc import Callable, Iterable
from typing import Any, Self, TypeVar, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model


class FromClient(BaseModel):
    """A model filled from the client's value of the same field names."""

    model_config = ConfigDict(from_attributes=True)

    @classmethod
    def of(cls, value: object) -> Self:
        return cls.model_validate(value, from_attributes=True)


M = TypeVar("M", bound=FromClient)

# the model of each row, for the fields of other rows that hold it
_MODELS: dict[type, type[FromClient]] = {}


def mirrors(row: type, *, without: Iterable[str] = ()) -> Callable[[type[M]], type[M]]:
    """Class decorator: the class, with the fields of the row dataclass (but those named in
    without) after its own; its docstring, or else the row's, describes it."""

    def derive(declared: type[M]) -> type[M]:
        return _derive(row, declared, declared.__name__, declared.__doc__, frozenset(without))

    return derive


def out_model(row: type) -> type[FromClient]:
    """The model of row: the one declared with mirrors, else one derived now (RowOut)."""
    return _MODELS.get(row) or _derive(row, FromClient, f"{row.__name__}Out", None, frozenset())


def _derive(row: type, base: type[M], model_name: str, doc: str | None, without: frozenset[str]) -> type[M]:
    if not dataclasses.is_dataclass(row):
        raise TypeError(f"{row!r} is not a dataclass")
    if row in _MODELS:
        raise TypeError(f"{row.__name__} has a model already ({_MODELS[row].__name__}): one model per row")
    fields = {field.name: field for field in dataclasses.fields(row)}
    unknown = without - fields.keys()
    if unknown:
        raise TypeError(f"{row.__name__} has no fields {sorted(unknown)}")
    secret = sorted(name for name, field in fields.items() if not field.repr and name not in without)
    if secret:
        raise TypeError(f"{row.__name__}.{', '.join(secret)} is secret (repr=False): leave it out")
    # names in the row's module, not in its class: a field called `object` must not hide the builtin
    hints = get_type_hints(row, localns={})
    definitions: dict[str, Any] = {
        name: (_out_type(hints[name]), _field_info(field))
        for name, field in fields.items()
        if name not in without
    }
    doc = doc or _docstring(row)
    model = create_model(model_name, __base__=base, __doc__=doc, __module__=base.__module__, **definitions)
    _MODELS[row] = model
    return model


def _field_info(field: dataclasses.Field[Any]) -> Any:
    description = field.metadata.get("description")
    if field.default is not dataclasses.MISSING:
        return Field(default=field.default, description=description)
    if field.default_factory is not dataclasses.MISSING:
        return Field(default_factory=field.default_factory, description=description)
    return Field(description=description)


def _out_type(hint: Any) -> Any:
    """hint with every row dataclass in it replaced by that row's model."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return out_model(hint)
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, (_out_type(arg) for arg in args))
    if origin in (list, dict, tuple, frozenset, set):
        return origin[tuple(_out_type(arg) for arg in args)]
    return hint


def _docstring(row: type) -> str | None:
    """The row's own docstring (not the signature dataclass writes when it has none)."""
    doc = row.__doc__
    return None if doc is None or doc.startswith(f"{row.__name__}(") else doc
