"""The HTTP API's reference pages at /docs: Swagger UI over /openapi.json, its files served
from the swagger-ui-py package (a maintained wheel of Swagger UI's distribution), so a
browser fetches nothing from elsewhere (the online validator is switched off too)."""

from __future__ import annotations

from starlette.applications import Starlette
from swagger_ui import api_doc


def add_docs(app: Starlette, *, openapi_path: str, docs_path: str, title: str) -> None:
    """Serve the reference pages of the document at openapi_path under docs_path."""
    api_doc(
        app,
        config_rel_url=openapi_path,
        url_prefix=docs_path,
        title=title,
        parameters={"validatorUrl": "null"},
    )
