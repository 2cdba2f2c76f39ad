"""How a route of the HTTP API is declared: an Endpoint names its method, path, the typed
models of its path, query, body and answer (the OpenAPI document is generated from them,
adapters/api/openapi.py), the token scope it needs, the quota class it counts against,
and a thin handler over the client. What every route shares runs in gate.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from vera_mcp.adapters.api.cursors import page_of
from vera_mcp.adapters.runner import ToolCall
from vera_mcp.domain.access import Scope, ToolClass

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@dataclass(slots=True)
class ApiCall:
    """One request to an endpoint, checked: the caller's view of the client (as a tool call has
    it), and the parsed path, query and body."""

    call: ToolCall
    path: BaseModel | None
    query: BaseModel | None
    body: BaseModel | None
    cursor_scope: str = ""  # the request's other parameters: a cursor is valid for them only

    def path_as(self, model: type[M]) -> M:
        return _as(self.path, model)

    def query_as(self, model: type[M]) -> M:
        return _as(self.query, model)

    def body_as(self, model: type[M]) -> M:
        return _as(self.body, model)

    def page(self, items: Sequence[T], limit: int, cursor: str | None) -> tuple[list[T], str | None]:
        """One page of a listing the client answered whole: the items from the cursor on, and the
        cursor of the next page (None on the last)."""
        return page_of(items, limit=limit, cursor=cursor, scope=self.cursor_scope)


def _as(value: BaseModel | None, model: type[M]) -> M:
    if not isinstance(value, model):  # a route declared with another model: a bug, not the caller's
        raise TypeError(f"expected {model.__name__}, got {type(value).__name__}")
    return value


Handler = Callable[[ApiCall], Awaitable[BaseModel]]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One operation of the API.

    name: its operationId and metrics label (lower_snake).
    etag: a read cheap enough to answer If-None-Match with 304 (its body hashed).
    status: the status of a success (201 for a creation).
    """

    method: str
    path: str
    name: str
    summary: str
    tag: str
    scope: Scope
    route_class: ToolClass
    handler: Handler
    response: type[BaseModel]
    path_model: type[BaseModel] | None = None
    query_model: type[BaseModel] | None = None
    body_model: type[BaseModel] | None = None
    status: int = 200
    etag: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        return self.method in {"POST", "PUT", "PATCH", "DELETE"}
